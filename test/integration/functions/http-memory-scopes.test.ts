import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../../shared/application/append-turns.js';
import { createApiKey } from '../../../shared/application/auth.js';
import { append, projectSession } from '../../../shared/application/project-session.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { createMcpServer } from '../../../shared/platform/mcp/server.js';
import { callRoute, httpRoutes, type HttpRoute } from '../../support/routes.js';
import { json, memoryRuntime } from '../../support/runtime.js';

/**
 * Scopes of detail memory through the HTTP routes, with API keys as the principals: alice's agents (researcher,
 * writer, editor; each a key bound to it), alice herself (no agent), bob, and the admin (a service key, no agent).
 */
let runtime: Runtime;
let routes: HttpRoute[];
const keys: Record<string, string> = {};
beforeAll(async () => {
  runtime = await memoryRuntime({ AUTH_MODE: 'apikey' });
  routes = await httpRoutes();
  const now = new Date();
  const make = async (name: string, binding: { userId?: string; agentId?: string }) => (keys[name] = (await createApiKey(runtime.apiKeys, binding, now)).key);
  await make('alice', { userId: 'alice' });
  await make('researcher', { userId: 'alice', agentId: 'researcher' });
  await make('writer', { userId: 'alice', agentId: 'writer' });
  await make('editor', { userId: 'alice', agentId: 'editor' });
  await make('planner', { userId: 'alice', agentId: 'planner' });
  await make('bob', { userId: 'bob' });
  await make('admin', {});
  await make('serviceAgent', { agentId: 'indexer' });
}, 60_000);
afterAll(() => runtime?.close());

const route = (name: string) => routes.find((r) => r.name === name)!;
const as = (who: string) => ({ authorization: `Bearer ${keys[who]}` });
const store = (who: string, userId: string, body: object) => callRoute(route('http-memories-create'), { userId }, { headers: as(who), body });
const get = (who: string, userId: string, key: string, query = '') => callRoute(route('http-memory-get'), { userId, key }, { headers: as(who), query });
const del = (who: string, userId: string, key: string) => callRoute(route('http-memory-delete'), { userId, key }, { headers: as(who) });
const listed = async (who: string, userId: string, query = '') => {
  const res = await callRoute(route('http-memories-list'), { userId }, { headers: as(who), query });
  expect(res.status).toBe(200);
  return (json(res).items as { key: string }[]).map((i) => i.key);
};
/** Keys of the artifacts fact search finds (artifacts only). */
const searched = async (who: string, userId: string, query: string, body: object = {}) => {
  const res = await callRoute(route('http-facts-search'), { userId }, { headers: as(who), body: { query, sources: ['artifacts'], retrievers: ['fulltext'], ...body } });
  expect(res.status).toBe(200);
  return (json(res).facts as { memoryKey: string }[]).map((f) => f.memoryKey);
};

let n = 0;
const fresh = (prefix: string) => `${prefix}-${++n}`;

describe('private memory', () => {
  it("a researcher's private artifact is invisible to the writer (404, not listed, not found) until a handoff in the session grants its key", async () => {
    const key = fresh('findings');
    const sessionId = fresh('s');
    const res = await store('researcher', 'alice', { key, content: 'the quokka census results', scope: 'private', sessionId });
    expect(res.status).toBe(201);
    // The agent-bound principal's agent owns it.
    expect(json(res)).toMatchObject({ key, scope: 'private', agentId: 'researcher' });

    expect((await get('researcher', 'alice', key)).status).toBe(200);
    expect(await listed('researcher', 'alice')).toContain(key);
    expect(await searched('researcher', 'alice', 'quokka census')).toEqual([key]);

    const hidden = await get('writer', 'alice', key, `sessionId=${sessionId}`);
    expect(hidden.status).toBe(404);
    expect(json(hidden).code).toBe('not_found');
    expect(await listed('writer', 'alice', `sessionId=${sessionId}`)).not.toContain(key);
    expect(await searched('writer', 'alice', 'quokka census', { sessionId })).toEqual([]);
    // Alice's own key names no agent: it reads every agent's memory, as before scopes.
    expect((await get('alice', 'alice', key)).status).toBe(200);
    // ... and naming an agent reads as that agent.
    expect((await get('alice', 'alice', key, 'agentId=writer')).status).toBe(404);

    // The researcher hands over to the writer in the session, passing the key along (a SessionHandoff event, projected).
    await appendTurns(runtime, { userId: 'alice', sessionId }, { turns: [{ role: 'assistant', content: 'census done', agentId: 'researcher' }] });
    await append(runtime, { userId: 'alice', sessionId }, [{ type: 'SessionHandoff', data: { handoffId: fresh('h'), fromAgentId: 'researcher', toAgentId: 'writer', memoryKeys: [key] } }]);
    await projectSession(runtime, { userId: 'alice', sessionId });

    expect((await get('writer', 'alice', key, `sessionId=${sessionId}`)).status).toBe(200);
    expect(await listed('writer', 'alice', `sessionId=${sessionId}`)).toContain(key);
    expect(await searched('writer', 'alice', 'quokka census', { sessionId })).toEqual([key]);
    // The grant lives in that session, and is the writer's only.
    expect((await get('writer', 'alice', key)).status).toBe(404);
    expect((await get('writer', 'alice', key, `sessionId=${fresh('s')}`)).status).toBe(404);
    expect((await get('editor', 'alice', key, `sessionId=${sessionId}`)).status).toBe(404);
    expect(await listed('editor', 'alice', `sessionId=${sessionId}`)).not.toContain(key);
  });

  it('MCP search_memory and retrieve_memory apply the same viewer', async () => {
    const key = fresh('mcp-private');
    await store('researcher', 'alice', { key, content: 'the wombat burrow survey', scope: 'private' });
    const connect = async (agentId: string) => {
      const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
      await createMcpServer(runtime, { via: 'apikey', subject: `key:${agentId}`, allUsers: false, userId: 'alice', agentId }).connect(serverTransport);
      const client = new Client({ name: agentId, version: '1.0.0' });
      await client.connect(clientTransport);
      return client;
    };
    const [researcher, writer] = [await connect('researcher'), await connect('writer')];
    const call = async (client: Client, name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
    const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;
    const hits = async (client: Client) => (JSON.parse(text(await call(client, 'search_memory', { userId: 'alice', query: 'wombat burrow' }))) as { hits: { key: string }[] }).hits.map((h) => h.key);
    try {
      expect(await hits(researcher)).toEqual([key]);
      expect(await hits(writer)).toEqual([]);
      expect(text(await call(researcher, 'retrieve_memory', { userId: 'alice', key }))).toBe('the wombat burrow survey');
      const fetched = await call(writer, 'retrieve_memory', { userId: 'alice', key });
      expect(fetched.isError).toBe(true);
      expect(text(fetched)).toMatch(/^not_found/);
    } finally {
      await researcher.close();
      await writer.close();
    }
  });

  it('a scope without its agent or session is 422 scope_owner_required, storing nothing', async () => {
    const key = fresh('incomplete');
    const noAgent = await store('alice', 'alice', { key, content: 'x', scope: 'private' });
    expect(noAgent.status).toBe(422);
    expect(json(noAgent)).toMatchObject({ code: 'scope_owner_required', errors: [expect.objectContaining({ path: 'body.agentId' })] });
    const noSession = await store('writer', 'alice', { key, content: 'x', scope: 'session' });
    expect(noSession.status).toBe(422);
    expect(json(noSession)).toMatchObject({ code: 'scope_owner_required', errors: [expect.objectContaining({ path: 'body.sessionId' })] });
    expect((await get('alice', 'alice', key)).status).toBe(404);
    // An agent-bound principal may not write as another agent.
    expect((await store('writer', 'alice', { key, content: 'x', scope: 'private', agentId: 'researcher' })).status).toBe(403);
  });

  it('the default scope is user: every agent of the user sees it, as before scopes', async () => {
    const key = fresh('shared');
    expect(json(await store('researcher', 'alice', { key, content: 'team notes' }))).toMatchObject({ scope: 'user' });
    expect((await get('writer', 'alice', key)).status).toBe(200);
    expect((await get('editor', 'alice', key, 'sessionId=anything')).status).toBe(200);
    expect((await get('bob', 'bob', key)).status).toBe(404);
  });
});

describe('session memory', () => {
  it('is seen by every agent acting in its session, and by none acting in another', async () => {
    const key = fresh('plan');
    const sessionId = fresh('s');
    expect(json(await store('researcher', 'alice', { key, content: 'the session plan', scope: 'session', sessionId }))).toMatchObject({ scope: 'session', sessionId });
    for (const agent of ['researcher', 'writer', 'editor']) {
      expect((await get(agent, 'alice', key, `sessionId=${sessionId}`)).status, agent).toBe(200);
      expect(await listed(agent, 'alice', `sessionId=${sessionId}`), agent).toContain(key);
    }
    const other = fresh('s');
    expect((await get('writer', 'alice', key, `sessionId=${other}`)).status).toBe(404);
    expect(await listed('writer', 'alice', `sessionId=${other}`)).not.toContain(key);
    expect(await searched('writer', 'alice', 'session plan', { sessionId: other })).toEqual([]);
    expect(await searched('writer', 'alice', 'session plan', { sessionId })).toEqual([key]);
  });
});

describe('global memory', () => {
  it('is written only by an admin principal, and read by every user', async () => {
    const key = fresh('house-style');
    expect((await store('alice', 'alice', { key, content: 'write in plain English', scope: 'global' })).status).toBe(403);
    expect((await store('serviceAgent', 'alice', { key, content: 'write in plain English', scope: 'global' })).status).toBe(403);
    const res = await store('admin', 'alice', { key, content: 'the house style: write in plain English', scope: 'global' });
    expect(res.status).toBe(201);
    // It belongs to no user: stored under the reserved owner.
    expect(json(res)).toMatchObject({ key, scope: 'global', userId: '@global' });

    expect(json(await get('bob', 'bob', key)).content).toBe('the house style: write in plain English');
    expect((await get('writer', 'alice', key, 'sessionId=any')).status).toBe(200);
    expect(await listed('bob', 'bob')).toContain(key);
    expect(await listed('bob', 'bob', 'scope=global')).toContain(key);
    expect(await listed('bob', 'bob', 'scope=user')).not.toContain(key);
    expect(await searched('bob', 'bob', 'house style')).toContain(key);

    // Only the admin deletes it.
    expect((await del('bob', 'bob', key)).status).toBe(403);
    expect((await del('admin', 'bob', key)).status).toBe(200);
    expect((await get('bob', 'bob', key)).status).toBe(404);
  });
});

describe('snapshot / restore', () => {
  const snapshot = (who: string, body: object) => callRoute(route('http-snapshots-create'), { userId: 'alice' }, { headers: as(who), body });
  const restore = (who: string, snapshotId: string, body: object) => callRoute(route('http-snapshot-restore'), { userId: 'alice', snapshotId }, { headers: as(who), body });

  it('gives the restoring agent exactly the restored copies: private to it, invisible to every other agent', async () => {
    const mine = fresh('planner-notes');
    const shared = fresh('brief');
    const secret = fresh('researcher-only');
    await store('planner', 'alice', { key: mine, content: 'the planner draft', scope: 'private' });
    await store('planner', 'alice', { key: shared, content: 'the brief for everyone' });
    await store('researcher', 'alice', { key: secret, content: 'not for the planner', scope: 'private' });

    // A snapshot holds only what its creator sees: the researcher's private key is unknown to the planner.
    const refused = await snapshot('alice', { keys: [mine, secret], fromAgentId: 'planner', agentId: 'editor' });
    expect(refused.status).toBe(404);
    expect(json(refused)).toMatchObject({ missing: [secret] });

    const created = await snapshot('alice', { keys: [mine, shared], fromAgentId: 'planner', agentId: 'editor' });
    expect(created.status).toBe(201);
    const snapshotId = json(created).snapshotId as string;
    const restored = await restore('editor', snapshotId, { agentId: 'editor' });
    expect(restored.status).toBe(200);
    const copies = (json(restored).restored as { from: string; key: string }[]).map((r) => r.key).sort();
    expect(copies).toHaveLength(2);

    // The editor's private memory is exactly the copies; they are readable by it.
    expect((await listed('editor', 'alice', 'scope=private')).sort()).toEqual(copies);
    for (const copy of copies) expect(json(await get('editor', 'alice', copy))).toMatchObject({ scope: 'private', agentId: 'editor' });
    // No other agent sees a copy.
    for (const agent of ['planner', 'writer', 'researcher']) {
      for (const copy of copies) expect((await get(agent, 'alice', copy)).status, agent).toBe(404);
      expect(await listed(agent, 'alice'), agent).not.toEqual(expect.arrayContaining([copies[0]]));
    }
    // Restoring for another agent: the editor's principal may not act as it.
    expect((await restore('editor', snapshotId, { agentId: 'writer' })).status).toBe(403);
  });
});
