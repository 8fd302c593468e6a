import type { ErrorCode, Problem } from '../contracts/problem.js';

/**
 * What went wrong, as a stable code: the service's problem code, or one of the client's own when no problem body
 * came back — `rate_limited` (a 429 without one, e.g. from a gateway), `network_error` (no answer at all: status 0),
 * `http_error` (any other answer that is not problem+json).
 */
export type MemoryErrorCode = ErrorCode | 'rate_limited' | 'network_error' | 'http_error';

/** The one error the client throws: the service's problem (RFC 9457) with its `code`, `status` and `detail`. */
export class MemoryServiceError extends Error {
  override readonly name = 'MemoryServiceError';
  readonly code: MemoryErrorCode;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  readonly detail: string | undefined;
  /** The problem body as the service sent it (absent when the answer was not problem+json). */
  readonly problem: Problem | undefined;

  constructor(init: { code: MemoryErrorCode; status: number; detail?: string; problem?: Problem; cause?: unknown }) {
    super(`${init.code} (${init.status})${init.detail ? `: ${init.detail}` : ''}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.detail = init.detail;
    this.problem = init.problem;
  }
}

/** The code of an answer that carries no problem body. */
function codeForStatus(status: number): MemoryErrorCode {
  if (status === 429) return 'rate_limited';
  if (status === 502 || status === 503 || status === 504) return 'upstream_unavailable';
  return 'http_error';
}

/** Reads an error answer into a MemoryServiceError: its problem body when it has one with a code. */
export async function errorFromResponse(res: Response): Promise<MemoryServiceError> {
  const text = await res.text().catch(() => '');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (isProblem(body)) return new MemoryServiceError({ code: body.code, status: res.status, ...(body.detail !== undefined && { detail: body.detail }), problem: body });
  return new MemoryServiceError({ code: codeForStatus(res.status), status: res.status, detail: res.statusText || `HTTP ${res.status}` });
}

function isProblem(body: unknown): body is Problem {
  return typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string' && typeof (body as { status?: unknown }).status === 'number';
}
