import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as handoffHandler } from '../../../functions/http-session-handoffs-create.js';
import { handler as sessionHandler } from '../../../functions/http-session-get.js';
import { handler as createMemoryHandler } from '../../../functions/http-memories-create.js';
import { projectSession, touchedSessions } from '../../../shared/application/project-session.js';
import type { ContextResponse } from '../../../shared/contracts/context.js';
import type { SessionStatus } from '../../../shared/contracts/sessions.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

let runtime: Runtime;
beforeAll(async () => {
  runtime = await memoryRuntime({ K_TURN_BUFFER: '4', N_ACTIVE_TURNS: '2' });
});
afterAll(() => runtime.close());

let n = 0;
const fresh = () => ({ userId: `thread-user-${++n}`, sessionId: 'sess-1' });
type Key = ReturnType<typeof fresh>;
const base = (k: Key) => `v1/users/${k.userId}/sessions/${k.sessionId}`;

const say = (agentId: string | undefined, content: string, role: 'user' | 'assistant' = 'assistant') => ({ role, content, ...(agentId && { agentId }) });

async function append(key: Key, turns: object[]) {
  const res = await appendHandler(request('POST', `${base(key)}/turns`, { params: key, body: { turns } }), context('http-turns-append'));
  expect(res.status).toBe(202);
}

async function project() {
  for (;;) {
    const { events } = await runtime.changeFeed!.readFeed(null, 100_000);
    const results = await Promise.all(touchedSessions(events).map((key) => projectSession(runtime, key)));
    if (results.every((r) => r.interactionsWritten === 0)) return;
  }
}

async function contextOf(key: Key, agentId?: string): Promise<ContextResponse> {
  const res = await contextHandler(request('GET', `${base(key)}/context${agentId ? `?agentId=${agentId}` : ''}`, { params: key }), context('http-context-get'));
  expect(res.status).toBe(200);
  return json(res) as unknown as ContextResponse;
}

async function handoff(key: Key, body: object) {
  return handoffHandler(request('POST', `${base(key)}/handoffs`, { params: key, body }), context('http-session-handoffs-create'));
}

async function status(key: Key): Promise<SessionStatus> {
  return json(await sessionHandler(request('GET', base(key), { params: key }), context('http-session-get'))) as unknown as SessionStatus;
}

describe('per-agent threads', () => {
  it('gives each agent its own turns, window summaries and at least N verbatim turns; the whole session stays as before', async () => {
    const key = fresh();
    const turns = [];
    for (let i = 1; i <= 6; i++) turns.push(say('planner', `planner step ${i} about the itinerary`), say('researcher', `researcher finding ${i} about coral reefs`));
    await append(key, turns);
    await project();

    const s = await status(key);
    expect(s.threads).toEqual([
      { agentId: 'planner', turnCount: 6, chunkedThroughSeq: expect.any(Number) },
      { agentId: 'researcher', turnCount: 6, chunkedThroughSeq: expect.any(Number) },
    ]);
    expect(s.agentIds).toEqual(['planner', 'researcher']);

    const planner = await contextOf(key, 'planner');
    expect(planner.agentId).toBe('planner');
    expect(planner.sections.turns.every((t) => t.agentId === 'planner')).toBe(true);
    expect(planner.sections.turns.length).toBeGreaterThanOrEqual(2);
    expect(planner.sections.summary).not.toBe('');
    expect(planner.sections.otherAgents!.map((a) => a.agentId)).toEqual(['researcher']);
    // Every planner turn is verbatim or covered by the planner's own summary.
    const plannerThread = s.threads.find((t) => t.agentId === 'planner')!;
    const verbatim = new Set(planner.sections.turns.map((t) => t.seq));
    for (let seq = 1; seq <= 12; seq += 2) expect(verbatim.has(seq) || seq <= plannerThread.chunkedThroughSeq).toBe(true);

    const whole = await contextOf(key);
    expect(whole.agentId).toBeUndefined();
    expect(whole.sections.otherAgents).toBeUndefined();
    expect(whole.sections.summary).toMatch(/^planner: .*\nresearcher: /s);
    expect(new Set(whole.sections.turns.map((t) => t.agentId))).toEqual(new Set(['planner', 'researcher']));
  });

  it('shows the turns that name no agent to every agent', async () => {
    const key = fresh();
    await append(key, [say(undefined, 'Everyone: the deadline is Friday.', 'user'), say('planner', 'Noted.'), say('writer', 'Will draft by Thursday.')]);
    const planner = await contextOf(key, 'planner');
    expect(planner.sections.turns.map((t) => t.content)).toEqual(['Everyone: the deadline is Friday.', 'Noted.']);
    const writer = await contextOf(key, 'writer');
    expect(writer.sections.turns.map((t) => t.content)).toEqual(['Everyone: the deadline is Friday.', 'Will draft by Thursday.']);
  });
});

describe('handoffs', () => {
  it('starts the receiver\'s next context with who handed over, the note, the sender\'s thread and the memory passed along', async () => {
    const key = fresh();
    await append(key, [say('researcher', 'Found that reef bleaching follows a 1.5 degree rise.'), say('researcher', 'Saved the sources.')]);
    const stored = await createMemoryHandler(
      request('POST', `v1/users/${key.userId}/memories`, { params: { userId: key.userId }, body: { key: 'reef-sources', content: 'source list: NOAA 2024, GBRMPA 2023', sessionId: key.sessionId, agentId: 'researcher' } }),
      context('http-memories-create'),
    );
    expect(stored.status).toBe(201);

    const res = await handoff(key, { fromAgentId: 'researcher', toAgentId: 'writer', note: 'Write the intro from these notes.', memoryKeys: ['reef-sources'], handoffId: 'h-1' });
    expect(res.status).toBe(201);
    expect(json(res)).toEqual({ handoffId: 'h-1', seq: 3 });
    // A retry is harmless: same answer, one event.
    expect(json(await handoff(key, { fromAgentId: 'researcher', toAgentId: 'writer', memoryKeys: ['reef-sources'], handoffId: 'h-1' }))).toEqual({ handoffId: 'h-1', seq: 3 });
    expect(await runtime.events.lastSeq(key)).toBe(3);

    // Read before the projection has caught up: the handoff is folded from the stream.
    const writer = await contextOf(key, 'writer');
    expect(writer.sections.handoff).toMatchObject({ fromAgentId: 'researcher', note: 'Write the intro from these notes.', memoryRefs: [{ key: 'reef-sources' }] });
    expect(writer.sections.handoff!.senderSummary).toContain('1.5 degree');
    expect(writer.text).toMatch(/^### Handoff\nFrom researcher at .*: Write the intro from these notes\./);
    expect(writer.text).toContain('[MemoryRef: reef-sources - ');
    expect((await contextOf(key, 'researcher')).sections.handoff).toBeNull();

    await project();
    const s = await status(key);
    expect(s).toMatchObject({ activeAgentId: 'writer', agentIds: ['researcher', 'writer'] });
    expect(s.handoffs).toEqual([expect.objectContaining({ handoffId: 'h-1', fromAgentId: 'researcher', toAgentId: 'writer', memoryKeys: ['reef-sources'] })]);
  });

  it('refuses a handoff to oneself, of unknown memory, in an unknown or ended session', async () => {
    const key = fresh();
    expect((await handoff(key, { fromAgentId: 'a', toAgentId: 'b' })).status).toBe(404);
    await append(key, [say('a', 'hello')]);
    expect(json(await handoff(key, { fromAgentId: 'a', toAgentId: 'a' }))).toMatchObject({ code: 'validation_failed' });
    expect(json(await handoff(key, { fromAgentId: 'a', toAgentId: 'b', memoryKeys: ['nope'] }))).toMatchObject({ code: 'not_found' });
    await runtime.events.append(key, [{ type: 'SessionEndRequested', data: { reason: 'client' } }], new Date());
    expect(json(await handoff(key, { fromAgentId: 'a', toAgentId: 'b' }))).toMatchObject({ code: 'session_ended' });
    expect(await runtime.events.lastSeq(key)).toBe(2);
  });
});
