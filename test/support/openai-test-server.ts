import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A scripted OpenAI-compatible HTTP server for adapter tests, on 127.0.0.1 and a free port. It serves chat
 * completions and embeddings on the OpenAI paths (`/v1/...`) and the Azure OpenAI deployment paths
 * (`/openai/deployments/{deployment}/...?api-version=...`). Each request takes the next scripted handler from a FIFO
 * queue (or the default for its kind); every request is recorded for inspection.
 */

export type Kind = 'chat' | 'embeddings';

export interface RecordedRequest {
  kind: Kind;
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
  /** Azure paths only. */
  deployment?: string;
  /** Milliseconds since the server started. */
  at: number;
}

export interface ScriptedResponse {
  status?: number;
  headers?: Record<string, string>;
  /** JSON-serialised unless a string. */
  body?: unknown;
  /** Wait this long before answering (to trigger client timeouts). */
  delayMs?: number;
}

export type Handler = ScriptedResponse | ((request: RecordedRequest) => ScriptedResponse | Promise<ScriptedResponse>);

export interface OpenAITestServer {
  /** `http://127.0.0.1:<port>` — the Azure `endpoint`. */
  readonly url: string;
  /** `<url>/v1` — the OpenAI `baseURL`. */
  readonly baseURL: string;
  readonly requests: RecordedRequest[];
  /** Queues handlers, answered in order by the next requests of any kind. */
  script(...handlers: Handler[]): void;
  /** The handler for a kind when the queue is empty (none: 418 "unscripted", which clients do not retry). */
  setDefault(kind: Kind, handler: Handler | undefined): void;
  /** Clears the queue, the defaults and the recorded requests. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * `keepAliveMs`: how long an idle connection is kept (Node's `keepAliveTimeout`), 1 s by default so that tests end
 * quickly. The server announces it (`Keep-Alive: timeout=1`) and undici, which subtracts a 1 s margin from the hint,
 * then closes every connection after its response: each call opens a new one. A real API keeps them for minutes, so a
 * benchmark that stands in for one passes a longer time.
 */
export async function startOpenAITestServer(options: { keepAliveMs?: number } = {}): Promise<OpenAITestServer> {
  const started = Date.now();
  const requests: RecordedRequest[] = [];
  let queue: Handler[] = [];
  let defaults: Partial<Record<Kind, Handler>> = {};

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent && !res.destroyed) send(res, { status: 599, body: { error: { message: String(error) } } });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = routeOf(url.pathname);
    const text = await readBody(req);
    if (!route || req.method !== 'POST') return send(res, { status: 404, body: { error: { message: `no route ${req.method} ${url.pathname}` } } });
    const recorded: RecordedRequest = {
      kind: route.kind,
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      ...(route.deployment !== undefined && { deployment: route.deployment }),
      at: Date.now() - started,
    };
    requests.push(recorded);
    const handler = queue.shift() ?? defaults[route.kind];
    if (!handler) return send(res, { status: 418, body: { error: { message: 'unscripted request', type: 'test_server' } } });
    const response = typeof handler === 'function' ? await handler(recorded) : handler;
    if (response.delayMs) {
      const cancelled = await delay(response.delayMs, res);
      if (cancelled) return;
    }
    send(res, response);
  }

  server.keepAliveTimeout = options.keepAliveMs ?? 1_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  return {
    url,
    baseURL: `${url}/v1`,
    requests,
    script: (...handlers) => void queue.push(...handlers),
    setDefault: (kind, handler) => {
      if (handler) defaults[kind] = handler;
      else delete defaults[kind];
    },
    reset: () => {
      queue = [];
      defaults = {};
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

function routeOf(path: string): { kind: Kind; deployment?: string } | undefined {
  if (path === '/v1/chat/completions') return { kind: 'chat' };
  if (path === '/v1/embeddings') return { kind: 'embeddings' };
  const azure = /^\/openai\/deployments\/([^/]+)\/(chat\/completions|embeddings)$/.exec(path);
  if (azure) return { kind: azure[2] === 'embeddings' ? 'embeddings' : 'chat', deployment: decodeURIComponent(azure[1]!) };
  return undefined;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Resolves true if the client went away first. */
function delay(ms: number, res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(res.destroyed), ms);
    res.once('close', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

function send(res: ServerResponse, response: ScriptedResponse): void {
  if (res.destroyed) return;
  const body = response.body === undefined ? '' : typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
  res.writeHead(response.status ?? 200, { 'content-type': 'application/json', ...response.headers });
  res.end(body);
}

// ---- Response builders ----

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** A chat completion answering `content` (a string, or any value sent as its JSON text). */
export function chatCompletion(answer: { content?: unknown; toolCalls?: { id?: string; name: string; arguments: unknown }[]; usage?: Usage; finishReason?: string }): ScriptedResponse {
  const content = answer.content === undefined ? null : typeof answer.content === 'string' ? answer.content : JSON.stringify(answer.content);
  const usage = answer.usage ?? { prompt_tokens: 100, completion_tokens: 20 };
  const toolCalls = answer.toolCalls?.map((c, i) => ({
    id: c.id ?? `call_${i + 1}`,
    type: 'function',
    function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
  }));
  return {
    body: {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: 'test-model',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null, ...(toolCalls && { tool_calls: toolCalls }) },
          finish_reason: answer.finishReason ?? (toolCalls ? 'tool_calls' : 'stop'),
          logprobs: null,
        },
      ],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    },
  };
}

export function errorResponse(status: number, headers: Record<string, string> = {}): ScriptedResponse {
  return { status, headers, body: { error: { message: `scripted ${status}`, type: status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } } };
}

/** The little-endian float32 bytes of a vector in base64, as the embeddings endpoint sends them. */
export function toBase64Float32(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}

/**
 * An embeddings handler: one vector per input from `vectorFor` (default: `dimensions` values derived from the text),
 * encoded as the request's `encoding_format` asks (`base64`, else float arrays). Usage counts one token per 4 chars.
 * Without `dimensions`, vectors have the size the request asks for (8 if it names none).
 */
export function embeddings(options: { dimensions?: number; vectorFor?: (text: string, index: number) => number[]; reversed?: boolean } = {}): Handler {
  return (request) => {
    const raw = request.body.input;
    const inputs = Array.isArray(raw) ? (raw as string[]) : [String(raw)];
    const dims = options.dimensions ?? (typeof request.body.dimensions === 'number' ? request.body.dimensions : 8);
    const vectorFor = options.vectorFor ?? ((text: string) => fakeVector(text, dims));
    const base64 = request.body.encoding_format === 'base64';
    const data = inputs.map((text, index) => {
      const vector = vectorFor(text, index);
      return { object: 'embedding', index, embedding: base64 ? toBase64Float32(vector) : vector };
    });
    return {
      body: {
        object: 'list',
        model: String(request.body.model),
        // `reversed`: out of order, as the API allows — clients must sort by index.
        data: options.reversed ? data.reverse() : data,
        usage: { prompt_tokens: inputs.reduce((n, t) => n + Math.ceil(t.length / 4), 0), total_tokens: 0 },
      },
    };
  };
}

/** A deterministic vector whose first component encodes the text's length (exact in float32 for short texts). */
export function fakeVector(text: string, dimensions: number): number[] {
  return Array.from({ length: dimensions }, (_, i) => (i === 0 ? text.length : ((text.charCodeAt(i % Math.max(text.length, 1)) || 0) % 7) / 8));
}
