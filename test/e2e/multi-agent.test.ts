import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ContextResponse } from '../../shared/contracts/context.js';
import type { SessionStatus } from '../../shared/contracts/sessions.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-multi-agent-'));
let host: Host;

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  process.env.K_TURN_BUFFER = '4';
  process.env.N_ACTIVE_TURNS = '2';
  host = await startLocalHost({ port: 0 });
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const api = (path: string, init?: RequestInit) => fetch(`${host.url}/${path}`, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } });
const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) => api(path, { method, body: JSON.stringify(body), headers });
const json = async <T>(response: Response | Promise<Response>, status = 200): Promise<T> => {
  const r = await response;
  expect(r.status, await r.clone().text()).toBe(status);
  return (await r.json()) as T;
};

const U = 'team-user';
const S = `v1/users/${U}/sessions/s1`;
const say = (agentId: string, role: 'user' | 'assistant', content: string) => ({ role, content, agentId });
const contextOf = (agentId: string, sessionId = 's1') => json<ContextResponse>(api(`v1/users/${U}/sessions/${sessionId}/context?agentId=${agentId}`));
const slotNames = (c: ContextResponse) => (c.sections.slots ?? []).map((s) => s.name).sort();

async function settled(path: string) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(25)) {
    const status = await json<SessionStatus>(api(path));
    if (status.pending === 0 && status.lastSeq > 0) return status;
  }
  throw new Error('the projection did not settle');
}

describe('three agents in one session: planner, researcher (private notes), writer', () => {
  it('keeps threads apart, hides private memory until it is handed over, shares session and user slots, and refuses a stale write', async () => {
    // The planner plans; a session slot holds the brief every agent reads.
    await json(send('POST', `${S}/turns`, { turns: [
      say('planner', 'user', 'Plan an article on coral reef bleaching for a general audience.'),
      say('planner', 'assistant', 'Plan: causes, consequences, what readers can do. Research first.'),
      say('planner', 'user', 'Keep it under 800 words.'),
      say('planner', 'assistant', 'Noted: 800 words, three sections, friendly tone.'),
    ] }), 202);
    const brief = await send('PUT', `v1/users/${U}/slots/brief?scope=session&sessionId=s1&agentId=planner`, { value: { topic: 'coral reef bleaching', words: 800 } });
    expect(brief.status).toBe(201);
    const briefTag = brief.headers.get('etag')!;

    // The researcher works with a tool and keeps private notes: a private slot and a private artifact.
    await json(send('POST', `${S}/turns`, { turns: [
      say('researcher', 'user', 'Find what causes bleaching.'),
      { role: 'assistant', content: null, agentId: 'researcher', toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'search', arguments: '{"q":"reef bleaching cause"}' } }] },
      { role: 'tool', name: 'search', toolCallId: 'call_1', agentId: 'researcher', content: 'NOAA: bleaching follows sea temperatures 1 degree above the summer maximum.' },
      say('researcher', 'assistant', 'Cause: heat stress; corals expel their algae when water stays too warm.'),
    ] }), 202);
    await json(send('PUT', `v1/users/${U}/slots/notes?scope=private&agentId=researcher`, { value: 'NOAA threshold: +1 C over the summer maximum' }), 201);
    await json(send('POST', `v1/users/${U}/memories`, { key: 'reef-sources', content: 'Sources: NOAA Coral Reef Watch; GBRMPA 2024 report.', scope: 'private', agentId: 'researcher', sessionId: 's1' }), 201);

    // Before the handoff the writer sees the brief, not the researcher's notes or sources.
    const before = await contextOf('writer');
    expect(slotNames(before)).toEqual(['brief']);
    expect(before.text).not.toContain('reef-sources');
    expect((await api(`v1/users/${U}/memories/reef-sources?agentId=writer&sessionId=s1`)).status).toBe(404);
    const listed = await json<{ items: { key: string }[] }>(api(`v1/users/${U}/memories?agentId=writer&sessionId=s1`));
    expect(listed.items.map((i) => i.key)).not.toContain('reef-sources');
    expect(slotNames(await contextOf('researcher'))).toEqual(['brief', 'notes']);
    expect(slotNames(await contextOf('planner'))).toEqual(['brief']);

    // The handoff passes the sources and the notes to the writer (and to no one else).
    await json(send('POST', `${S}/handoffs`, { fromAgentId: 'researcher', toAgentId: 'writer', note: 'Draft the intro from my notes.', memoryKeys: ['reef-sources', 'slot:notes'] }), 201);
    const writer = await contextOf('writer');
    expect(writer.text).toMatch(/^### Handoff\nFrom researcher at .*: Draft the intro from my notes\./);
    expect(writer.sections.handoff!.memoryRefs.map((r) => r.key)).toEqual(['reef-sources']);
    expect(slotNames(writer)).toEqual(['brief', 'notes']);
    const writerSlots = await json<{ items: { name: string; scope: string }[] }>(api(`v1/users/${U}/slots?agentId=writer&sessionId=s1`));
    expect(writerSlots.items.map((i) => `${i.scope}:${i.name}`).sort()).toEqual(['private:notes', 'session:brief']);
    expect((await json<{ content: string }>(api(`v1/users/${U}/memories/reef-sources?agentId=writer&sessionId=s1`))).content).toContain('NOAA Coral Reef Watch');
    expect((await api(`v1/users/${U}/memories/reef-sources?agentId=planner&sessionId=s1`)).status).toBe(404);
    expect(slotNames(await contextOf('planner'))).toEqual(['brief']);

    // Each agent's context holds its own turns, and what the others did as their summaries.
    await json(send('POST', `${S}/turns`, { turns: [say('writer', 'assistant', 'Intro: when the sea stays too warm, corals turn white.')] }), 202);
    const status = await settled(S);
    expect(status).toMatchObject({ activeAgentId: 'writer', agentIds: ['planner', 'researcher', 'writer'] });
    expect(status.handoffs.map((h) => [h.fromAgentId, h.toAgentId])).toEqual([['researcher', 'writer']]);
    for (const agent of ['planner', 'researcher', 'writer']) {
      const context = await contextOf(agent);
      expect(context.sections.turns.length).toBeGreaterThan(0);
      expect(context.sections.turns.every((t) => t.agentId === agent), agent).toBe(true);
    }
    const planner = await contextOf('planner');
    expect(planner.sections.summary).not.toBe('');
    expect(planner.sections.otherAgents!.map((a) => a.agentId)).toEqual(['researcher']);

    // A stale If-Match loses: 412, and the brief keeps the winner's value.
    await json(send('PUT', `v1/users/${U}/slots/brief?scope=session&sessionId=s1&agentId=writer`, { value: { topic: 'coral reef bleaching', words: 900 } }, { 'if-match': briefTag }), 200);
    const stale = await send('PUT', `v1/users/${U}/slots/brief?scope=session&sessionId=s1&agentId=planner`, { value: { topic: 'something else' } }, { 'if-match': briefTag });
    expect(stale.status).toBe(412);
    expect((await stale.json()) as { code: string }).toMatchObject({ code: 'precondition_failed' });
    expect(await json<{ value: unknown; version: number }>(api(`v1/users/${U}/slots/brief?scope=session&sessionId=s1`))).toMatchObject({ value: { words: 900 }, version: 2 });

    // A user slot follows the user into the next session; the session slot stays with its session.
    await json(send('PUT', `v1/users/${U}/slots/style?scope=user`, { value: 'plain words, short sentences' }), 201);
    await json(send('POST', `v1/users/${U}/sessions/s2/turns`, { turns: [say('writer', 'user', 'Next article: kelp forests.')] }), 202);
    expect(slotNames(await contextOf('writer', 's2'))).toEqual(['style']);
  }, 180_000);
});
