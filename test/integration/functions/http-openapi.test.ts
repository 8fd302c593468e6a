import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as openapiHandler } from '../../../functions/http-openapi-get.js';
import { handler as docsHandler } from '../../../functions/http-docs-get.js';
import { handler as assetHandler } from '../../../functions/http-docs-asset-get.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { routeDocOf } from '../../../shared/platform/http.js';
import { callRoute, httpRoutes, type HttpRoute } from '../../support/routes.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// The OpenAPI document (GET /api/openapi.json) is generated from the function descriptors and their zod contracts:
// it validates as OpenAPI 3.1, holds exactly the registered routes, and its schemas say what the routes take and give.

type Schema = { type?: string; properties?: Record<string, Schema>; required?: string[]; $ref?: string; items?: Schema };
type Operation = {
  operationId: string;
  security?: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: Schema }> }>;
};
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema>; securitySchemes: Record<string, Record<string, string>> } };

let runtime: Runtime;
let doc: Doc;
let routes: HttpRoute[];
beforeAll(async () => {
  runtime = await memoryRuntime();
  routes = await httpRoutes();
  const res = await openapiHandler(request('GET', 'openapi.json'), context('http-openapi-get'));
  expect(res.status).toBe(200);
  doc = res.jsonBody as Doc;
});
afterAll(() => runtime.close());

const op = (path: string, method: string) => {
  const found = doc.paths[path]?.[method];
  if (!found) throw new Error(`${method} ${path} is not in the document`);
  return found;
};

describe('GET /api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as unknown as Record<string, unknown>);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('holds every registered HTTP function as exactly one path and method, and nothing else', () => {
    const registered = routes.map((r) => `${r.method} /${r.route}`).sort();
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)).sort();
    expect(documented).toEqual(registered);
    expect(new Set(documented).size).toBe(documented.length);
    // The operation ids are the function names (one per method where a function takes several).
    const ids = Object.values(doc.paths).flatMap((methods) => Object.values(methods).map((o) => o.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of routes) expect(ids.some((id) => id === r.name || id === `${r.name}-${r.method.toLowerCase()}`), r.name).toBe(true);
  });

  it('describes parameters, bodies and responses from the contracts', () => {
    const turns = op('/v1/users/{userId}/sessions/{sessionId}/turns', 'post');
    const body = turns.requestBody!.content['application/json']!.schema;
    expect(body.required).toEqual(['turns']);
    expect(body.properties!.turns!.items!.required).toEqual(['role', 'content']);
    expect(turns.parameters.filter((p) => p.in === 'path').map((p) => [p.name, p.required])).toEqual([['userId', true], ['sessionId', true]]);
    expect(turns.responses['202']!.content!['application/json']!.schema.required).toEqual(['accepted']);

    const context = op('/v1/users/{userId}/sessions/{sessionId}/context', 'get');
    expect(context.parameters.find((p) => p.name === 'maxTokens')).toMatchObject({ in: 'query', required: false, schema: { type: 'integer', minimum: 64 } });
    expect(context.responses['200']!.content!['application/json']!.schema.properties).toHaveProperty('summaryCoversThroughSeq');

    // A query field with a default is optional to the client (the request schema is the input side).
    expect(op('/v1/users/{userId}/memories/{key}', 'get').parameters.find((p) => p.name === 'transform')).toMatchObject({ required: false, schema: { enum: expect.arrayContaining(['full', 'filtered']) } });
    expect(op('/v1/users/{userId}/facts/search', 'post').requestBody!.content['application/json']!.schema.required).toEqual(['query']);
  });

  it('answers problem+json per route: the generic codes, and the ones the use case adds', () => {
    const problem = { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
    expect(doc.components.schemas.Problem!.required).toEqual(expect.arrayContaining(['type', 'title', 'status', 'code']));
    const turns = op('/v1/users/{userId}/sessions/{sessionId}/turns', 'post');
    for (const status of ['400', '401', '403', '404', '409', '413', '415', '500']) expect(turns.responses[status]?.content, status).toEqual(problem);
    expect(turns.responses['409']!.description).toMatch(/session_ended.*forget_in_progress/);
    expect(op('/v1/users/{userId}/sessions/{sessionId}/context', 'get').responses['422']!.description).toMatch(/context_budget_exceeded/);
    // Public routes need no credentials and cannot answer 401.
    for (const path of ['/health', '/openapi.json', '/docs']) {
      expect(op(path, 'get').security, path).toEqual([]);
      expect(op(path, 'get').responses['401'], path).toBeUndefined();
    }
    expect(op('/v1/users/{userId}/profile', 'get').security).toBeUndefined();
  });

  it('offers Entra bearer tokens and API keys (Authorization: Bearer) as the security schemes', () => {
    expect(doc.components.securitySchemes.entra).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.functionKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-functions-key' });
  });

  it("each route's response schema parses what the route answers", async () => {
    const route = (name: string) => routes.find((r) => r.name === name)!;
    const checked = async (name: string, params: Record<string, string>, options: Parameters<typeof callRoute>[2] = {}) => {
      const res = await callRoute(route(name), params, options);
      const declared = routeDocOf(route(name).handler)!.responses[res.status ?? 200];
      expect(declared?.schema, `${name} → ${res.status} ${JSON.stringify(res.jsonBody).slice(0, 200)}`).toBeDefined();
      declared!.schema!.parse(res.jsonBody);
      return json(res);
    };
    const key = { userId: 'oa-user', sessionId: 's1' };
    await checked('http-turns-append', key, { body: { turns: [{ role: 'user', content: 'I keep bees in Tromsø.' }] } });
    await checked('http-context-get', key);
    await checked('http-session-get', key);
    await checked('http-session-messages', key);
    await checked('http-session-events-list', key);
    const stored = await checked('http-memories-create', { userId: key.userId }, { body: { content: { hives: 3 }, tags: ['bees'] } });
    await checked('http-memory-get', { userId: key.userId, key: String(stored.key) }, { query: 'transform=excerpt&n=5' });
    await checked('http-memories-list', { userId: key.userId });
    await checked('http-facts-search', { userId: key.userId }, { body: { query: 'bees' } });
    await checked('http-insights-list', { userId: key.userId });
    await checked('http-health-get', {});
  });
});

describe('GET /api/docs (Swagger UI from swagger-ui-dist)', () => {
  it('is an HTML page that loads its assets from /api/docs/… and reads /api/openapi.json', async () => {
    const res = await docsHandler(request('GET', 'docs'), context('http-docs-get'));
    expect(res.status).toBe(200);
    expect(new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get('content-type')).toMatch(/^text\/html/);
    const page = String(res.body);
    expect(page).toContain('<div id="swagger-ui">');
    expect(page).toContain('src="docs/swagger-ui-bundle.js"');
    const init = await assetHandler(request('GET', 'docs/init.js', { params: { file: 'init.js' } }), context('http-docs-asset-get'));
    expect(new TextDecoder().decode(init.body as Uint8Array)).toContain("'openapi.json'");
  });

  it('serves the package files with their content types; another name is 404', async () => {
    const asset = (file: string) => assetHandler(request('GET', `docs/${file}`, { params: { file } }), context('http-docs-asset-get'));
    const bundle = await asset('swagger-ui-bundle.js');
    expect(bundle.status).toBe(200);
    expect(new Headers(bundle.headers as ConstructorParameters<typeof Headers>[0]).get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(new TextDecoder().decode(bundle.body as Uint8Array)).toContain('SwaggerUIBundle');
    expect(new Headers((await asset('swagger-ui.css')).headers as ConstructorParameters<typeof Headers>[0]).get('content-type')).toBe('text/css; charset=utf-8');
    for (const file of ['package.json', '..', 'index.html', '__proto__']) {
      const res = await asset(file);
      expect(res.status, file).toBe(404);
      expect(json(res).code).toBe('not_found');
    }
  });
});
