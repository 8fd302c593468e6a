import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultAzureCredential, getBearerTokenProvider } from '@azure/identity';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError, AzureOpenAI, OpenAI } from 'openai';
import type { Meter } from '../../application/ports.js';
import { MemoryError } from '../../domain/errors.js';
import type { OpenAIModelOptions, RetryPolicy } from './options.js';

export const AZURE_COGNITIVE_SERVICES_SCOPE = 'https://cognitiveservices.azure.com/.default';

const DEFAULT_BACKOFF = { initialDelayMs: 500, maxDelayMs: 8_000, maxRetryAfterMs: 30_000 };

/**
 * The SDK client for either mode. The SDK's own retries are off (`maxRetries: 0`): ModelEndpoint retries instead, so
 * the backoff is tunable, a long `retry-after` is capped, only 408/429/5xx and connection errors are retried (the SDK
 * would also retry 409), and every attempt is metered. The SDK's `timeout` is the per-attempt timeout. Its log level
 * is pinned to `warn` so an `OPENAI_LOG=debug` environment can never log request bodies (prompts) or headers.
 */
export function createClient(options: OpenAIModelOptions): OpenAI {
  const common = { timeout: options.timeoutMs, maxRetries: 0, logLevel: 'warn' as const };
  if (options.provider === 'openai') return new OpenAI({ ...common, baseURL: options.baseURL, apiKey: options.apiKey });
  // baseURL rather than `endpoint`, so an OPENAI_BASE_URL in the environment cannot clash with it.
  const azure = { ...common, baseURL: `${options.endpoint.replace(/\/+$/, '')}/openai`, apiVersion: options.apiVersion };
  if (options.apiKey) return new AzureOpenAI({ ...azure, apiKey: options.apiKey });
  const azureADTokenProvider = options.azureTokenProvider ?? getBearerTokenProvider(new DefaultAzureCredential(), AZURE_COGNITIVE_SERVICES_SCOPE);
  return new AzureOpenAI({ ...azure, azureADTokenProvider });
}

export function retryPolicy(options: OpenAIModelOptions): RetryPolicy {
  return { ...DEFAULT_BACKOFF, ...options.backoff, maxRetries: options.maxRetries };
}

/** A model answer that is not what was asked for (not JSON, fails its schema, unknown tool): retried once, then an error. */
export class InvalidModelOutput extends Error {
  constructor(
    readonly reason: string,
    readonly issues: { path: string; message: string }[] = [],
  ) {
    super(reason);
    this.name = 'InvalidModelOutput';
  }
}

export interface CallContext {
  /** Task name, `embed`, or a conversation's operation. */
  operation: string;
  /** Stable model id recorded with the usage (`azure-openai:<deployment>`, `openai:<model>`). */
  model: string;
}

export interface Tokens {
  inputTokens: number;
  outputTokens: number;
}

/** Sends requests to one client with retries, metering and error mapping. */
export class ModelEndpoint {
  constructor(
    readonly client: OpenAI,
    private readonly policy: RetryPolicy,
    private readonly meter: Meter,
  ) {}

  /**
   * One logical call: `send` is attempted up to 1 + maxRetries times on retryable failures; each attempt is recorded
   * through the meter (failed ones with ok=false). `interpret` turns a response into the result; if it throws, the
   * attempt is recorded as failed (with the tokens the response used) and the error propagates without an HTTP retry.
   * A failed request ends as MemoryError `upstream_unavailable` carrying the status, never the request's text.
   */
  async call<R, T>(context: CallContext, send: () => Promise<R>, usage: (response: R) => Tokens, interpret: (response: R) => T): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const started = performance.now();
      let response: R;
      try {
        response = await send();
      } catch (error) {
        this.meter.record({ ...context, inputTokens: 0, outputTokens: 0, latencyMs: performance.now() - started, ok: false });
        if (attempt > this.policy.maxRetries || !isRetryable(error)) throw upstreamError(error, context, attempt);
        await sleep(retryDelayMs(error, attempt, this.policy));
        continue;
      }
      const tokens = usage(response);
      try {
        const result = interpret(response);
        this.meter.record({ ...context, ...tokens, latencyMs: performance.now() - started, ok: true });
        return result;
      } catch (error) {
        this.meter.record({ ...context, ...tokens, latencyMs: performance.now() - started, ok: false });
        throw error;
      }
    }
  }
}

/** 408, 429, 5xx, timeouts and connection failures are transient; any other 4xx is not. */
export function isRetryable(error: unknown): boolean {
  if (error instanceof APIConnectionError) return true; // includes APIConnectionTimeoutError
  if (error instanceof APIUserAbortError || !(error instanceof APIError) || error.status === undefined) return false;
  return error.status === 408 || error.status === 429 || error.status >= 500;
}

/** The server's `retry-after-ms` / `retry-after` (seconds or HTTP date) capped, else exponential backoff with jitter. */
export function retryDelayMs(error: unknown, attempt: number, policy: RetryPolicy): number {
  const headers = error instanceof APIError ? (error.headers as Headers | undefined) : undefined;
  const asked = retryAfterMs(headers);
  if (asked !== undefined) return Math.min(asked, policy.maxRetryAfterMs);
  const base = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (attempt - 1));
  return base / 2 + (Math.random() * base) / 2;
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number.parseFloat(headers?.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function upstreamError(error: unknown, context: CallContext, attempts: number): MemoryError {
  const base = { operation: context.operation, model: context.model, attempts };
  if (error instanceof APIConnectionTimeoutError) {
    return new MemoryError('upstream_unavailable', `The model endpoint timed out (${context.operation}, ${attempts} attempt(s))`, { ...base, reason: 'timeout' });
  }
  if (error instanceof APIConnectionError) {
    return new MemoryError('upstream_unavailable', `The model endpoint could not be reached (${context.operation}, ${attempts} attempt(s))`, { ...base, reason: 'connection' });
  }
  if (error instanceof APIError && error.status !== undefined) {
    // Only the status and the error's code/type: an error message may quote the request.
    return new MemoryError('upstream_unavailable', `The model endpoint answered HTTP ${error.status} (${context.operation}, ${attempts} attempt(s))`, {
      ...base,
      status: error.status,
      ...(error.code && { errorCode: error.code }),
      ...(error.type && { errorType: error.type }),
    });
  }
  // Client-side failures, e.g. no Entra ID credential. Details reach API clients (problem+json): the name only.
  const name = error instanceof Error ? error.name : typeof error;
  const mapped = new MemoryError('upstream_unavailable', `The model call failed before reaching the endpoint: ${name} (${context.operation})`, {
    ...base,
    reason: 'client',
    error: name,
  });
  mapped.cause = error; // for the operator's logs
  return mapped;
}

/** The error for an answer that failed validation twice: what was wrong (paths, schema messages), never the text. */
export function invalidOutputError(error: InvalidModelOutput, context: CallContext, attempts: number): MemoryError {
  return new MemoryError(
    'upstream_unavailable',
    `The model's output for ${context.operation} failed validation ${attempts} times: ${error.reason}`,
    { operation: context.operation, model: context.model, attempts, reason: error.reason, issues: error.issues.slice(0, 10) },
  );
}

/** Runs `once` and retries it a single time when the model's answer is invalid. */
export async function withOneRetryOnInvalidOutput<T>(context: CallContext, once: () => Promise<T>): Promise<T> {
  const attempts = 2;
  for (let attempt = 1; ; attempt++) {
    try {
      return await once();
    } catch (error) {
      if (!(error instanceof InvalidModelOutput)) throw error;
      if (attempt >= attempts) throw invalidOutputError(error, context, attempts);
    }
  }
}
