import type { HttpRequest, HttpResponseInit, InvocationContext } from '@azure/functions';
import type { z, ZodType } from 'zod';
import type { ErrorCode, Problem } from '../contracts/problem.js';
import { MemoryError } from '../domain/errors.js';
import { authorizeAgents, type Principal } from '../application/auth.js';
import { authorizeRequest, bodyAgents, type Access } from './auth.js';
import { getRuntime } from './composition.js';
import { settings } from './config.js';
import { announcesBody, bodyNotTaken, parseJsonText, readLimitedText, requireJsonContentType } from './http-limits.js';

/** The HTTP status of each problem code (the OpenAPI document groups a route's problem codes by it). */
export const PROBLEM_STATUS: Record<ErrorCode, number> = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  session_ended: 409,
  forget_in_progress: 409,
  payload_too_large: 413,
  precondition_failed: 412,
  scope_owner_required: 422,
  method_not_allowed: 405,
  not_acceptable: 406,
  unsupported_media_type: 415,
  misdirected_request: 421,
  request_timeout: 408,
  context_budget_exceeded: 422,
  upstream_unavailable: 503,
  overloaded: 503,
  internal: 500,
};

const TITLE: Record<ErrorCode, string> = {
  validation_failed: 'The request is not valid',
  unauthorized: 'Authentication is required',
  forbidden: 'Not allowed for this principal',
  not_found: 'Not found',
  conflict: 'Conflict',
  session_ended: 'The session has ended',
  forget_in_progress: 'The memory is being forgotten',
  payload_too_large: 'The request body is too large',
  precondition_failed: 'The precondition does not hold',
  scope_owner_required: 'The scope needs its owner',
  method_not_allowed: 'The method is not allowed on this route',
  not_acceptable: 'The response cannot take a type the request accepts',
  unsupported_media_type: 'The request body must be JSON',
  misdirected_request: 'This server does not answer to that host name',
  request_timeout: 'The request body did not arrive in time',
  context_budget_exceeded: 'The context does not fit the token budget',
  upstream_unavailable: 'A backing service is unavailable',
  overloaded: 'The service is overloaded; retry later',
  internal: 'Internal error',
};

export function problem(error: MemoryError, instance?: string): HttpResponseInit {
  const status = PROBLEM_STATUS[error.code];
  const body: Problem = {
    type: `https://agent-memory.dev/problems/${error.code}`,
    title: TITLE[error.code],
    status,
    code: error.code,
    detail: error.message,
    ...(instance && { instance }),
    ...error.details,
  };
  const headers: Record<string, string> = { 'content-type': 'application/problem+json' };
  if (error.code === 'unauthorized') headers['www-authenticate'] = 'Bearer realm="agent-memory"';
  if (error.code === 'overloaded') headers['retry-after'] = String(error.details.retryAfter ?? 1);
  return { status, jsonBody: body, headers };
}

const invalid = (where: string, issues: readonly z.core.$ZodIssue[]) =>
  new MemoryError('validation_failed', `Invalid ${where}`, {
    errors: issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), message: i.message })),
  });

function parse<T>(schema: ZodType<T> | undefined, value: unknown, where: string): T {
  if (!schema) return undefined as T;
  const result = schema.safeParse(value);
  if (!result.success) throw invalid(where, result.error.issues);
  return result.data;
}

/** Bounded before and while it is read (http-limits.ts): JSON content type, declared and streamed size, nesting depth. */
export async function readJson(req: HttpRequest, maxBytes: number): Promise<unknown> {
  requireJsonContentType(req.headers.get('content-type'));
  return parseJsonText(await readLimitedText(req, maxBytes));
}

/** The largest body a route takes (0 when it takes none: the local host refuses bodies by it); undefined for a bare handler. */
export const bodyLimitOf = (handler: unknown): number | undefined => (handler as { bodyLimit?: () => number }).bodyLimit?.();

/** A use case's result with its own status or response headers (an ETag, say); any other result is the JSON body. */
export class Reply<T> {
  constructor(
    readonly body: T,
    readonly init: { status?: number; headers?: Record<string, string> } = {},
  ) {}
}

/**
 * What the OpenAPI document says of a route (shared/platform/openapi.ts), attached to its handler: httpHandler derives it
 * from the zod spec the route already validates with; a route built with httpEndpoint declares it.
 */
export interface RouteDoc {
  summary?: string;
  access: Access;
  params?: ZodType;
  query?: ZodType;
  headers?: ZodType;
  body?: { contentType: string; schema: ZodType };
  /** Success responses by status (no content type: no body). */
  responses: Record<number, { description: string; contentType?: string; schema?: ZodType }>;
  /** Problem codes the route answers beyond the generic ones every route has (shared/platform/openapi.ts). */
  problems: readonly ErrorCode[];
  /** A function of several methods: what differs per method (MCP's GET and DELETE take no body). */
  methods?: Partial<Record<string, RouteDoc>>;
}

export const routeDocOf = (handler: unknown): RouteDoc | undefined => (handler as { routeDoc?: RouteDoc }).routeDoc;

interface Spec<P, Q, B, H = undefined> {
  params?: ZodType<P>;
  query?: ZodType<Q>;
  body?: ZodType<B>;
  /** Request headers the route reads (If-Match, ...), by their lower-case names. */
  headers?: ZodType<H>;
  /** What the use case returns (the contract the OpenAPI document shows; not checked at run time). */
  response?: ZodType;
  /** Success status; 200 unless said. */
  status?: number;
  /** Largest body this route takes (MAX_REQUEST_BYTES unless said), read when the request arrives. */
  maxBodyBytes?: () => number;
  /** Who may call (shared/platform/auth.ts): `user` unless said. */
  access?: Access;
  /** One line for the API reference. */
  summary?: string;
  /** Problem codes the use case may answer beyond the generic ones (shared/platform/openapi.ts), e.g. `session_ended`. */
  problems?: readonly ErrorCode[];
}

/** Maps a failure to problem+json; an unexpected one is logged by its class and stack frames only (never its message). */
function failure(error: unknown, req: HttpRequest, ctx: InvocationContext): HttpResponseInit {
  if (error instanceof MemoryError) {
    if (error.code === 'upstream_unavailable') ctx.warn(`${ctx.functionName} failed: ${error.code}`);
    return problem(error, new URL(req.url).pathname);
  }
  // The message may quote stored values, so only the error's name and stack frames are logged.
  const frames = error instanceof Error ? (error.stack ?? '').split('\n').filter((l) => l.trimStart().startsWith('at ')).slice(0, 8).join('\n') : '';
  ctx.error(`${ctx.functionName} failed unexpectedly (invocation ${ctx.invocationId}): ${error instanceof Error ? error.name : typeof error}\n${frames}`);
  return problem(new MemoryError('internal', `Unexpected failure; invocation ${ctx.invocationId}`), new URL(req.url).pathname);
}

/**
 * Wraps a use case as an HTTP handler: validates route params, query and JSON body with zod, runs the use case,
 * returns JSON, and maps every failure to problem+json with a stable code. Logs ids and codes, never bodies.
 */
export function httpHandler<P, Q, B, R, H = undefined>(spec: Spec<P, Q, B, H>, run: (input: { params: P; query: Q; body: B; headers: H; principal: Principal }, ctx: InvocationContext) => Promise<R>) {
  const bodyLimit = () => (spec.body ? (spec.maxBodyBytes?.() ?? settings().MAX_REQUEST_BYTES) : 0);
  const status = spec.status ?? 200;
  const handler = async (req: HttpRequest, ctx: InvocationContext): Promise<HttpResponseInit> => {
    try {
      // Authentication and authorization first: without credentials every route is 401, whatever else is wrong.
      const principal = await authorizeRequest(req, spec.access ?? 'user', async () => (await getRuntime()).auth);
      if (!spec.body && announcesBody(req.headers.get('content-length'), req.headers.get('transfer-encoding'))) throw bodyNotTaken();
      const params = parse(spec.params, req.params, 'path');
      const query = parse(spec.query, Object.fromEntries(req.query), 'query');
      const headers = parse(spec.headers, Object.fromEntries(req.headers), 'header');
      const body = spec.body ? parse(spec.body, await readJson(req, bodyLimit()), 'body') : (undefined as B);
      authorizeAgents(principal, bodyAgents(body));
      const result = await run({ params, query, body, headers, principal }, ctx);
      if (result instanceof Reply) return { status: result.init.status ?? status, jsonBody: result.body, ...(result.init.headers && { headers: result.init.headers }) };
      return { status, jsonBody: result };
    } catch (error) {
      return failure(error, req, ctx);
    }
  };
  const routeDoc: RouteDoc = {
    access: spec.access ?? 'user',
    ...(spec.summary && { summary: spec.summary }),
    ...(spec.params && { params: spec.params }),
    ...(spec.query && { query: spec.query }),
    ...(spec.headers && { headers: spec.headers }),
    ...(spec.body && { body: { contentType: 'application/json', schema: spec.body } }),
    responses: { [status]: { description: status === 202 ? 'Accepted' : status === 201 ? 'Created' : 'OK', contentType: 'application/json', ...(spec.response && { schema: spec.response }) } },
    problems: spec.problems ?? [],
  };
  return Object.assign(handler, { bodyLimit, routeDoc });
}

/**
 * An HTTP route whose answer is not one JSON value (the API reference, MCP): the same authentication first and the
 * same problem+json on failure as httpHandler, with its OpenAPI description declared. `maxBodyBytes` (none by default)
 * bounds a body the handler reads itself.
 */
export function httpEndpoint(
  doc: Omit<RouteDoc, 'problems'> & { problems?: readonly ErrorCode[]; maxBodyBytes?: () => number },
  run: (req: HttpRequest, ctx: InvocationContext, principal: Principal) => Promise<HttpResponseInit>,
) {
  const { maxBodyBytes, ...rest } = doc;
  const bodyLimit = () => maxBodyBytes?.() ?? 0;
  const handler = async (req: HttpRequest, ctx: InvocationContext): Promise<HttpResponseInit> => {
    try {
      const principal = await authorizeRequest(req, doc.access, async () => (await getRuntime()).auth);
      if (!maxBodyBytes && announcesBody(req.headers.get('content-length'), req.headers.get('transfer-encoding'))) throw bodyNotTaken();
      return await run(req, ctx, principal);
    } catch (error) {
      return failure(error, req, ctx);
    }
  };
  return Object.assign(handler, { bodyLimit, routeDoc: { ...rest, problems: rest.problems ?? [] } satisfies RouteDoc });
}
