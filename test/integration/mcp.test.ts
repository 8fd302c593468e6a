import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { turnArtifactKey } from '../../shared/application/offload.js';
import type { OrchestrationClient } from '../../shared/application/operation-ports.js';
import { CreateSnapshotBody, GetMemoryQuery, MemoryKeyParams, RestoreSnapshotBody, SearchMemoriesQuery, SnapshotParams, StoreMemoryBody, ViewerQuery } from '../../shared/contracts/artifacts.js';
import { ContextQuery } from '../../shared/contracts/context.js';
import { FactSearchBody } from '../../shared/contracts/facts.js';
import { SessionKey } from '../../shared/contracts/ids.js';
import { HandoffBody } from '../../shared/contracts/sessions.js';
import { PutSlotBody, SlotParams, SlotQuery } from '../../shared/contracts/slots.js';
import { AppendTurnsBody } from '../../shared/contracts/turns.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { createMcpServer } from '../../shared/platform/mcp/server.js';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { handler as projectionQueueHandler } from '../../functions/timer-projection-queue.js';
import { MCP_TOOLS } from '../support/mcp-tools.js';
import { context, memoryRuntime } from '../support/runtime.js';

let runtime: Runtime;
let client: Client;
/** Orchestrations started by end_session (the HTTP function passes its durable client; here a recording stub). */
const started: { name: string; instanceId: string }[] = [];
const orchestrations: OrchestrationClient = {
  start: async (name, instanceId) => {
    const first = !started.some((s) => s.instanceId === instanceId);
    started.push({ name, instanceId });
    return { instanceId, started: first };
  },
  purge: async () => 0,
  status: async () => null,
};

beforeAll(async () => {
  runtime = await memoryRuntime();
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await createMcpServer(runtime, undefined, { orchestrations: () => orchestrations }).connect(serverTransport);
  client = new Client({ name: 'test-client', version: '1.0.0' });
  await client.connect(clientTransport);
});
afterAll(async () => {
  await client?.close();
  await runtime?.close();
});

const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as CallToolResult;
const textOf = (result: CallToolResult, i = 0) => {
  const part = result.content[i];
  if (part?.type !== 'text') throw new Error('expected text content');
  return part.text;
};

describe('MCP server (SDK client over the in-memory transport)', () => {
  it('lists the tools', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
  });

  it('takes the same fields as the HTTP contracts it is derived from, plus the ids of the path', async () => {
    const { tools } = await client.listTools();
    const fields = Object.fromEntries(tools.map((t) => [t.name, Object.keys(t.inputSchema.properties ?? {}).sort()]));
    const keys = (...shapes: object[]) => shapes.flatMap((shape) => Object.keys(shape)).sort();
    expect(fields).toEqual({
      store_memory: keys({ userId: 0 }, StoreMemoryBody.shape),
      retrieve_memory: keys(MemoryKeyParams.shape, GetMemoryQuery.shape),
      search_memory: keys({ userId: 0 }, SearchMemoriesQuery.shape),
      get_context: keys(SessionKey.shape, ContextQuery.shape),
      handoff: keys(SessionKey.shape, HandoffBody.shape),
      slot_get: keys(SlotParams.shape, SlotQuery.shape),
      slot_set: keys(SlotParams.shape, SlotQuery.shape, PutSlotBody.shape, { expectedVersion: 0 }),
      append_turns: keys(SessionKey.shape, AppendTurnsBody.shape),
      get_session: keys(SessionKey.shape),
      end_session: keys(SessionKey.shape),
      search_facts: keys({ userId: 0 }, FactSearchBody.shape),
      delete_memory: keys(MemoryKeyParams.shape, ViewerQuery.shape),
      create_snapshot: keys({ userId: 0 }, CreateSnapshotBody.shape),
      restore_snapshot: keys(SnapshotParams.shape, RestoreSnapshotBody.shape),
    });
    expect(tools.find((t) => t.name === 'append_turns')?.inputSchema.required).toEqual(expect.arrayContaining(['userId', 'sessionId', 'turns']));
    const ttlSeconds = tools.find((t) => t.name === 'store_memory')?.inputSchema.properties?.['ttlSeconds'];
    expect(ttlSeconds).toMatchObject({ minimum: 60, maximum: 31_536_000, description: expect.stringMatching(/seconds/) });
  });

  it('store_memory → retrieve_memory (full and transformed) → search_memory', async () => {
    const content = ['host=db.internal', 'port=5432', 'user=agent', 'ERROR password rotated yesterday'].join('\n');
    const stored = JSON.parse(textOf(await call('store_memory', { userId: 'mcp-u1', content, type: 'database_config', tags: ['db'] }))) as { key: string; tokens: number };
    expect(stored.key).toMatch(/^mem-/);

    expect(textOf(await call('retrieve_memory', { userId: 'mcp-u1', key: stored.key }))).toBe(content);
    expect(textOf(await call('retrieve_memory', { userId: 'mcp-u1', key: stored.key, transform: 'first_n', n: 2 }))).toBe('host=db.internal\nport=5432');
    expect(textOf(await call('retrieve_memory', { userId: 'mcp-u1', key: stored.key, transform: 'filtered', pattern: 'error' }))).toBe('ERROR password rotated yesterday');

    const found = JSON.parse(textOf(await call('search_memory', { userId: 'mcp-u1', query: 'which database port?' }))) as { hits: { key: string; excerpt: string }[] };
    expect(found.hits[0]?.key).toBe(stored.key);
    expect(JSON.parse(textOf(await call('search_memory', { userId: 'mcp-u2', query: 'database port' })))).toEqual({ hits: [] });
  });

  it('slot_set with an expected version, slot_get; a stale version is precondition_failed and changes nothing', async () => {
    const set = async (args: Record<string, unknown>) => call('slot_set', { userId: 'mcp-slots', name: 'task_plan', ...args });
    const created = JSON.parse(textOf(await set({ value: { steps: ['a'] }, expectedVersion: 0 }))) as { version: number };
    expect(created.version).toBe(1);
    expect(textOf(await set({ value: 'again', expectedVersion: 0 }))).toMatch(/^precondition_failed:/);
    expect(JSON.parse(textOf(await set({ value: { steps: ['a', 'b'] }, expectedVersion: 1 })))).toMatchObject({ version: 2 });
    const stale = await set({ value: 'lost', expectedVersion: 1 });
    expect(stale.isError).toBe(true);
    expect(textOf(stale)).toMatch(/^precondition_failed:/);
    expect(JSON.parse(textOf(await call('slot_get', { userId: 'mcp-slots', name: 'task_plan' })))).toMatchObject({ value: { steps: ['a', 'b'] }, version: 2 });
    expect(textOf(await call('slot_get', { userId: 'mcp-slots', name: 'task_plan', scope: 'private' }))).toMatch(/^scope_owner_required:/);
  });

  it('reports bad input as tool errors with the stable code', async () => {
    const missing = await call('retrieve_memory', { userId: 'mcp-u1', key: 'nope' });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/^not_found:/);
    const other = await call('store_memory', { userId: 'mcp-u3', content: 'x' });
    const key = (JSON.parse(textOf(other)) as { key: string }).key;
    expect(textOf(await call('retrieve_memory', { userId: 'mcp-u4', key }))).toMatch(/^not_found:/);
    const badPattern = await call('retrieve_memory', { userId: 'mcp-u3', key, transform: 'filtered' });
    expect(badPattern.isError).toBe(true);
    expect(textOf(badPattern)).toMatch(/^validation_failed:/);
  });

  it('store_memory takes a TTL class or seconds (not both) and reports expiresAt', async () => {
    const working = JSON.parse(textOf(await call('store_memory', { userId: 'mcp-u6', content: 'scratch', ttlClass: 'working' }))) as { createdAt: string; expiresAt: string };
    expect(Date.parse(working.expiresAt) - Date.parse(working.createdAt)).toBe(30 * 60 * 1000);
    const both = await call('store_memory', { userId: 'mcp-u6', content: 'scratch', ttlClass: 'working', ttlSeconds: 600 });
    expect(both.isError).toBe(true);
    expect(textOf(both)).toMatch(/^validation_failed:.*not both/);
  });

  it('get_context shows offloaded tool output as a MemoryRef once answered', async () => {
    const key = { userId: 'mcp-u5', sessionId: 's1' };
    const output = Array.from({ length: 400 }, (_, i) => `line ${i}: value ${i * 3}`).join('\n');
    await appendTurns(runtime, key, {
      turns: [
        { role: 'tool', content: output, turnId: 'tool-1', name: 'query' },
        { role: 'assistant', content: 'Done.', turnId: 'a-1' },
      ],
    });
    const result = await call('get_context', key);
    const ref = turnArtifactKey(key, 'tool-1');
    expect(textOf(result)).toContain(`[MemoryRef: ${ref} - query:`);
    expect(JSON.parse(textOf(result, 1))).toMatchObject({ memoryRefs: [{ key: ref }] });
    expect(textOf(await call('retrieve_memory', { ...key, key: ref }))).toBe(output);
  });

  it('handoff → get_context as the receiver starts with the handoff block', async () => {
    const key = { userId: 'mcp-u7', sessionId: 's1' };
    await appendTurns(runtime, key, { turns: [{ role: 'assistant', content: 'Outline ready: three sections.', agentId: 'planner' }] });
    const recorded = JSON.parse(textOf(await call('handoff', { ...key, fromAgentId: 'planner', toAgentId: 'writer', note: 'Draft section one.' }))) as { handoffId: string; seq: number };
    expect(recorded.seq).toBe(2);
    const context = textOf(await call('get_context', { ...key, agentId: 'writer' }));
    expect(context).toMatch(/^### Handoff\nFrom planner at .*: Draft section one\.\nplanner's thread: assistant: Outline ready/);
    const self = await call('handoff', { ...key, fromAgentId: 'planner', toAgentId: 'planner' });
    expect(self.isError).toBe(true);
    expect(textOf(self)).toMatch(/^validation_failed:/);
  });

  it('append_turns → get_session → search_facts (both modes) → end_session, through the same use cases as the routes', async () => {
    const key = { userId: 'mcp-u8', sessionId: 's1' };
    const turns = [
      { role: 'user', content: 'My sister Ingrid lives in Tromsø and keeps bees.', turnId: 't1' },
      { role: 'assistant', content: 'Tromsø is far north; beekeeping there must be a challenge.', turnId: 't2' },
    ];
    const accepted = JSON.parse(textOf(await call('append_turns', { ...key, turns }))) as { accepted: { turnId: string; seq: number }[] };
    expect(accepted.accepted).toEqual([{ turnId: 't1', seq: 1 }, { turnId: 't2', seq: 2 }]);
    // A retry with the same turnIds gets the same seqs back.
    expect(JSON.parse(textOf(await call('append_turns', { ...key, turns })))).toEqual(accepted);
    const duplicate = await call('append_turns', { ...key, turns: [turns[0], turns[0]] });
    // The SDK checks the shape's own refinements first (an MCP error result); the contract's parse then the rest.
    expect(duplicate.isError).toBe(true);
    expect(textOf(duplicate)).toMatch(/turnIds must be unique/);

    const { events } = await runtime.changeFeed!.readFeed(null, 100_000);
    await projectHandler(events, context('cosmos-events-project'));
    await projectionQueueHandler({} as never, context('timer-projection-queue')); // the init block the feed left queued
    const status = JSON.parse(textOf(await call('get_session', key))) as { status: string; turnCount: number };
    expect(status).toMatchObject({ status: 'active', turnCount: 2, pending: 0 });
    expect(textOf(await call('get_session', { ...key, sessionId: 'unknown' }))).toMatch(/^not_found:/);

    const search = JSON.parse(textOf(await call('search_facts', { userId: key.userId, query: 'Where does Ingrid live?', sources: ['turns'] }))) as { facts: { text: string; turnIds: string[] }[] };
    expect(search.facts[0]?.turnIds).toEqual(['t1']);
    const agent = JSON.parse(textOf(await call('search_facts', { userId: key.userId, query: 'Where does Ingrid live?', mode: 'agent' }))) as { facts: unknown[]; answer?: string };
    expect(typeof agent.answer).toBe('string');
    expect((await call('search_facts', { userId: key.userId, query: 'x', topK: 0 })).isError).toBe(true);

    const ended = JSON.parse(textOf(await call('end_session', key))) as { operationId: string };
    expect(ended.operationId).toBe('session-end:mcp-u8:s1');
    expect(started.at(-1)).toEqual({ name: 'orch-session-end', instanceId: 'session-end:mcp-u8:s1' });
    expect(textOf(await call('append_turns', { ...key, turns: [{ role: 'user', content: 'one more' }] }))).toMatch(/^session_ended:/);
  });

  it('create_snapshot → restore_snapshot → delete_memory', async () => {
    const userId = 'mcp-u9';
    const { key } = JSON.parse(textOf(await call('store_memory', { userId, content: 'the launch checklist' }))) as { key: string };
    const snapshot = JSON.parse(textOf(await call('create_snapshot', { userId, keys: [key] }))) as { snapshotId: string; keys: string[] };
    expect(snapshot.keys).toEqual([key]);
    const restored = JSON.parse(textOf(await call('restore_snapshot', { userId, snapshotId: snapshot.snapshotId, agentId: 'helper' }))) as { restored: { from: string; key: string }[]; missing: string[] };
    expect(restored.restored.map((r) => r.from)).toEqual([key]);
    expect(textOf(await call('retrieve_memory', { userId, key: restored.restored[0]!.key }))).toBe('the launch checklist');

    expect(JSON.parse(textOf(await call('delete_memory', { userId, key })))).toEqual({ key, deleted: true });
    expect(textOf(await call('retrieve_memory', { userId, key }))).toMatch(/^not_found:/);
    expect(textOf(await call('delete_memory', { userId, key }))).toMatch(/^not_found:/);
    expect(textOf(await call('create_snapshot', { userId, keys: [key] }))).toMatch(/^not_found:/);
    const again = JSON.parse(textOf(await call('restore_snapshot', { userId, snapshotId: snapshot.snapshotId, agentId: 'helper2' }))) as { missing: string[] };
    expect(again.missing).toEqual([key]);
  });

  it('end_session without an orchestration client (stdio) is a tool error, not a crash', async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await createMcpServer(runtime).connect(serverTransport);
    const bare = new Client({ name: 'stdio-like', version: '1.0.0' });
    await bare.connect(clientTransport);
    await appendTurns(runtime, { userId: 'mcp-u10', sessionId: 's1' }, { turns: [{ role: 'user', content: 'hello' }] });
    const result = (await bare.callTool({ name: 'end_session', arguments: { userId: 'mcp-u10', sessionId: 's1' } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^upstream_unavailable:/);
    await bare.close();
  });
});

describe('MCP slot tools check the principal like the routes', () => {
  it('an agent-bound principal writes its own private slots, not another agent\'s, and no global slot', async () => {
    const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
    await createMcpServer(runtime, { via: 'apikey', subject: 'key:test', allUsers: false, userId: 'mcp-agent-user', agentId: 'planner' }).connect(serverTransport);
    const agent = new Client({ name: 'agent-client', version: '1.0.0' });
    await agent.connect(clientTransport);
    const callAs = async (name: string, args: Record<string, unknown>) => (await agent.callTool({ name, arguments: args })) as CallToolResult;
    const base = { userId: 'mcp-agent-user', name: 'notes', scope: 'private' };
    expect(JSON.parse(textOf(await callAs('slot_set', { ...base, value: 'mine' })))).toMatchObject({ agentId: 'planner', version: 1 });
    expect(textOf(await callAs('slot_set', { ...base, value: 'theirs', agentId: 'writer' }))).toMatch(/^forbidden:/);
    expect(textOf(await callAs('slot_set', { ...base, scope: 'global', value: 'x' }))).toMatch(/^forbidden:/);
    expect(textOf(await callAs('slot_get', { ...base, userId: 'someone-else' }))).toMatch(/^forbidden:/);
    expect(JSON.parse(textOf(await callAs('slot_get', base)))).toMatchObject({ value: 'mine' });
    await agent.close();
  });
});
