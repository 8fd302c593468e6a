import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import azureFunctions, { type HttpHandler, type HttpResponseInit } from '@azure/functions';
import { MemoryError } from '../../domain/errors.js';
import type { FunctionDescriptor } from '../functions.js';
import { bodyLimitOf, problem } from '../http.js';
import { declaredLength, isJsonContentType, tooLarge } from '../http-limits.js';
import { invocationContext } from './invocation.js';

const { HttpRequest } = azureFunctions;

interface Route {
  name: string;
  methods: readonly string[];
  pattern: RegExp;
  handler: HttpHandler;
  /** Largest body the route takes (0: none); undefined for a handler not built by httpHandler. */
  bodyLimit: number | undefined;
}

interface ServerOptions {
  /** Largest body of a route whose handler does not say (and of the raw routes). */
  maxBodyBytes: number;
  /** How long a request body may pause before the request is answered 408 and closed (a Content-Length that never arrives). */
  bodyTimeoutMs?: number;
  /** Host names (without port) besides localhost, 127.0.0.1 and [::1] that the server answers to: its bind host. */
  hostNames?: readonly string[];
  onHandled?: (name: string) => void;
  /** Paths served by a function's route under another path: `{'/mcp': '/api/mcp'}` (MCP clients' usual endpoint). */
  aliases?: Record<string, string>;
}

/** `v1/users/{userId}/sessions` → /^\/api\/v1\/users\/(?<userId>[^/]+)\/sessions$/ */
function compile(route: string): RegExp {
  const source = route
    .split('/')
    .map((part) => (/^\{\w+\}$/.test(part) ? `(?<${part.slice(1, -1)}>[^/]+)` : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^/api/${source}$`);
}

/**
 * Serves the app's HTTP functions like the Functions host: same routes under /api, same handlers, called with the
 * library's own HttpRequest and InvocationContext. `onHandled` lets the host react (wake the change-feed pump).
 */
export function createLocalServer(functions: readonly FunctionDescriptor[], options: ServerOptions): Server {
  const routes: Route[] = functions.flatMap((f) =>
    f.trigger.kind === 'http'
      ? [{ name: f.name, methods: f.trigger.methods, pattern: compile(f.trigger.route), handler: f.handler as HttpHandler, bodyLimit: bodyLimitOf(f.handler) }]
      : [],
  );
  const limits = { bodyTimeoutMs: options.bodyTimeoutMs ?? DEFAULT_BODY_TIMEOUT_MS, maxBodyBytes: options.maxBodyBytes };
  const hostNames = new Set(['localhost', '127.0.0.1', '[::1]', ...(options.hostNames ?? []).map((h) => (h.includes(':') && !h.startsWith('[') ? `[${h}]` : h).toLowerCase())]);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    checkHost(req.headers.host, hostNames, (server.address() as AddressInfo | null)?.port);
    // The path and query only: the Host header has been checked and never builds the URL.
    if (!req.url?.startsWith('/')) throw new MemoryError('validation_failed', 'The request target must be a path');
    const url = new URL(req.url, 'http://localhost');
    const alias = options.aliases?.[url.pathname];
    if (alias) url.pathname = alias;
    await serve(routes, url, req, res, { ...limits, ...(options.onHandled && { onHandled: options.onHandled }) });
  };
  // Keep idle connections longer than clients do (undici: 4 s), so a client never reuses a socket the server is closing.
  const server = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000, requestTimeout: 300_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return res.destroy();
      if (error instanceof MemoryError) return refuse(req, res, error);
      console.error(`local host: request failed: ${error instanceof Error ? error.name : 'unknown'}`);
      send(res, problem(new MemoryError('internal', 'Unexpected failure')));
    });
  });
  // What Node's parser refuses (an unknown method, malformed headers, a header timeout) is answered as problem+json too.
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    const body = JSON.stringify({ type: 'https://agent-memory.dev/problems/validation_failed', title: 'The request is not valid', status, code: 'validation_failed', detail: 'The request could not be parsed' });
    socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
  return server;
}

/** A body that pauses longer than this is abandoned (408): a declared length that never arrives must not hold a request open. */
export const DEFAULT_BODY_TIMEOUT_MS = 5_000;

/**
 * DNS rebinding: a page that resolves its own name to 127.0.0.1 sends its own name as Host. Only the server's own names
 * (with its port) are answered: a malformed Host is 400, another name or port 421.
 */
function checkHost(host: string | undefined, names: ReadonlySet<string>, port: number | undefined): void {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(host ?? '');
  if (!match) throw new MemoryError('validation_failed', 'The Host header is missing or malformed');
  const samePort = port === undefined || Number(match[2] ?? 80) === port;
  if (!names.has(match[1]!.toLowerCase()) || !samePort) throw new MemoryError('misdirected_request', 'This server answers only to its own host names');
}

/** Answers a request refused before its handler ran, and closes the connection: its body may be unread. */
function refuse(req: IncomingMessage, res: ServerResponse, error: MemoryError) {
  const response = problem(error, req.url?.startsWith('/') ? req.url.split('?')[0] : undefined);
  send(res, { ...response, headers: { ...(response.headers as Record<string, string>), connection: 'close' } });
  res.once('finish', () => req.socket.destroySoon());
}

async function serve(routes: readonly Route[], url: URL, req: IncomingMessage, res: ServerResponse, options: { maxBodyBytes: number; bodyTimeoutMs: number; onHandled?: (name: string) => void }) {
  const method = req.method ?? 'GET';
  const candidates = routes.flatMap((r) => {
    const match = r.pattern.exec(url.pathname);
    return match ? [{ route: r, params: match.groups ?? {} }] : [];
  });
  const found = candidates.find((c) => c.route.methods.includes(method));
  if (!found) {
    const error = candidates.length > 0 ? new MemoryError('method_not_allowed', `${method} is not allowed on ${url.pathname}`) : new MemoryError('not_found', `No route for ${method} ${url.pathname}`);
    const response = problem(error, url.pathname);
    const allow: Record<string, string> = candidates.length > 0 ? { allow: [...new Set(candidates.flatMap((c) => c.route.methods))].join(', ') } : {};
    return send(res, { ...response, headers: { ...(response.headers as Record<string, string>), ...allow, connection: 'close' } });
  }

  const params = Object.fromEntries(Object.entries(found.params).map(([k, v]) => [k, safeDecode(v)]));
  const headers = Object.fromEntries(Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])));
  const limit = found.route.bodyLimit ?? options.maxBodyBytes;
  const hasBody = declaredLength(req.headers['content-length']) !== 0 || req.headers['transfer-encoding'] !== undefined;
  // Refused before a byte of the body is read: a body where none is taken, a write that is not JSON, a declared size over the limit.
  if (hasBody && limit === 0) throw new MemoryError('validation_failed', 'This route takes no request body');
  if (hasBody && limit > 0 && !isJsonContentType(req.headers['content-type'])) throw new MemoryError('unsupported_media_type', 'The body must be JSON (Content-Type: application/json)');
  const bytes = hasBody ? await readBody(req, limit, options.bodyTimeoutMs) : undefined;
  const request = new HttpRequest({ method, url: url.href, headers, params, query: Object.fromEntries(url.searchParams), ...(bytes && { body: { bytes } }) });
  const response = await found.route.handler(request, invocationContext(found.route.name));
  send(res, response);
  options.onHandled?.(found.route.name);
}

function send(res: ServerResponse, response: HttpResponseInit, status = response.status ?? 200) {
  const headers = new Headers(response.headers as ConstructorParameters<typeof Headers>[0]);
  let body: string | Uint8Array | undefined;
  if (response.jsonBody !== undefined) {
    body = JSON.stringify(response.jsonBody);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
  } else if (typeof response.body === 'string' || response.body instanceof Uint8Array) {
    body = response.body;
  }
  // A known length instead of chunked encoding: head and body then leave in one write, not a writev of four pieces.
  if (status !== 204 && status !== 304) headers.set('content-length', String(body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
  res.writeHead(status, Object.fromEntries(headers));
  res.end(body);
}

/**
 * Reads a body of at most `limit` bytes as it streams: a larger declared Content-Length is refused before reading, a
 * stream that passes the limit is refused at that point (never buffered whole), and a pause longer than `timeoutMs`
 * ends the request (408). Events rather than `for await`: the async iterator costs a promise per chunk on every request.
 */
function readBody(req: IncomingMessage, limit: number, timeoutMs: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const declared = declaredLength(req.headers['content-length']);
    if (Number.isNaN(declared)) return reject(new MemoryError('validation_failed', 'Content-Length is malformed'));
    if (declared > limit) return reject(tooLarge(limit));
    const chunks: Buffer[] = [];
    let size = 0;
    let timer: NodeJS.Timeout | undefined;
    const fail = (error: MemoryError) => {
      clearTimeout(timer);
      req.removeAllListeners('data').pause();
      reject(error);
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(new MemoryError('request_timeout', `The body paused for more than ${timeoutMs} ms`)), timeoutMs);
    };
    arm();
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return fail(tooLarge(limit));
      chunks.push(chunk);
      arm();
    });
    req.once('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    req.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

