import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { turnArtifactKey } from '../../shared/application/offload.js';
import { GetMemoryQuery, MemoryKeyParams, SearchMemoriesQuery, StoreMemoryBody } from '../../shared/contracts/artifacts.js';
import { ContextQuery } from '../../shared/contracts/context.js';
import { SessionKey } from '../../shared/contracts/ids.js';
import { HandoffBody } from '../../shared/contracts/sessions.js';
import { PutSlotBody, SlotParams, SlotQuery } from '../../shared/contracts/slots.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { createMcpServer } from '../../shared/platform/mcp/server.js';
import { memoryRuntime } from '../support/runtime.js';

let runtime: Runtime;
let client: Client;

beforeAll(async () => {
  runtime = await memoryRuntime();
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair();
  await createMcpServer(runtime).connect(serverTransport);
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
    expect(tools.map((t) => t.name).sort()).toEqual(['get_context', 'handoff', 'retrieve_memory', 'search_memory', 'slot_get', 'slot_set', 'store_memory']);
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
    });
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
