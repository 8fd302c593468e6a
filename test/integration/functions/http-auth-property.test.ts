import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../../shared/application/append-turns.js';
import { storeMemory } from '../../../shared/application/artifacts.js';
import { createApiKey } from '../../../shared/application/auth.js';
import type { OrchestrationClient } from '../../../shared/application/operation-ports.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { LOCAL_PRINCIPAL } from '../../../shared/platform/auth.js';
import { useLocalOrchestrationClient } from '../../../shared/platform/durable.js';
import { startTestJwks } from '../../support/entra.js';
import { callRoute, httpRoutes, type HttpRoute } from '../../support/routes.js';
import { memoryRuntime } from '../../support/runtime.js';

// Random principals × random routes × random target users over the real handlers: a principal never reads another
// user's memory (no response carries that user's secret) and never writes it (no write marker of it ends up there).

const USERS = ['alice', 'bob', 'carol', 'dave'] as const;

/** Who each caller is: the users it may act on (`*` = all), or null for a caller that must be refused with 401. */
interface Caller {
  name: string;
  headers: Record<string, string>;
  users: '*' | string | null;
}

let runtime: Runtime;
let jwks: Awaited<ReturnType<typeof startTestJwks>>;
let routes: HttpRoute[];
let callers: Caller[];

const operations: Record<string, unknown> = {
  'session-end:alice:s1': { userId: 'alice', sessionId: 's1' },
  'session-end:bob:s1': { userId: 'bob', sessionId: 's1' },
  'reflection:carol:manual-1': { userId: 'carol' },
  'nightly:run-1': { since: '2026-01-01T00:00:00Z', runId: 'run-1', parallelism: 1 },
};
const operationOwner = (id: string) => (operations[id] as { userId?: string }).userId;
const orchestrations: OrchestrationClient = {
  start: async (_name, instanceId) => ({ instanceId, started: true }),
  purge: async () => 0,
  status: async (id) =>
    id in operations ? { operationId: id, name: 'orch', status: 'completed', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z', input: operations[id], output: { note: `secret-${operationOwner(id) ?? 'nightly'}` } } : null,
};

const secret = (userId: string) => `secret-${userId}`;
const mayAccess = (caller: Caller, userId: string | undefined) => caller.users === '*' || (userId !== undefined && caller.users === userId);

beforeAll(async () => {
  jwks = await startTestJwks();
  runtime = await memoryRuntime({ AUTH_MODE: 'entra+apikey', ...jwks.settings });
  useLocalOrchestrationClient(orchestrations);
  routes = (await httpRoutes()).filter((r) => r.access !== 'public');
  const now = new Date();
  const key = async (binding: { userId?: string; agentId?: string }) => ({ authorization: `Bearer ${(await createApiKey(runtime.apiKeys, binding, now)).key}` });
  const token = async (claims: Record<string, unknown>, audience?: string) => ({ authorization: `Bearer ${await jwks.sign(claims, audience ? { audience } : {})}` });
  callers = [
    { name: 'anonymous', headers: {}, users: null },
    { name: 'alice-key', headers: await key({ userId: 'alice' }), users: 'alice' },
    { name: 'alice-agent-key', headers: await key({ userId: 'alice', agentId: 'planner' }), users: 'alice' },
    { name: 'bob-key', headers: await key({ userId: 'bob' }), users: 'bob' },
    { name: 'service-key', headers: await key({}), users: '*' },
    { name: 'carol-token', headers: await token({ oid: 'carol' }), users: 'carol' },
    { name: 'service-token', headers: await token({ roles: ['Memory.All'] }), users: '*' },
    { name: 'wrong-audience-token', headers: await token({ oid: 'alice' }, 'api://other'), users: null },
  ];
  // Every user holds a secret in a memory and in a session's turns.
  for (const userId of USERS) {
    await storeMemory(runtime, LOCAL_PRINCIPAL, userId, { content: `the ${secret(userId)} note`, key: 'k1', type: 'custom', tags: [] });
    await appendTurns(runtime, { userId, sessionId: 's1' }, { turns: [{ role: 'user', content: `my ${secret(userId)} turn` }] });
  }
}, 120_000);
afterAll(async () => {
  useLocalOrchestrationClient(undefined);
  await runtime?.close();
  await jwks?.close();
});

/** A request body that would write (or search) if it got through; writes carry the caller's marker. */
function bodyFor(route: HttpRoute, caller: Caller, target: string): object | undefined {
  const marker = `written-by-${caller.name}`;
  switch (route.name) {
    case 'http-mcp':
      // MCP authenticates at the route and authorizes per tool: a write to the target user, refused as a tool error.
      return route.method === 'POST'
        ? { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'append_turns', arguments: { userId: target, sessionId: 's1', turns: [{ role: 'user', content: marker }] } } }
        : undefined;
    case 'http-turns-append':
      return { turns: [{ role: 'user', content: marker, agentId: 'planner' }] };
    case 'http-memories-create':
      return { content: marker, agentId: 'planner' };
    case 'http-facts-search':
      return { query: 'secret note turn' };
    case 'http-snapshots-create':
      return { keys: ['k1'] };
    case 'http-snapshot-restore':
      return { agentId: 'planner' };
    case 'http-slot-put':
      return { value: marker };
    default:
      return route.method === 'POST' || route.method === 'PUT' ? {} : undefined;
  }
}

describe('authorization property: random principals × random routes', () => {
  it('never lets a principal read or write another user', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat({ max: callers.length - 1 }),
        fc.nat({ max: routes.length - 1 }),
        fc.constantFrom(...USERS),
        fc.constantFrom(...Object.keys(operations)),
        async (callerIndex, routeIndex, target, operationId) => {
          const caller = callers[callerIndex]!;
          const route = routes[routeIndex]!;
          const owner = route.params.includes('userId') ? target : route.params.includes('operationId') ? operationOwner(operationId) : undefined;
          const body = bodyFor(route, caller, target);
          const headers = route.name === 'http-mcp' ? { ...caller.headers, accept: 'application/json, text/event-stream' } : caller.headers;
          const res = await callRoute(
            route,
            { userId: target, sessionId: 's1', key: route.method === 'DELETE' ? 'k-gone' : 'k1', snapshotId: 'snap-1', operationId },
            { headers, ...(body && { body }) },
          );
          const where = `${caller.name} ${route.method} ${route.route} target=${target} op=${operationId} → ${res.status}`;
          if (caller.users === null) expect(res.status, where).toBe(401);
          else if (route.name === 'http-mcp' || mayAccess(caller, owner)) expect([401, 403], where).not.toContain(res.status);
          else expect(res.status, where).toBe(route.params.includes('operationId') ? 404 : 403);
          const text = JSON.stringify(res.jsonBody ?? res.body ?? '');
          for (const userId of [...USERS, 'nightly']) {
            if (!(caller.users !== null && mayAccess(caller, userId === 'nightly' ? undefined : userId))) expect(text, where).not.toContain(secret(userId));
          }
        },
      ),
      { numRuns: 250 },
    );

    // No write got through to a user its caller may not act on (and some writes did get through, so this can fail).
    let written = 0;
    for (const userId of USERS) {
      const stored = JSON.stringify([await runtime.events.read({ userId, sessionId: 's1' }, 0), await runtime.detail.artifacts.list({ userId }, {}, 200, new Date()), await runtime.slots.heads([userId], 200)]);
      const writers = [...stored.matchAll(/written-by-([a-z-]+)/g)].map((m) => m[1]!);
      const intruders = writers.filter((name) => !mayAccess(callers.find((c) => c.name === name)!, userId));
      expect(intruders, userId).toEqual([]);
      written += writers.length;
    }
    expect(written).toBeGreaterThan(0);
  }, 300_000);
});
