/** How the client retries: bounded attempts, exponential backoff with jitter, the server's `retry-after` honoured. */
export interface RetryOptions {
  /** Attempts per request, the first included (default 4). 1 turns retries off. */
  maxAttempts?: number;
  /** The first backoff (default 250 ms), doubled per attempt. */
  baseDelayMs?: number;
  /** The longest backoff (default 8 s). */
  maxDelayMs?: number;
  /** A longer `retry-after` than this is cut to it (default 60 s). */
  maxRetryAfterMs?: number;
}

export const RETRY_DEFAULTS: Required<RetryOptions> = { maxAttempts: 4, baseDelayMs: 250, maxDelayMs: 8_000, maxRetryAfterMs: 60_000 };

/** Statuses that say "not now": the request was not processed, so any request may be sent again. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** `retry-after` in milliseconds from now: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number.parseFloat(trimmed) * 1000);
  const at = Date.parse(trimmed);
  return Number.isFinite(at) ? Math.max(0, at - now) : undefined;
}

/** The wait before attempt `attempt + 1` (attempt counts from 1): the server's word if it gave one, else backoff with jitter. */
export function retryDelay(options: Required<RetryOptions>, attempt: number, retryAfterMs: number | undefined, random: () => number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, options.maxRetryAfterMs);
  const exponential = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** (attempt - 1));
  // "Equal jitter": at least half the backoff, so concurrent clients spread out without retrying at once.
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

export const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
