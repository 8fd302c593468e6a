import type { ErrorCode } from '../contracts/problem.js';

/** An expected failure with a stable code; the HTTP wrapper maps it to problem+json, other triggers rethrow it. */
export class MemoryError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'MemoryError';
  }
}

export const notFound = (what: string) => new MemoryError('not_found', `${what} was not found`);
export const conflict = (what: string) => new MemoryError('conflict', what);

/** A turn for a session whose end was requested: its summary and insights are decided, so it takes no more turns. */
export const sessionEnded = (sessionId: string) => new MemoryError('session_ended', `Session ${sessionId} has ended; it takes no more turns (append to a new session)`);

/** An append refused while the service is over its memory budget: nothing was written; `retryAfter` is in seconds. */
export const overloaded = (retryAfterSeconds: number) =>
  new MemoryError('overloaded', `The service is over its memory budget and takes no appends for now; retry after ${retryAfterSeconds} s`, { retryAfter: retryAfterSeconds });

/** A write for a user (or session) whose forget is in progress: refused, so nothing of it outlives the purge. */
export const forgetInProgress = (userId: string, sessionId?: string) =>
  new MemoryError('forget_in_progress', sessionId ? `Session ${sessionId} is being forgotten; retry once the forget operation has completed` : `User ${userId} is being forgotten; retry once the forget operation has completed`);
