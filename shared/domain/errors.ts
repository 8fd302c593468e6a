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
