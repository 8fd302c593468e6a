import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../shared/application/auth.js';
import { MemoryClient, MemoryServiceError } from '../../shared/client/index.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

// The TypeScript client against the real local host (API keys on), over real HTTP: every route once.

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-e2e-client-'));
let host: Host;
let memory: MemoryClient;
let serviceKey: string;

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  process.env.AUTH_MODE = 'apikey';
  host = await startLocalHost({ port: 0, timers: false, durable: { delayScale: 0 } });
  serviceKey = (await createApiKey(host.runtime.apiKeys, { label: 'client-e2e' }, new Date())).key;
  memory = new MemoryClient({ baseUrl: host.url, auth: async () => ({ apiKey: serviceKey }) });
});
afterAll(async () => {
  await host?.stop();
  delete process.env.AUTH_MODE;
  rmSync(dataDir, { recursive: true, force: true });
});

async function settled(userId: string, sessionId: string) {
  for (let i = 0; i < 2000; i++) {
    const status = await memory.getSession(userId, sessionId);
    if (status.pending === 0 && status.lastSeq > 0) return status;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`session ${sessionId} did not settle`);
}

describe('MemoryClient against the local host', () => {
  it('health is public; a request without credentials is a MemoryServiceError unauthorized; the auth callback is asked per request', async () => {
    const anonymous = new MemoryClient({ baseUrl: host.url });
    expect(await anonymous.health()).toMatchObject({ status: 'ok', storage: 'pglite' });
    const error = await anonymous.getSession('alice', 's1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemoryServiceError);
    expect(error).toMatchObject({ code: 'unauthorized', status: 401 });
    expect((error as MemoryServiceError).problem).toMatchObject({ code: 'unauthorized', status: 401 });

    const aliceKey = (await createApiKey(host.runtime.apiKeys, { userId: 'alice' }, new Date())).key;
    let asked = 0;
    const alice = new MemoryClient({ baseUrl: host.url, auth: () => (asked++, { bearer: aliceKey }) });
    await alice.appendTurns('alice', 'a1', [{ role: 'user', content: 'hello' }]);
    await expect(alice.listInsights('bob')).rejects.toMatchObject({ code: 'forbidden', status: 403 });
    expect(asked).toBe(2);
  });

  it('a retry after a lost answer stores the turns once: the client made their turnIds before the first attempt', async () => {
    let dropped = false;
    // The first append reaches the service, which stores it; its answer is "lost" on the way back.
    const lossy: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (!dropped && init?.method === 'POST') {
        dropped = true;
        await res.body?.cancel();
        throw new TypeError('fetch failed: socket hang up');
      }
      return res;
    };
    const delays: number[] = [];
    const client = new MemoryClient({ baseUrl: host.url, fetch: lossy, auth: async () => ({ apiKey: serviceKey }), sleep: async (ms) => void delays.push(ms) });
    const result = await client.appendTurns('u-retry', 's1', [
      { role: 'user', content: 'What is my balance?' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', function: { name: 'balance', arguments: '{}' } }] },
      { role: 'tool', content: '{"balance": 120}', toolCallId: 'call_1', name: 'balance' },
    ]);
    expect(dropped).toBe(true);
    expect(delays).toHaveLength(1);
    expect(result.accepted.map((a) => a.seq)).toEqual([1, 2, 3]);
    const events = [];
    for await (const event of memory.events('u-retry', 's1', { limit: 2 })) events.push(event);
    expect(events.filter((e) => e.type === 'TurnAppended').map((e) => e.data)).toHaveLength(3);
    expect(events.filter((e) => e.type === 'TurnAppended').map((e) => (e.data as { turnId: string }).turnId)).toEqual(result.accepted.map((a) => a.turnId));
  });

  it('sessions: context (agent view, budget), status, messages, handoff, end → operation; facts, insights, reflection → profile', async () => {
    const user = 'u-client';
    await memory.appendTurns(user, 's1', [
      { role: 'user', content: 'I am 52 and want to retire at 62.', agentId: 'planner' },
      { role: 'assistant', content: 'Noted: retire at 62.', agentId: 'planner' },
      { role: 'user', content: 'My dog Biscuit needs surgery next month.' },
    ]);
    await settled(user, 's1');
    const status = await memory.getSession(user, 's1');
    expect(status).toMatchObject({ turnCount: 3, status: 'active', agentIds: ['planner'] });

    const context = await memory.getContext(user, 's1', { maxTokens: 4000 });
    expect(context.sections.turns.map((t) => t.content)).toContain('My dog Biscuit needs surgery next month.');
    const planner = await memory.getContext(user, 's1', { agentId: 'planner' });
    expect(planner.agentId).toBe('planner');

    const openai = await memory.getMessages(user, 's1');
    expect(openai.format).toBe('openai');
    expect(openai.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    const raw = await memory.getMessages(user, 's1', { format: 'raw' });
    expect(raw.turns.map((t) => t.seq)).toEqual(raw.turns.map((t) => t.seq).sort((a, b) => a - b));

    const handoff = await memory.createHandoff(user, 's1', { fromAgentId: 'planner', toAgentId: 'vet', note: 'Ask about the surgery' });
    expect(handoff.handoffId).toMatch(/^[0-9a-f-]{36}$/);
    expect((await memory.getContext(user, 's1', { agentId: 'vet' })).sections.handoff).toMatchObject({ fromAgentId: 'planner', note: 'Ask about the surgery' });

    const { facts } = await memory.searchFacts(user, { query: 'Does the user have a dog?', sources: ['turns'], topK: 3 });
    expect(facts.map((f) => f.text).join('\n')).toContain('Biscuit');

    const { operationId } = await memory.endSession(user, 's1');
    expect(operationId).toBe(`session-end:${user}:s1`);
    expect(await memory.endSession(user, 's1')).toEqual({ operationId });
    expect(await memory.waitForOperation(operationId, { intervalMs: 50 })).toMatchObject({ operationId, status: 'completed' });
    await expect(memory.appendTurns(user, 's1', [{ role: 'user', content: 'late' }])).rejects.toMatchObject({ code: 'session_ended', status: 409 });

    const { insights } = await memory.listInsights(user, { type: 'session' });
    expect(insights.length).toBeGreaterThan(0);
    await expect(memory.getProfile(user)).rejects.toMatchObject({ code: 'not_found', status: 404 });
    const reflection = await memory.startReflection(user);
    expect(await memory.waitForOperation(reflection.operationId, { intervalMs: 50 })).toMatchObject({ status: 'completed' });
    expect((await memory.getProfile(user)).version).toBe(1);
    expect(await memory.getOperation(operationId)).toMatchObject({ status: 'completed', name: 'orch-session-end' });
  });

  it('detail memory: store, list by cursor, retrieve with a transform, snapshot and restore, delete', async () => {
    const user = 'u-memories';
    for (let i = 0; i < 5; i++) await memory.storeMemory(user, { key: `log-${i}`, content: `line one ${i}\nline two ${i}\nline three ${i}`, type: 'log', tags: ['ci'] });
    const page = await memory.listMemories(user, { tags: ['ci'], limit: 2 });
    expect(page.items).toHaveLength(2);
    expect(page.nextCursor).not.toBeNull();
    const keys: string[] = [];
    for await (const item of memory.memories(user, { tags: ['ci'], limit: 2 })) keys.push(item.key);
    expect(keys.sort()).toEqual(['log-0', 'log-1', 'log-2', 'log-3', 'log-4']);

    const first = await memory.getMemory(user, 'log-3', { transform: 'first_n', n: 1 });
    expect(first).toMatchObject({ content: 'line one 3', partial: true });
    const snapshot = await memory.createSnapshot(user, { keys: ['log-1', 'log-2'] });
    const restored = await memory.restoreSnapshot(user, snapshot.snapshotId, { agentId: 'sub-agent' });
    expect(restored.restored.map((r) => r.from)).toEqual(['log-1', 'log-2']);
    expect(await memory.deleteMemory(user, 'log-0')).toEqual({ key: 'log-0', deleted: true });
    await expect(memory.getMemory(user, 'log-0')).rejects.toMatchObject({ code: 'not_found' });
    await expect(memory.storeMemory(user, { key: 'log-1', content: 'different' })).rejects.toMatchObject({ code: 'conflict', status: 409 });
  });

  it('slots: create only if absent, read, conditional update (a stale version is precondition_failed), list, delete', async () => {
    const created = await memory.putSlot('slot-user', 'task_plan', { steps: ['draft'] }, { scope: 'session', sessionId: 's1', ifNoneMatch: true });
    expect(created).toMatchObject({ name: 'task_plan', scope: 'session', version: 1 });
    await expect(memory.putSlot('slot-user', 'task_plan', 'again', { scope: 'session', sessionId: 's1', ifNoneMatch: true })).rejects.toMatchObject({ code: 'precondition_failed', status: 412 });
    await memory.putSlot('slot-user', 'task_plan', { steps: ['draft', 'edit'] }, { scope: 'session', sessionId: 's1', ifMatch: 1 });
    await expect(memory.putSlot('slot-user', 'task_plan', 'stale', { scope: 'session', sessionId: 's1', ifMatch: 1 })).rejects.toBeInstanceOf(MemoryServiceError);
    expect(await memory.getSlot('slot-user', 'task_plan', { scope: 'session', sessionId: 's1' })).toMatchObject({ value: { steps: ['draft', 'edit'] }, version: 2 });
    expect((await memory.listSlots('slot-user', { sessionId: 's1' })).items.map((i) => i.name)).toEqual(['task_plan']);
    expect(await memory.deleteSlot('slot-user', 'task_plan', { scope: 'session', sessionId: 's1', ifMatch: 2 })).toMatchObject({ deleted: true, version: 3 });
  });

  it('forget a session and a user: operations complete and the data is gone', async () => {
    const user = 'u-forget';
    await memory.appendTurns(user, 'gone', [{ role: 'user', content: 'forget me' }]);
    await memory.appendTurns(user, 'kept', [{ role: 'user', content: 'keep me for now' }]);
    const session = await memory.forgetSession(user, 'gone');
    expect(await memory.waitForOperation(session.operationId, { intervalMs: 50 })).toMatchObject({ status: 'completed' });
    await expect(memory.getSession(user, 'gone')).rejects.toMatchObject({ code: 'not_found' });
    expect((await settled(user, 'kept')).turnCount).toBe(1);
    const all = await memory.forgetUser(user);
    expect(await memory.waitForOperation(all.operationId, { intervalMs: 50 })).toMatchObject({ status: 'completed' });
    await expect(memory.getSession(user, 'kept')).rejects.toMatchObject({ code: 'not_found' });
  });
});
