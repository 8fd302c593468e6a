import { z } from 'zod';

export const ErrorCode = z.enum([
  'validation_failed',
  /** No credentials, or credentials that are not valid (answered with `WWW-Authenticate: Bearer`). */
  'unauthorized',
  /** Valid credentials for a principal that may not act on this user, agent or operation. */
  'forbidden',
  'not_found',
  'conflict',
  /** The session has ended: it takes no more turns (start a new session). */
  'session_ended',
  /** The user (or the session) is being forgotten: writes are refused until the purge has verified zero residuals. */
  'forget_in_progress',
  'payload_too_large',
  /** A conditional write (If-Match, If-None-Match) whose condition does not hold: nothing was changed (412). */
  'precondition_failed',
  /** A scope without its owner: a `private` slot needs an agentId, a `session` slot a sessionId (422). */
  'scope_owner_required',
  /** A method the route does not take (405). */
  'method_not_allowed',
  /** The request's Accept header takes no type the route answers with (406; MCP over streamable HTTP). */
  'not_acceptable',
  /** A write whose body is not JSON (415). */
  'unsupported_media_type',
  /** A request for a Host name this server does not answer to (421; DNS rebinding). */
  'misdirected_request',
  /** The body did not arrive in time (408). */
  'request_timeout',
  'context_budget_exceeded',
  'upstream_unavailable',
  /** The service is over its memory budget (MEMORY_BUDGET_MB) and takes no appends for now: retry after `Retry-After` seconds (503). */
  'overloaded',
  'internal',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

/** RFC 9457 problem details with a stable machine-readable `code`. */
export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  code: ErrorCode,
  detail: z.string().optional(),
  errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
}).loose();
export type Problem = z.infer<typeof Problem>;
