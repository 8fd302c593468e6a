import { z, type ZodType } from 'zod';
import { Problem, type ErrorCode } from '../contracts/problem.js';
import type { FunctionDescriptor } from './functions.js';
import { PROBLEM_STATUS, routeDocOf, type RouteDoc } from './http.js';

/**
 * The OpenAPI 3.1 document of the HTTP API, generated from the app's function descriptors: each HTTP function's trigger
 * (methods, route) and the RouteDoc its handler carries (httpHandler derives it from the zod spec the route validates
 * with; httpEndpoint routes declare it). Schemas are zod v4's own JSON Schema (draft 2020-12, the dialect of OpenAPI
 * 3.1): requests as the client sends them (`io: 'input'`: defaults optional, coerced and transformed values as their
 * input), responses as the service answers (`io: 'output'`). Nothing is written by hand, so a new route joins by itself.
 */

type JsonSchema = Record<string, unknown>;

const toJsonSchema = (schema: ZodType, io: 'input' | 'output'): JsonSchema => {
  // Refinements (unique turnIds, ttlClass xor ttlSeconds) have no JSON Schema: the document shows the shape they refine.
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema; // the document's jsonSchemaDialect says it once
  if (!json.$defs) return json;
  // The one recursive contract is a JSON value (z.json(): slot values), whose local $defs would not resolve inside
  // the document: any JSON value is what `{}` says.
  delete json.$defs;
  return JSON.parse(JSON.stringify(json), (_key, value: unknown) =>
    typeof value === 'object' && value !== null && typeof (value as { $ref?: unknown }).$ref === 'string' && (value as { $ref: string }).$ref.startsWith('#/$defs/') ? {} : value,
  ) as JsonSchema;
};

/**
 * The problem codes every route can answer, besides those its RouteDoc names: a request that does not validate (or
 * sends a body where none is taken), a failure of a backing service and an unexpected one; without valid credentials
 * and for a principal that may not act on the user; an id in the path that names nothing; a body too large or not JSON.
 */
function genericProblems(doc: RouteDoc): ErrorCode[] {
  return [
    'validation_failed',
    ...(doc.access === 'public' ? [] : (['unauthorized', 'forbidden'] as const)),
    ...(doc.params ? (['not_found'] as const) : []),
    ...(doc.body ? (['payload_too_large', 'unsupported_media_type', 'request_timeout'] as const) : []),
    'upstream_unavailable',
    'internal',
  ];
}

/** Path parameters are the route's `{names}` (a string each unless the params schema says more); query ones, the schema's. */
function parameters(schema: ZodType | undefined, where: 'path' | 'query' | 'header', names: readonly string[] = []): JsonSchema[] {
  const described = schema ? describe(schema, where) : [];
  const missing = names.filter((name) => !described.some((p) => p.name === name));
  return [...described.filter((p) => where !== 'path' || names.includes(p.name as string)), ...missing.map((name) => ({ name, in: where, required: true, schema: { type: 'string' } }))];
}

function describe(schema: ZodType, where: 'path' | 'query' | 'header'): JsonSchema[] {
  const json = toJsonSchema(schema, 'input');
  const properties = (json.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((json.required ?? []) as string[]);
  return Object.entries(properties).map(([name, property]) => {
    const { description, ...rest } = property;
    return { name, in: where, required: where === 'path' || required.has(name), ...(typeof description === 'string' && { description }), schema: rest };
  });
}

function operation(f: Extract<FunctionDescriptor, { trigger: { kind: 'http' } }>, method: string, doc: RouteDoc): JsonSchema {
  const routeParams = [...f.trigger.route.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const codes = [...new Set([...genericProblems(doc), ...doc.problems])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(PROBLEM_STATUS[code], [...(byStatus.get(PROBLEM_STATUS[code]) ?? []), code]);
  const responses: Record<string, JsonSchema> = {};
  for (const [status, r] of Object.entries(doc.responses)) {
    responses[status] = { description: r.description, ...(r.contentType && { content: { [r.contentType]: { schema: r.schema ? toJsonSchema(r.schema, 'output') : {} } } }) };
  }
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Problem: ${group.map((c) => `\`${c}\``).join(', ')}`,
      content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
    };
  }
  return {
    operationId: f.trigger.methods.length > 1 ? `${f.name}-${method.toLowerCase()}` : f.name,
    ...(doc.summary && { summary: doc.summary }),
    tags: [tagOf(f.trigger.route)],
    ...(doc.access === 'public' && { security: [] }),
    parameters: [...parameters(doc.params, 'path', routeParams), ...parameters(doc.query, 'query'), ...parameters(doc.headers, 'header')],
    ...(doc.body && { requestBody: { required: true, content: { [doc.body.contentType]: { schema: toJsonSchema(doc.body.schema, 'input') } } } }),
    responses,
  };
}

/** `v1/users/{userId}/sessions/{sessionId}/turns` → `sessions`; `v1/operations/{id}` → `operations`; the rest: `service`. */
function tagOf(route: string): string {
  const parts = route.split('/');
  if (parts[0] !== 'v1') return 'service';
  if (parts[1] === 'users') return parts[3] ?? 'users';
  return parts[1] ?? 'service';
}

export function openApiDocument(functions: readonly FunctionDescriptor[]): JsonSchema {
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const f of functions) {
    if (f.trigger.kind !== 'http') continue;
    const doc = routeDocOf(f.handler);
    if (!doc) throw new Error(`${f.name}: an HTTP function must be built with httpHandler or httpEndpoint, so the OpenAPI document can describe it`);
    const path = `/${f.trigger.route}`;
    for (const method of f.trigger.methods) (paths[path] ??= {})[method.toLowerCase()] = operation(f as Extract<FunctionDescriptor, { trigger: { kind: 'http' } }>, method, doc.methods?.[method] ?? doc);
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'Agent Memory Service',
      version: '1.0.0',
      description:
        'Event-sourced memory for LLM agents. Generated from the service\'s zod contracts. Credentials: `Authorization: Bearer` with an Entra ID access token or an API key (`amk_…`); in Azure, also the function key (`x-functions-key`).',
    },
    servers: [{ url: '/api' }],
    security: [{ entra: [] }, { apiKey: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: { Problem: toJsonSchema(Problem, 'output') },
      securitySchemes: {
        entra: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A Microsoft Entra ID access token for the API\'s app registration' },
        apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'amk_<keyId>_<secret>', description: 'An API key made by `npm run keys`, sent as `Authorization: Bearer amk_…`' },
        functionKey: { type: 'apiKey', in: 'header', name: 'x-functions-key', description: 'Azure only: the Functions host asks a function or host key before the service sees the request' },
      },
    },
  };
}
