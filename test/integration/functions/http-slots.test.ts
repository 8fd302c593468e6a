import type { HttpResponseInit } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../shared/application/auth.js';
import type { ContextResponse } from '../../../shared/contracts/context.js';
import { SLOT_VALUE_MAX_BYTES } from '../../../shared/contracts/slots.js';
import { HOUR_SECONDS, MINUTE_SECONDS } from '../../../shared/domain/retention.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { callRoute, httpRoutes, type HttpRoute } from '../../support/routes.js';
import { atOffset, json, memoryRuntime } from '../../support/runtime.js';

// The slot routes over the real handlers, with API keys: a user key, an agent-bound key of the same user, an admin
// (service key, no agent) and a service key bound to an agent (all users, but not an admin).

let runtime: Runtime;
let routes: HttpRoute[];
const keys: Record<'alice' | 'planner' | 'writer' | 'bob' | 'admin' | 'serviceAgent', Record<string, string>> = {} as never;

beforeAll(async () => {
  runtime = await memoryRuntime({ AUTH_MODE: 'apikey' });
  routes = await httpRoutes();
  const now = new Date();
  const key = async (binding: { userId?: string; agentId?: string }) => ({ authorization: `Bearer ${(await createApiKey(runtime.apiKeys, binding, now)).key}` });
  keys.alice = await key({ userId: 'alice' });
  keys.planner = await key({ userId: 'alice', agentId: 'planner' });
  keys.writer = await key({ userId: 'alice', agentId: 'writer' });
  keys.bob = await key({ userId: 'bob' });
  keys.admin = await key({});
  keys.serviceAgent = await key({ agentId: 'bot' });
});
afterAll(async () => {
  await runtime?.close();
});

let n = 0;
const freshName = () => `slot-${++n}`;
const route = (name: string) => routes.find((r) => r.name === name)!;
type As = keyof typeof keys;

const put = (as: As, userId: string, name: string, body: object, options: { query?: string; headers?: Record<string, string> } = {}) =>
  callRoute(route('http-slot-put'), { userId, name }, { body, headers: { ...keys[as], ...options.headers }, ...(options.query && { query: options.query }) });
const get = (as: As, userId: string, name: string, query?: string) => callRoute(route('http-slot-get'), { userId, name }, { headers: keys[as], ...(query && { query }) });
const del = (as: As, userId: string, name: string, options: { query?: string; headers?: Record<string, string> } = {}) =>
  callRoute(route('http-slot-delete'), { userId, name }, { headers: { ...keys[as], ...options.headers }, ...(options.query && { query: options.query }) });
const list = (as: As, userId: string, query?: string) => callRoute(route('http-slots-list'), { userId }, { headers: keys[as], ...(query && { query }) });

const etag = (res: HttpResponseInit) => new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get('etag');
function expectProblem(res: HttpResponseInit, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(json(res).code).toBe(code);
  expect(new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get('content-type')).toBe('application/problem+json');
}
const names = (res: HttpResponseInit) => (json(res).items as { name: string }[]).map((s) => s.name);

describe('PUT / GET / DELETE a slot', () => {
  it('creates with 201 at version 1, updates with 200 and the next version, each with an ETag', async () => {
    const name = freshName();
    const created = await put('alice', 'alice', name, { value: { name: 'Ada', likes: ['tea'] } });
    expect(created.status).toBe(201);
    expect(json(created)).toMatchObject({ name, scope: 'user', userId: 'alice', value: { name: 'Ada', likes: ['tea'] }, version: 1, expiresAt: null });
    expect(etag(created)).toBe('"1"');
    const updated = await put('alice', 'alice', name, { value: 'now a string' }, { headers: { 'if-match': '"1"' } });
    expect(updated.status).toBe(200);
    expect(json(updated)).toMatchObject({ value: 'now a string', version: 2 });
    expect(etag(updated)).toBe('"2"');
    const read = await get('alice', 'alice', name);
    expect(json(read)).toMatchObject({ value: 'now a string', version: 2 });
    expect(etag(read)).toBe('"2"');
  });

  it('refuses a value with a __proto__ key rather than store it altered; keeps a constructor key', async () => {
    const name = freshName();
    const value = JSON.parse('{"a":[{"__proto__":{"polluted":true}}]}') as object;
    expectProblem(await put('alice', 'alice', name, { value }), 400, 'validation_failed');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((await put('alice', 'alice', name, { value: { constructor: 'c', toString: 1 } })).status).toBe(201);
    expect(json(await get('alice', 'alice', name)).value).toEqual({ constructor: 'c', toString: 1 });
  });

  it('a stale If-Match is 412 precondition_failed and changes nothing', async () => {
    const name = freshName();
    await put('alice', 'alice', name, { value: 1 });
    await put('alice', 'alice', name, { value: 2 }, { headers: { 'if-match': '1' } });
    const stale = await put('alice', 'alice', name, { value: 'lost update' }, { headers: { 'if-match': '"1"' } });
    expectProblem(stale, 412, 'precondition_failed');
    expect(json(stale).currentVersion).toBe(2);
    expect(json(await get('alice', 'alice', name))).toMatchObject({ value: 2, version: 2 });
    expectProblem(await del('alice', 'alice', name, { headers: { 'if-match': '1' } }), 412, 'precondition_failed');
    expect(json(await get('alice', 'alice', name))).toMatchObject({ value: 2, version: 2 });
  });

  it('of two concurrent writers with the same If-Match exactly one wins, the other is 412', async () => {
    const name = freshName();
    await put('alice', 'alice', name, { value: 'base' });
    const [a, b] = await Promise.all([
      put('alice', 'alice', name, { value: 'from a' }, { headers: { 'if-match': '1' } }),
      put('alice', 'alice', name, { value: 'from b' }, { headers: { 'if-match': '1' } }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 412]);
    const winner = a.status === 200 ? 'from a' : 'from b';
    expect(json(await get('alice', 'alice', name))).toMatchObject({ value: winner, version: 2 });
  });

  it('If-None-Match: * creates only; If-Match on a missing slot is 412', async () => {
    const name = freshName();
    expectProblem(await put('alice', 'alice', name, { value: 1 }, { headers: { 'if-match': '1' } }), 412, 'precondition_failed');
    expect((await put('alice', 'alice', name, { value: 1 }, { headers: { 'if-none-match': '*' } })).status).toBe(201);
    expectProblem(await put('alice', 'alice', name, { value: 2 }, { headers: { 'if-none-match': '*' } }), 412, 'precondition_failed');
    expect(json(await get('alice', 'alice', name))).toMatchObject({ value: 1, version: 1 });
  });

  it('DELETE honours If-Match, then the slot is 404; versions keep counting after a delete', async () => {
    const name = freshName();
    await put('alice', 'alice', name, { value: 'x' });
    const deleted = await del('alice', 'alice', name, { headers: { 'if-match': '"1"' } });
    expect(deleted.status).toBe(200);
    expect(json(deleted)).toEqual({ name, scope: 'user', version: 2, deleted: true });
    expectProblem(await get('alice', 'alice', name), 404, 'not_found');
    expectProblem(await del('alice', 'alice', name), 404, 'not_found');
    expect(names(await list('alice', 'alice'))).not.toContain(name);
    const again = await put('alice', 'alice', name, { value: 'y' }, { headers: { 'if-none-match': '*' } });
    expect(again.status).toBe(201);
    expect(json(again).version).toBe(3);
  });

  it('refuses bad conditions and bodies with 400, a value over the limit with 413', async () => {
    const name = freshName();
    expectProblem(await put('alice', 'alice', name, { value: 1 }, { headers: { 'if-match': 'abc' } }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: 1 }, { headers: { 'if-none-match': '"3"' } }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, {}), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: 1, extra: true }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: 'a\u0000b' }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: { nested: ['x\uD800'] } }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: { ['k\u0000']: 1 } }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', name, { value: 1, ttlClass: 'forever' }), 400, 'validation_failed');
    expectProblem(await put('alice', 'alice', 'bad name!', { value: 1 }), 400, 'validation_failed');
    const atLimit = 'x'.repeat(SLOT_VALUE_MAX_BYTES - 2);
    expect((await put('alice', 'alice', name, { value: atLimit })).status).toBe(201);
    const over = await put('alice', 'alice', name, { value: `${atLimit}y` });
    expectProblem(over, 413, 'payload_too_large');
    expect(json(over)).toMatchObject({ maxBytes: SLOT_VALUE_MAX_BYTES, bytes: SLOT_VALUE_MAX_BYTES + 1 });
    expect(json(await get('alice', 'alice', name)).version).toBe(1);
  });
});

describe('scopes', () => {
  it('a private slot needs an agent and is invisible to another agent', async () => {
    const name = freshName();
    expectProblem(await put('alice', 'alice', name, { value: 1 }, { query: 'scope=private' }), 422, 'scope_owner_required');
    expect((await put('planner', 'alice', name, { value: 'plan' }, { query: 'scope=private' })).status).toBe(201);
    expect(json(await get('planner', 'alice', name, 'scope=private'))).toMatchObject({ value: 'plan', agentId: 'planner' });
    expectProblem(await get('writer', 'alice', name, 'scope=private'), 404, 'not_found');
    expectProblem(await get('writer', 'alice', name, 'scope=private&agentId=planner'), 403, 'forbidden');
    expect(names(await list('planner', 'alice'))).toContain(name);
    expect(names(await list('writer', 'alice'))).not.toContain(name);
    // A user key names the agent it acts as.
    expect(json(await get('alice', 'alice', name, 'scope=private&agentId=planner'))).toMatchObject({ value: 'plan' });
  });

  it('a session slot is visible to every agent of that session and not in another session', async () => {
    const name = freshName();
    expectProblem(await put('alice', 'alice', name, { value: 1 }, { query: 'scope=session' }), 422, 'scope_owner_required');
    await put('planner', 'alice', name, { value: 'shared' }, { query: 'scope=session&sessionId=s1' });
    expect(json(await get('writer', 'alice', name, 'scope=session&sessionId=s1'))).toMatchObject({ value: 'shared', sessionId: 's1' });
    expectProblem(await get('writer', 'alice', name, 'scope=session&sessionId=s2'), 404, 'not_found');
    expect(names(await list('writer', 'alice', 'sessionId=s1'))).toContain(name);
    expect(names(await list('writer', 'alice', 'sessionId=s2'))).not.toContain(name);
  });

  it('a user slot is visible in every session and to every agent, never to another user', async () => {
    const name = freshName();
    await put('planner', 'alice', name, { value: 'Ada' }, { query: 'sessionId=s1' });
    expect(json(await get('writer', 'alice', name, 'sessionId=s9'))).toMatchObject({ value: 'Ada', scope: 'user' });
    expect(names(await list('writer', 'alice', 'sessionId=s9'))).toContain(name);
    expectProblem(await get('bob', 'bob', name), 404, 'not_found');
    expectProblem(await get('bob', 'alice', name), 403, 'forbidden');
  });

  it('a global slot is written only by an admin and read by every user', async () => {
    const name = freshName();
    expectProblem(await put('alice', 'alice', name, { value: 'x' }, { query: 'scope=global' }), 403, 'forbidden');
    expectProblem(await put('serviceAgent', 'alice', name, { value: 'x' }, { query: 'scope=global' }), 403, 'forbidden');
    expect((await put('admin', 'alice', name, { value: { motd: 'hello' } }, { query: 'scope=global' })).status).toBe(201);
    const read = json(await get('bob', 'bob', name, 'scope=global'));
    expect(read).toMatchObject({ name, scope: 'global', value: { motd: 'hello' } });
    expect(read).not.toHaveProperty('userId');
    expect(names(await list('bob', 'bob'))).toContain(name);
    expectProblem(await del('planner', 'alice', name, { query: 'scope=global' }), 403, 'forbidden');
    expect((await del('admin', 'bob', name, { query: 'scope=global' })).status).toBe(200);
    expectProblem(await get('alice', 'alice', name, 'scope=global'), 404, 'not_found');
  });
});

describe('TTL classes', () => {
  it('an expired slot reads as 404, is not listed, and a new write starts over after it', async () => {
    const name = freshName();
    const res = await put('alice', 'alice', name, { value: 'working memory', ttlClass: 'working' });
    expect(json(res)).toMatchObject({ ttlClass: 'working', expiresAt: expect.any(String) });
    expect((await atOffset(runtime, 30 * MINUTE_SECONDS - 60, () => get('alice', 'alice', name))).status).toBe(200);
    expectProblem(await atOffset(runtime, 30 * MINUTE_SECONDS + 60, () => get('alice', 'alice', name)), 404, 'not_found');
    expect(names(await atOffset(runtime, 30 * MINUTE_SECONDS + 60, () => list('alice', 'alice')))).not.toContain(name);
    expectProblem(await atOffset(runtime, HOUR_SECONDS, () => put('alice', 'alice', name, { value: 'x' }, { headers: { 'if-match': '1' } })), 412, 'precondition_failed');
    const again = await atOffset(runtime, HOUR_SECONDS, () => put('alice', 'alice', name, { value: 'fresh' }, { headers: { 'if-none-match': '*' } }));
    expect(again.status).toBe(201);
    expect(json(again).version).toBe(2);
  });
});

describe('GET /slots', () => {
  it('pages through the visible slots with a cursor, nothing twice, nothing missed', async () => {
    const user = `pager-${Date.now()}`;
    const created = Array.from({ length: 7 }, (_, i) => `p${i}`);
    for (const name of created) await put('admin', user, name, { value: name });
    await put('admin', user, 'hidden', { value: 'x' }, { query: 'scope=private&agentId=other' });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await list('admin', user, `limit=3&agentId=me${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      const page = json(res) as unknown as { items: { name: string; scope: string }[]; nextCursor: string | null };
      expect(page.items.length).toBeLessThanOrEqual(3);
      seen.push(...page.items.filter((s) => s.scope !== 'global').map((s) => s.name));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(created);
    expectProblem(await list('admin', user, 'cursor=bm90LWEtY3Vyc29y'), 400, 'validation_failed');
  });
});

describe('slots in the context block', () => {
  it('renders the visible slots after the init block and before the summary, and never cuts them', async () => {
    const userId = `ctx-${Date.now()}`;
    await put('planner', 'alice', 'planner-only', { value: 'secret plan' }, { query: 'scope=private' });
    await callRoute(route('http-turns-append'), { userId: 'alice', sessionId: 's1' }, { headers: keys.alice, body: { turns: [{ role: 'user', content: 'hi' }] } });
    const append = route('http-turns-append');
    const context = route('http-context-get');
    await callRoute(append, { userId, sessionId: 's1' }, { headers: keys.admin, body: { turns: [{ role: 'user', content: 'hello there' }] } });
    await put('admin', userId, 'user_profile', { value: { name: 'Ada' } });
    await put('admin', userId, 'plan', { value: ['step 1'] }, { query: 'scope=private&agentId=planner' });
    await put('admin', userId, 'scratch', { value: 'other session' }, { query: 'scope=session&sessionId=s2' });
    const body = json(await callRoute(context, { userId, sessionId: 's1' }, { headers: keys.admin, query: 'agentId=planner' })) as unknown as ContextResponse;
    expect(body.text).toMatch(/### Slots\n- plan \(private\): \["step 1"\]\n- user_profile \(user\): \{"name":"Ada"\}\n\n### Active Conversation/);
    expect(body.sections.slots?.map((s) => s.name)).toEqual(['plan', 'user_profile']);
    const writer = json(await callRoute(context, { userId, sessionId: 's1' }, { headers: keys.admin, query: 'agentId=writer' })) as unknown as ContextResponse;
    expect(writer.sections.slots?.map((s) => s.name)).toEqual(['user_profile']);

    // An agent-bound principal reads the context as its agent: another agent's private slot is not in it.
    const asWriter = json(await callRoute(context, { userId: 'alice', sessionId: 's1' }, { headers: keys.writer })) as unknown as ContextResponse;
    expect(asWriter.sections.slots?.some((s) => s.scope === 'private')).toBe(false);

    await put('admin', userId, 'big', { value: 'word '.repeat(400) });
    const tight = await callRoute(context, { userId, sessionId: 's1' }, { headers: keys.admin, query: 'maxTokens=100' });
    expectProblem(tight, 422, 'context_budget_exceeded');
  });
});
