import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import azureFunctions, { type HttpHandler, type HttpResponseInit } from '@azure/functions';
import { MemoryError } from '../../domain/errors.js';
import type { FunctionDescriptor } from '../functions.js';
import { problem } from '../http.js';
import { invocationContext } from './invocation.js';

const { HttpRequest } = azureFunctions;

interface Route {
  name: string;
  methods: readonly string[];
  pattern: RegExp;
  handler: HttpHandler;
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
export function createLocalServer(
  functions: readonly FunctionDescriptor[],
  options: {
    maxBodyBytes: number;
    onHandled?: (name: string) => void;
    /** Paths served by a plain Node handler instead of a function (the MCP endpoint). */
    rawRoutes?: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>>;
  },
): Server {
  const routes: Route[] = functions.flatMap((f) =>
    f.trigger.kind === 'http' ? [{ name: f.name, methods: f.trigger.methods, pattern: compile(f.trigger.route), handler: f.handler as HttpHandler }] : [],
  );

  // Keep idle connections longer than clients do (undici: 4 s), so a client never reuses a socket the server is closing.
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`); // may throw: inside the promise
    const raw = options.rawRoutes?.[url.pathname];
    await (raw ? raw(req, res) : serve(routes, url, req, res, options));
  };
  return createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000 }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      console.error(`local host: request failed: ${error instanceof Error ? error.name : 'unknown'}`);
      if (!res.headersSent) send(res, problem(new MemoryError('internal', 'Unexpected failure')));
    });
  });
}

async function serve(routes: readonly Route[], url: URL, req: IncomingMessage, res: ServerResponse, options: { maxBodyBytes: number; onHandled?: (name: string) => void }) {
  const method = req.method ?? 'GET';
  const candidates = routes.flatMap((r) => {
    const match = r.pattern.exec(url.pathname);
    return match ? [{ route: r, params: match.groups ?? {} }] : [];
  });
  const found = candidates.find((c) => c.route.methods.includes(method));
  if (!found) {
    await drain(req);
    const error = candidates.length > 0 ? new MemoryError('validation_failed', `${method} is not allowed on ${url.pathname}`) : new MemoryError('not_found', `No route for ${method} ${url.pathname}`);
    return send(res, problem(error, url.pathname), candidates.length > 0 ? 405 : 404);
  }

  const params = Object.fromEntries(Object.entries(found.params).map(([k, v]) => [k, safeDecode(v)]));
  const headers = Object.fromEntries(Object.entries(req.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, Array.isArray(v) ? v.join(', ') : v]])));
  // Read at most one byte past the limit: the handler sees the oversize body and answers 413 itself.
  const bytes = method === 'GET' || method === 'HEAD' ? undefined : await readBody(req, options.maxBodyBytes + 1);
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

/** Events rather than `for await`: the async iterator costs a promise per chunk on every request. */
function readBody(req: IncomingMessage, limit: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size >= limit) return; // keep draining so the client can read our answer
      chunks.push(chunk);
      size += chunk.length;
    });
    req.once('end', () => resolve(Buffer.concat(chunks).subarray(0, limit)));
    req.once('error', reject);
  });
}

const drain = (req: IncomingMessage) => new Promise<void>((resolve) => req.resume().once('end', resolve).once('error', () => resolve()));

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

