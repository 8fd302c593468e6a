import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as endHandler } from '../../../functions/http-session-end.js';
import { handler as operationHandler } from '../../../functions/http-operation-get.js';
import { handler as insightsHandler } from '../../../functions/http-insights-list.js';
import { handler as profileHandler } from '../../../functions/http-profile-get.js';
import { handler as reflectionHandler } from '../../../functions/http-reflection-start.js';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as sessionHandler } from '../../../functions/http-session-get.js';
import { handler as eventsHandler } from '../../../functions/http-session-events-list.js';
import { handler as sbHandler } from '../../../functions/sb-turns-append.js';
import { handler as idleHandler } from '../../../functions/timer-sessions-idle.js';
import { appendTurns } from '../../../shared/application/append-turns.js';
import { projectSession } from '../../../shared/application/project-session.js';
import { SCHEMA_VERSION } from '../../../shared/contracts/events.js';
import type { InsightDocument, InsightStatus } from '../../../shared/contracts/insights.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../../shared/platform/durable.js';
import { LocalDurableRunner } from '../../../shared/platform/local-host/durable-runner.js';
import { MemoryDurableStateStore } from '../../../shared/platform/local-host/durable-state.js';
import { loadFunctions } from '../../../shared/platform/local-host/functions.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';
import { ADVISOR_SESSION } from '../../support/scenarios.js';

const USER = 'client-1';

async function seed(runtime: Runtime, userId: string, sessionId: string, turns: { role: 'user' | 'assistant'; content: string }[]) {
  await appendTurns(runtime, { userId, sessionId }, { turns: turns.map((t, i) => ({ ...t, turnId: `${sessionId}-${i}` })) });
  await projectSession(runtime, { userId, sessionId });
}

describe('session end and long-term reflection (handlers + local durable runner)', () => {
  let runtime: Runtime;
  let runner: LocalDurableRunner;

  beforeAll(async () => {
    runtime = await memoryRuntime({ MIN_SESSIONS_FOR_AGGREGATION: '2' });
    runner = new LocalDurableRunner(await loadFunctions(), new MemoryDurableStateStore(), { delayScale: 0 });
    useLocalOrchestrationClient(runner);
  });
  afterAll(async () => {
    await runner.stop();
    useLocalOrchestrationClient(undefined);
    await runtime.close();
  });

  const end = async (userId: string, sessionId: string) => {
    const res = await endHandler(request('POST', `v1/users/${userId}/sessions/${sessionId}/end`, { params: { userId, sessionId } }), context('http-session-end'));
    expect(res.status).toBe(202);
    return json(res).operationId as string;
  };

  it('ends a session: final prune, summary, insights in the right categories, statuses; ending twice runs once', async () => {
    await seed(runtime, USER, 's1', ADVISOR_SESSION);
    const operationId = await end(USER, 's1');
    expect(operationId).toBe(`session-end:${USER}:s1`);
    expect(await end(USER, 's1')).toBe(operationId);
    const done = await runner.waitFor(operationId);
    expect(done.status, done.error).toBe('completed');

    const op = json(await operationHandler(request('GET', `v1/operations/${operationId}`, { params: { operationId } }), context('http-operation-get')));
    expect(op).toMatchObject({ operationId, status: 'completed', output: { status: 'completed', reflectionStatus: 'processed', reflectionFlag: 'insight' } });
    // One run: the activities appear once in the history.
    expect(done.history.filter((e) => e.EventType === 4 && e.Name === 'activity-session-reflect')).toHaveLength(1);

    const session = json(await sessionHandler(request('GET', `v1/users/${USER}/sessions/s1`, { params: { userId: USER, sessionId: 's1' } }), context('x')));
    // Every turn (seqs 1-12) is chunked; the lifecycle follows them in the same stream.
    expect(session).toMatchObject({ status: 'completed', reflectionStatus: 'processed', lastSeq: 19, pending: 0, chunkedThroughSeq: 12 });
    const page = json(await eventsHandler(request('GET', `v1/users/${USER}/sessions/s1/events?after=12`, { params: { userId: USER, sessionId: 's1' } }), context('x')));
    expect((page.events as { type: string; data: Record<string, unknown> }[]).map((e) => [e.type, e.data])).toEqual([
      ['InteractionSummarised', expect.objectContaining({ fromSeq: 1, toSeq: 10, model: runtime.chat.model })],
      ['SessionInitFixed', { profile: null, recentSessions: [] }],
      ['SessionEndRequested', { reason: 'client' }],
      ['InteractionSummarised', expect.objectContaining({ fromSeq: 11, toSeq: 12 })],
      ['SessionSummarised', expect.objectContaining({ summary: expect.any(String), keyTopics: expect.any(Array) })],
      ['SessionReflected', expect.objectContaining({ outcome: 'insight', insightIds: expect.any(Array) })],
      ['SessionCompleted', { endedAt: expect.any(String) }],
    ]);
    expect(page.next).toBeNull();
    const stored = (await runtime.sessions.get({ userId: USER, sessionId: 's1' }))!.doc;
    expect(stored.summary).toBeTruthy();
    expect(stored.summaryVector).toHaveLength(runtime.embedder.dimensions);
    expect(stored.keyTopics!.length).toBeGreaterThan(0);

    const insights = json(await insightsHandler(request('GET', `v1/users/${USER}/insights?type=session`, { params: { userId: USER } }), context('x'))).insights as { category: string; text: string; confidence: number; sessionId: string }[];
    const categories = new Set(insights.map((i) => i.category));
    for (const c of ['demographics', 'financial_goals', 'risk_profile', 'current_situation', 'concern']) expect(categories, c).toContain(c);
    expect(insights.every((i) => i.confidence >= 0.7 && i.sessionId === 's1')).toBe(true);
    const text = (c: string) => insights.filter((i) => i.category === c).map((i) => i.text).join(' ');
    expect(text('demographics')).toMatch(/45|married|kids/);
    expect(text('financial_goals')).toMatch(/retire at 60/);
    expect(text('risk_profile')).toMatch(/conservative|losses/);
    expect(text('concern')).toMatch(/healthcare/);
    expect(text('current_situation')).toMatch(/401k/);
  });

  it('long-term reflection builds the profile with source insight ids and marks insights processed; the next session sees it', async () => {
    const res = await reflectionHandler(request('POST', `v1/users/${USER}/reflection`, { params: { userId: USER } }), context('http-reflection-start'));
    expect(res.status).toBe(202);
    const done = await runner.waitFor(json(res).operationId as string);
    expect(done.status, done.error).toBe('completed');
    const profile = json(await profileHandler(request('GET', `v1/users/${USER}/profile`, { params: { userId: USER } }), context('x')));
    const insights = (await runtime.insights.list(USER)).filter((i) => i.status !== 'merged');
    expect(profile.profile).toMatch(/retire at 60/);
    expect(new Set(profile.sourceInsightIds as string[])).toEqual(new Set((await runtime.insights.list(USER)).filter((i) => i.status !== 'merged').map((i) => i.id)));
    expect(insights.every((i) => i.status === 'processed' || i.status === 'superseded')).toBe(true);

    await seed(runtime, USER, 's2', [{ role: 'user', content: 'Hello again, quick question about my plan.' }]);
    const ctx = json(await contextHandler(request('GET', `v1/users/${USER}/sessions/s2/context`, { params: { userId: USER, sessionId: 's2' } }), context('x')));
    const sections = ctx.sections as { profile: string; recentSessions: { sessionId: string; summary: string }[] };
    expect(sections.profile).toBe(profile.profile);
    expect(sections.recentSessions.map((s) => s.sessionId)).toEqual(['s1']);
    expect(ctx.text).toContain('<session_initialization>');
  });

  it('newer information supersedes older insights, which are kept', async () => {
    await seed(runtime, USER, 's3', [{ role: 'user', content: 'Actually I now want to retire at 62 instead.' }, { role: 'assistant', content: 'Noted.' }]);
    expect((await runner.waitFor(await end(USER, 's3'))).status).toBe('completed');
    // Manual reflections are deduplicated per second (a double click starts one run): start this one in a new second.
    await new Promise((resolve) => setTimeout(resolve, 1_010 - (Date.now() % 1_000)));
    const res = await reflectionHandler(request('POST', `v1/users/${USER}/reflection`, { params: { userId: USER } }), context('x'));
    const id = json(res).operationId as string;
    expect((await runner.waitFor(id)).status).toBe('completed');
    const all = await runtime.insights.list(USER);
    const superseded = all.filter((i) => i.status === 'superseded');
    expect(superseded.map((i) => i.text).join(' ')).toMatch(/retire at 60/);
    expect((await runtime.insights.getProfile(USER))!.profile).toMatch(/62/);
  });

  it('merges near-duplicate insights from different sessions before the profile is built', async () => {
    const user = 'dup-user';
    await seed(runtime, user, 'd1', [{ role: 'user', content: 'My goal is to retire at 58 and sail.' }, { role: 'assistant', content: 'Noted.' }]);
    expect((await runner.waitFor(await end(user, 'd1'))).status).toBe('completed');
    await seed(runtime, user, 'd2', [{ role: 'user', content: 'My goal is to retire at 58 and sail.' }, { role: 'assistant', content: 'Noted again.' }]);
    expect((await runner.waitFor(await end(user, 'd2'))).status).toBe('completed');
    const res = await reflectionHandler(request('POST', `v1/users/${user}/reflection`, { params: { userId: user } }), context('x'));
    const done = await runner.waitFor(json(res).operationId as string);
    expect(done.output).toMatchObject({ merged: 1, updated: true });
    const goals = (await runtime.insights.list(user)).filter((i) => i.category === 'financial_goals');
    expect(goals.map((i) => [i.sessionId, i.status])).toEqual([
      ['d1', 'merged'],
      ['d2', 'processed'],
    ]);
    expect(goals[0]!.mergedInto).toBe(goals[1]!.id);
    expect((await runtime.insights.getProfile(user))!.sourceInsightIds).not.toContain(goals[0]!.id);
  });

  it('applies retention after the profile: superseded and merged insights past their audit period are deleted, the rest kept', async () => {
    const user = 'retention-user';
    const [vector] = await runtime.embedder.embed(['Wants to retire early.']);
    const daysAgo = (days: number) => new Date(Date.now() - days * 86_400_000).toISOString();
    const doc = (id: string, status: InsightStatus, updatedAt: string): InsightDocument => ({
      schemaVersion: SCHEMA_VERSION,
      id,
      userId: user,
      type: 'session',
      sessionId: 'r1',
      sourceSessionIds: ['r1'],
      category: 'financial_goals',
      text: `goal ${id}`,
      confidence: 0.9,
      importance: 'high',
      status,
      embeddingModel: runtime.embedder.model,
      insightVector: vector!,
      createdAt: daysAgo(60),
      updatedAt,
    });
    expect(runtime.retention.supersededInsightTtl).toBe(30 * 86_400);
    await runtime.insights.upsert([doc('old-superseded', 'superseded', daysAgo(31)), doc('old-merged', 'merged', daysAgo(45)), doc('new-superseded', 'superseded', daysAgo(2)), doc('live', 'processed', daysAgo(90))]);
    const res = await reflectionHandler(request('POST', `v1/users/${user}/reflection`, { params: { userId: user } }), context('x'));
    const done = await runner.waitFor(json(res).operationId as string);
    expect(done.status, done.error).toBe('completed');
    expect(done.output).toMatchObject({ userId: user, merged: 0, updated: false, expired: 2 });
    expect((await runtime.insights.list(user)).map((i) => i.id).sort()).toEqual(['live', 'new-superseded']);
  });

  it('aggregates no-insight sessions once MIN_SESSIONS_FOR_AGGREGATION have piled up', async () => {
    const user = 'quiet-user';
    await seed(runtime, user, 'q1', [{ role: 'user', content: 'Hello there.' }, { role: 'assistant', content: 'Hi!' }]);
    const first = await runner.waitFor(await end(user, 'q1'));
    expect(first.output).toMatchObject({ reflectionFlag: 'no-insight', reflectionStatus: 'no-insight', aggregatedSessions: [] });
    await seed(runtime, user, 'q2', [{ role: 'user', content: 'Thanks, bye.' }]);
    const second = await runner.waitFor(await end(user, 'q2'));
    expect(second.output).toMatchObject({ reflectionFlag: 'no-insight', aggregatedSessions: ['q1', 'q2'] });
    expect((await runtime.sessions.get({ userId: user, sessionId: 'q1' }))!.doc.reflectionStatus).toBe('processed');
  });

  it('the Service Bus end message and the idle timeout start the same orchestration', async () => {
    await seed(runtime, 'sb-user', 'b1', [{ role: 'user', content: 'I am 30 and single.' }]);
    await sbHandler({ type: 'end', userId: 'sb-user', sessionId: 'b1' }, context('sb-turns-append', { messageId: 'end-1' }));
    expect((await runner.waitFor('session-end:sb-user:b1')).status).toBe('completed');

    // Idle by the service's clock: the turn was recorded long ago (its own timestamp alone would not make it idle).
    const longAgo = { ...runtime, clock: { now: () => new Date('2020-01-01T00:00:00Z') } };
    await appendTurns(longAgo, { userId: 'idle-user', sessionId: 'i1' }, { turns: [{ role: 'user', content: 'hello' }] });
    await projectSession(runtime, { userId: 'idle-user', sessionId: 'i1' });
    await idleHandler({ isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: '', next: '', lastUpdated: '' } }, context('timer-sessions-idle'));
    const idle = await runner.waitFor('session-end:idle-user:i1');
    expect(idle.status).toBe('completed');
    const events = await runtime.events.read({ userId: 'idle-user', sessionId: 'i1' }, 0);
    expect(events.find((e) => e.type === 'SessionEndRequested')).toMatchObject({ data: { reason: 'idle' } });
  });

  it('ends a session whose ids are the longest allowed: the operation id fits Durable\'s limit, is stable, and reads back', async () => {
    const [userId, sessionId] = ['u'.repeat(128), 's'.repeat(128)];
    await appendTurns(runtime, { userId, sessionId }, { turns: [{ role: 'user', content: 'I am 52 and want to retire at 65.' }, { role: 'assistant', content: 'Noted.' }] });
    const operationId = await end(userId, sessionId);
    expect(operationId).toMatch(/^session-end:[0-9a-f]{64}$/);
    expect(await end(userId, sessionId)).toBe(operationId);
    expect((await runner.waitFor(operationId)).status).toBe('completed');
    const op = json(await operationHandler(request('GET', `v1/operations/${operationId}`, { params: { operationId } }), context('http-operation-get')));
    expect(op).toMatchObject({ operationId, name: 'orch-session-end', status: 'completed', output: { userId, sessionId, status: 'completed' } });
  });

  it('answers 404 for unknown sessions, operations and profiles', async () => {
    const res = await endHandler(request('POST', 'v1/users/nobody/sessions/none/end', { params: { userId: 'nobody', sessionId: 'none' } }), context('x'));
    expect(res.status).toBe(404);
    expect((await operationHandler(request('GET', 'v1/operations/nope', { params: { operationId: 'nope' } }), context('x'))).status).toBe(404);
    expect((await profileHandler(request('GET', 'v1/users/nobody/profile', { params: { userId: 'nobody' } }), context('x'))).status).toBe(404);
  });
});
