import { randomUUID } from 'node:crypto';
import azureFunctions, { type HttpResponseInit, type InvocationContext } from '@azure/functions';
import type { Embedder } from '../../shared/application/ports.js';
import { createRuntime, useRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';

const { HttpRequest, InvocationContext: Context } = azureFunctions;

/** A runtime on an in-memory PGlite, installed as the process runtime the function handlers use. */
export async function memoryRuntime(env: Record<string, string> = {}): Promise<Runtime> {
  const runtime = await createRuntime(loadSettings({ MEMORY_DATA_DIR: 'memory://', ...env }));
  useRuntime(runtime);
  return runtime;
}

export interface Logged {
  level: string;
  message: string;
}

/** The library's own InvocationContext, collecting log lines. */
export function context(functionName: string, triggerMetadata: Record<string, unknown> = {}): InvocationContext & { logs: Logged[] } {
  const logs: Logged[] = [];
  const ctx = new Context({ functionName, invocationId: randomUUID(), triggerMetadata, logHandler: (level, ...args) => logs.push({ level, message: args.map(String).join(' ') }) });
  return Object.assign(ctx, { logs });
}

export function request(method: string, path: string, options: { params?: Record<string, string>; body?: string | object; headers?: Record<string, string> } = {}) {
  const url = new URL(path, 'http://localhost/api/');
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
  return new HttpRequest({
    method,
    url: url.href,
    params: options.params ?? {},
    query: Object.fromEntries(url.searchParams),
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(body !== undefined && { body: { string: body } }),
  });
}

export const json = (response: HttpResponseInit) => response.jsonBody as Record<string, unknown> & { code?: string };

/** Runs `fn` with the runtime's clock at `offsetSeconds` from now (the handlers read the runtime's clock). */
export async function atOffset<T>(runtime: Runtime, offsetSeconds: number, fn: () => Promise<T>): Promise<T> {
  const real = runtime.clock;
  runtime.clock = { now: () => new Date(Date.now() + offsetSeconds * 1000) };
  try {
    return await fn();
  } finally {
    runtime.clock = real;
  }
}

/** `like` (its model, size and everything else) with `embed` replaced: a test's hold, count or failure of the embedder. */
export const embedderWith = (like: Embedder, embed: Embedder['embed']): Embedder => Object.assign(Object.create(like) as Embedder, { embed });
