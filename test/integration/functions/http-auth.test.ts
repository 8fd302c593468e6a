import type { HttpResponseInit } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../shared/application/auth.js';
import { createAuthenticator } from '../../../shared/platform/auth.js';
import type { OrchestrationClient } from '../../../shared/application/operation-ports.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../../shared/platform/durable.js';
import { startTestJwks } from '../../support/entra.js';
import { callRoute, httpRoutes, type HttpRoute } from '../../support/routes.js';
import { json, memoryRuntime } from '../../support/runtime.js';

// Auth switched on (Entra tokens and API keys) over the real handlers; the other handler tests run open, the default.

let runtime: Runtime;
let jwks: Awaited<ReturnType<typeof startTestJwks>>;
let routes: HttpRoute[];
const keys: Record<string, string> = {};

const operations: Record<string, unknown> = {
  'session-end:alice:s1': { userId: 'alice', sessionId: 's1' },
  'session-end:bob:s1': { userId: 'bob', sessionId: 's1' },
  'nightly:run-1': { since: '2026-01-01T00:00:00Z', runId: 'run-1', parallelism: 1 },
};
const orchestrations: OrchestrationClient = {
  start: async (_name, instanceId) => ({ instanceId, started: true }),
  purge: async () => 0,
  status: async (id) =>
    id in operations ? { operationId: id, name: 'orch', status: 'completed', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', input: operations[id] } : null,
};

beforeAll(async () => {
  jwks = await startTestJwks();
  runtime = await memoryRuntime({ AUTH_MODE: 'entra+apikey', ...jwks.settings });
  useLocalOrchestrationClient(orchestrations);
  routes = await httpRoutes();
  const now = new Date();
  keys.alice = (await createApiKey(runtime.apiKeys, { userId: 'alice' }, now)).key;
  keys.aliceAgent = (await createApiKey(runtime.apiKeys, { userId: 'alice', agentId: 'planner' }, now)).key;
  keys.service = (await createApiKey(runtime.apiKeys, {}, now)).key;
});
afterAll(async () => {
  useLocalOrchestrationClient(undefined);
  await runtime?.close();
  await jwks?.close();
});

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const route = (name: string) => routes.find((r) => r.name === name)!;
const profile = (userId: string, headers?: Record<string, string>) => callRoute(route('http-insights-list'), { userId }, { ...(headers && { headers }) });

function expectProblem(res: HttpResponseInit, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(json(res).code).toBe(code);
  expect(new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get('content-type')).toBe('application/problem+json');
}

describe('without credentials, every route is 401 (problem+json, WWW-Authenticate: Bearer)', () => {
  it('covers every HTTP function but the public ones (/health, the API reference)', async () => {
    expect(routes.filter((r) => r.access === 'public').map((r) => r.name).sort()).toEqual(['http-docs-asset-get', 'http-docs-get', 'http-health-get', 'http-openapi-get']);
    const guarded = routes.filter((r) => r.access !== 'public');
    expect(guarded.length).toBeGreaterThanOrEqual(15);
    for (const r of guarded) {
      const res = await callRoute(r, { userId: 'alice', sessionId: 's1', key: 'k1', snapshotId: 'snap1', operationId: 'session-end:alice:s1' }, { body: {} });
      expect(res.status, `${r.method} ${r.route}`).toBe(401);
      expectProblem(res, 401, 'unauthorized');
      expect(new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get('www-authenticate'), r.name).toMatch(/^Bearer/);
    }
  });

  it('is 401 for a malformed header, an unknown or revoked key, before any validation', async () => {
    for (const header of ['Basic YWxpY2U6eA==', 'Bearer', 'Bearer amk_000000000000_' + 'x'.repeat(43), 'Bearer not.a.jwt']) {
      expectProblem(await profile('alice', { authorization: header }), 401, 'unauthorized');
    }
    const { key, record } = await createApiKey(runtime.apiKeys, { userId: 'alice' }, new Date());
    expect((await profile('alice', bearer(key))).status).toBe(200);
    await runtime.apiKeys.revoke(record.keyId, new Date());
    expectProblem(await profile('alice', bearer(key)), 401, 'unauthorized');
    // A path that fails validation is still 401 first: nothing about the route is revealed without credentials.
    expectProblem(await profile('bad id!'), 401, 'unauthorized');
  });

  it('/health stays public and shows nothing per user', async () => {
    const res = await callRoute(route('http-health-get'), {});
    expect(res.status).toBe(200);
    expect(JSON.stringify(res.jsonBody)).not.toMatch(/alice|bob/);
  });
});

describe('API keys', () => {
  it('a user key reaches its user and gets 403 on another', async () => {
    expect((await profile('alice', bearer(keys.alice!))).status).toBe(200);
    expectProblem(await profile('bob', bearer(keys.alice!)), 403, 'forbidden');
  });

  it('a service key reaches every user', async () => {
    expect((await profile('bob', bearer(keys.service!))).status).toBe(200);
    expect((await profile('alice', bearer(keys.service!))).status).toBe(200);
  });

  it('an agent-bound key acts only as its agent (query, body and turns)', async () => {
    const headers = bearer(keys.aliceAgent!);
    const append = route('http-turns-append');
    const turn = (agentId: string) => ({ turns: [{ role: 'user', content: 'hello', agentId }] });
    expectProblem(await callRoute(append, { userId: 'alice', sessionId: 's2' }, { headers, body: turn('writer') }), 403, 'forbidden');
    expect((await callRoute(append, { userId: 'alice', sessionId: 's2' }, { headers, body: turn('planner') })).status).toBe(202);
    const context = route('http-context-get');
    expect((await callRoute(context, { userId: 'alice', sessionId: 's2' }, { headers, query: 'agentId=planner' })).status).toBe(200);
    expectProblem(await callRoute(context, { userId: 'alice', sessionId: 's2' }, { headers, query: 'agentId=writer' }), 403, 'forbidden');
    expectProblem(await callRoute(route('http-facts-search'), { userId: 'alice' }, { headers, body: { query: 'hello', agentId: 'writer' } }), 403, 'forbidden');
    // /messages without agentId reads the key's own agent's thread.
    const messages = route('http-session-messages');
    expect(json(await callRoute(messages, { userId: 'alice', sessionId: 's2' }, { headers }))).toMatchObject({ agentId: 'planner', format: 'openai' });
    expectProblem(await callRoute(messages, { userId: 'alice', sessionId: 's2' }, { headers, query: 'agentId=writer' }), 403, 'forbidden');
  });
});

describe('Entra ID bearer tokens (signed by a test key served as a local JWKS)', () => {
  it('a user-bound token (oid) reaches its user and gets 403 on another', async () => {
    const token = await jwks.sign({ oid: 'alice', sub: 'subject-alice' });
    expect((await profile('alice', bearer(token))).status).toBe(200);
    expectProblem(await profile('bob', bearer(token)), 403, 'forbidden');
  });

  it('a service principal with the Memory.All app role reaches every user; the second audience is accepted too', async () => {
    const token = await jwks.sign({ roles: ['Memory.All'], sub: 'daemon' }, { audience: '00000000-aaaa-bbbb-cccc-000000000000' });
    expect((await profile('bob', bearer(token))).status).toBe(200);
  });

  it('refuses an expired token, another audience, another issuer or tenant, and a key the tenant does not publish', async () => {
    const refused = [
      await jwks.sign({ oid: 'alice' }, { expiresIn: Math.floor(Date.now() / 1000) - 3600 }),
      await jwks.sign({ oid: 'alice' }, { audience: 'api://someone-else' }),
      await jwks.sign({ oid: 'alice' }, { issuer: 'https://login.microsoftonline.com/99999999-2222-3333-4444-555555555555/v2.0' }),
      await jwks.sign({ oid: 'alice', tid: '99999999-2222-3333-4444-555555555555' }),
      await jwks.sign({ oid: 'alice' }, { key: 'stranger' }),
    ];
    for (const token of refused) expectProblem(await profile('alice', bearer(token)), 401, 'unauthorized');
  });

  it('a valid token with neither the app role nor a user claim is 403', async () => {
    expectProblem(await profile('alice', bearer(await jwks.sign({ roles: ['Something.Else'] }))), 403, 'forbidden');
  });

  it('a key set that cannot be fetched is 503 upstream_unavailable, not a verdict on the token', async () => {
    const unreachable = createAuthenticator(
      { AUTH_MODE: 'entra', ...jwks.settings, ENTRA_JWKS_URL: 'http://127.0.0.1:1/keys', ENTRA_USER_CLAIM: 'oid', ENTRA_ALL_USERS_ROLE: 'Memory.All' },
      runtime.apiKeys,
    );
    await expect(unreachable.authenticate(`Bearer ${await jwks.sign({ oid: 'alice' })}`)).rejects.toMatchObject({ code: 'upstream_unavailable' });
  });

  it('fetches the key set once and caches it', () => {
    expect(jwks.fetches()).toBeGreaterThanOrEqual(1);
    expect(jwks.fetches()).toBeLessThanOrEqual(2);
  });
});

describe('GET /operations/{id}: only the user the operation acts on, or a service principal', () => {
  const get = async (operationId: string, token?: string) => callRoute(route('http-operation-get'), { operationId }, { ...(token && { headers: bearer(token) }) });

  it('the owner reads it, without the input; another user gets 404 as for an unknown id', async () => {
    const own = await get('session-end:alice:s1', keys.alice);
    expect(own.status).toBe(200);
    expect(json(own)).not.toHaveProperty('input');
    expectProblem(await get('session-end:bob:s1', keys.alice), 404, 'not_found');
    expectProblem(await get('session-end:nobody:s1', keys.alice), 404, 'not_found');
  });

  it('the nightly operation (no user) is for service principals only', async () => {
    expectProblem(await get('nightly:run-1', keys.alice), 404, 'not_found');
    expect((await get('nightly:run-1', keys.service)).status).toBe(200);
    expect((await get('session-end:bob:s1', keys.service)).status).toBe(200);
  });
});
