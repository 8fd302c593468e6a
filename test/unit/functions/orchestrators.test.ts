import { describe, expect, it } from 'vitest';
import { sessionEndOrchestrator } from '../../../functions/orch-session-end.js';
import { longTermReflectionOrchestrator } from '../../../functions/orch-long-term-reflection.js';
import { nightlyConsolidationOrchestrator } from '../../../functions/orch-nightly-consolidation.js';
import { History, replay } from '../../support/durable-history.js';

const key = { userId: 'u1', sessionId: 's1' };
const prune = { chunkedThroughSeq: 12, interactionsWritten: 1 };
const summary = { summary: 'A summary.', keyTopics: ['retirement'], reused: false };
const insight = { reflectionFlag: 'insight', insightIds: ['ins-1'], dropped: 0, reused: false };
const noInsight = { reflectionFlag: 'no-insight', insightIds: [], dropped: 0, reused: false };
const completion = { status: 'completed', reflectionStatus: 'processed' };

describe('orch-session-end (replayed through the durable-functions engine)', () => {
  it('given an empty history, when it starts, then it schedules the final prune with a retry policy', async () => {
    const state = await replay(sessionEndOrchestrator, new History(key));
    expect(state.isDone).toBe(false);
    expect(state.flat).toEqual([{ actionType: 1, functionName: 'activity-session-prune', input: key, retryOptions: expect.objectContaining({ maxNumberOfAttempts: 4, firstRetryIntervalInMilliseconds: 2000 }) }]);
  });

  it('runs prune → summary → reflection → complete, in that order, and returns the outcome', async () => {
    const h = new History(key).call('activity-session-prune', prune).call('activity-session-summarise', summary).call('activity-session-reflect', insight);
    const beforeComplete = await replay(sessionEndOrchestrator, h);
    expect(beforeComplete.flat.map((a) => a.functionName)).toEqual(['activity-session-prune', 'activity-session-summarise', 'activity-session-reflect', 'activity-session-complete']);
    expect(beforeComplete.flat[3]).toMatchObject({ actionType: 0, input: key });

    h.started('2026-01-05T10:05:00.000Z').completed(h.scheduled('activity-session-complete'), completion);
    const done = await replay(sessionEndOrchestrator, h);
    expect(done.isDone).toBe(true);
    expect(done.output).toEqual({
      ...key,
      finishedAt: '2026-01-05T10:05:00.000Z',
      chunkedThroughSeq: 12,
      keyTopics: ['retirement'],
      reflectionFlag: 'insight',
      insightIds: ['ins-1'],
      aggregatedSessions: [],
      ...completion,
    });
  });

  it('a replay of the same history yields the same actions and output (deterministic)', async () => {
    const h = new History(key).call('activity-session-prune', prune).call('activity-session-summarise', summary).call('activity-session-reflect', noInsight);
    const first = await replay(sessionEndOrchestrator, h);
    const second = await replay(sessionEndOrchestrator, h);
    expect(second).toEqual(first);
    expect(first.flat.at(-1)).toMatchObject({ functionName: 'activity-insights-aggregate', input: { userId: 'u1' } });
  });

  it('only a no-insight reflection runs the aggregation step', async () => {
    const h = new History(key)
      .call('activity-session-prune', prune)
      .call('activity-session-summarise', summary)
      .call('activity-session-reflect', noInsight)
      .call('activity-insights-aggregate', { aggregated: true, sessionIds: ['s0', 's1'], insightIds: ['ins-9'] })
      .call('activity-session-complete', completion);
    const done = await replay(sessionEndOrchestrator, h);
    expect(done.flat.map((a) => a.functionName)).toEqual([
      'activity-session-prune',
      'activity-session-summarise',
      'activity-session-reflect',
      'activity-insights-aggregate',
      'activity-session-complete',
    ]);
    expect(done.output).toMatchObject({ reflectionFlag: 'no-insight', aggregatedSessions: ['s0', 's1'] });
  });

  it('retries a failed model step after its retry timer, then continues', async () => {
    const h = new History(key).call('activity-session-prune', prune);
    h.started().failed(h.scheduled('activity-session-summarise'), 'model 503');
    h.retryTimer();
    const waiting = await replay(sessionEndOrchestrator, h);
    expect(waiting.isDone).toBe(false);
    h.started().completed(h.scheduled('activity-session-summarise'), summary);
    const after = await replay(sessionEndOrchestrator, h);
    expect(after.flat.map((a) => a.functionName)).toEqual(['activity-session-prune', 'activity-session-summarise', 'activity-session-reflect']);
  });

  it('fails the orchestration when a step fails on every attempt', async () => {
    const h = new History(key).call('activity-session-prune', prune);
    for (let attempt = 1; attempt <= 4; attempt++) {
      h.started().failed(h.scheduled('activity-session-summarise'), `model down ${attempt}`);
      h.retryTimer();
    }
    await expect(replay(sessionEndOrchestrator, h)).rejects.toThrow(/model down 4/);
  });

  it('rejects an input that is not a session key', async () => {
    await expect(replay(sessionEndOrchestrator, new History({ userId: 'bad id' }))).rejects.toThrow(/userId|sessionId/);
  });
});

describe('orch-long-term-reflection', () => {
  it('merges near-duplicates before it synthesises the profile', async () => {
    const h = new History({ userId: 'u1' }).call('activity-insights-merge', { merged: 2 });
    const state = await replay(longTermReflectionOrchestrator, h);
    expect(state.flat.map((a) => a.functionName)).toEqual(['activity-insights-merge', 'activity-profile-synthesise']);
    h.call('activity-profile-synthesise', { updated: true, version: 3, processed: ['a'], superseded: [] });
    expect((await replay(longTermReflectionOrchestrator, h)).isDone).toBe(false);
  });

  it('applies retention last, as of the orchestration time, and reports what expired', async () => {
    const h = new History({ userId: 'u1' }).call('activity-insights-merge', { merged: 2 });
    // The synthesis completes in a later episode: retention must use that episode's time, not the start's.
    h.started('2026-01-05T10:02:00.000Z').completed(h.scheduled('activity-profile-synthesise'), { updated: true, version: 3, processed: ['a'], superseded: ['b'] });
    const waiting = await replay(longTermReflectionOrchestrator, h);
    expect(waiting.flat.map((a) => a.functionName)).toEqual(['activity-insights-merge', 'activity-profile-synthesise', 'activity-retention-apply']);
    expect(waiting.flat[2]).toMatchObject({ actionType: 1, input: { userId: 'u1', now: '2026-01-05T10:02:00.000Z' }, retryOptions: expect.objectContaining({ maxNumberOfAttempts: 4 }) });

    h.started('2026-01-05T10:03:00.000Z').completed(h.scheduled('activity-retention-apply'), { expired: 4, artifactsExpired: 7 });
    const done = await replay(longTermReflectionOrchestrator, h);
    expect(done.isDone).toBe(true);
    expect(done.output).toEqual({ userId: 'u1', merged: 2, updated: true, version: 3, processed: ['a'], superseded: ['b'], expired: 4, artifactsExpired: 7, finishedAt: '2026-01-05T10:03:00.000Z' });
    // A replay asks for the same retention time: the activity's input is part of the history's determinism.
    expect((await replay(longTermReflectionOrchestrator, h)).flat).toEqual(waiting.flat);
  });

  it('a retention step that completed before the artifact sweep shipped (no artifactsExpired) counts 0 artifacts', async () => {
    const h = new History({ userId: 'u1' })
      .call('activity-insights-merge', { merged: 0 })
      .call('activity-profile-synthesise', { updated: false, version: 1, processed: [], superseded: [] })
      .call('activity-retention-apply', { expired: 1 });
    const done = await replay(longTermReflectionOrchestrator, h);
    expect(done.output).toMatchObject({ expired: 1, artifactsExpired: 0 });
  });
});

describe('orch-nightly-consolidation', () => {
  const input = { since: '2026-01-04T03:00:00.000Z', runId: '20260105T03', parallelism: 2 };
  /** A long-term reflection's output; one that finished before retention shipped has no `expired` / `artifactsExpired`. */
  const reflected = (userId: string, counts: { updated: boolean; merged: number; expired?: number; artifactsExpired?: number }) => ({
    userId,
    version: 1,
    processed: [],
    superseded: [],
    finishedAt: '2026-01-05T03:01:00.000Z',
    ...counts,
  });

  it('fans out over the active users in batches of `parallelism`, sub-orchestration ids derived from user and run', async () => {
    const h = new History(input).call('activity-users-active', { userIds: ['a', 'b', 'c'] });
    const firstBatch = await replay(nightlyConsolidationOrchestrator, h);
    expect(firstBatch.actions.at(-1)).toEqual([
      { actionType: 2, functionName: 'orch-long-term-reflection', input: { userId: 'a' }, instanceId: 'reflection:a:20260105T03' },
      { actionType: 2, functionName: 'orch-long-term-reflection', input: { userId: 'b' }, instanceId: 'reflection:b:20260105T03' },
    ]);

    h.started();
    const [a, b] = [h.subCreated('orch-long-term-reflection', 'reflection:a:20260105T03'), h.subCreated('orch-long-term-reflection', 'reflection:b:20260105T03')];
    // Completions arrive in any order; results keep the batch order.
    h.subCompleted(b, reflected('b', { updated: false, merged: 0 })).subCompleted(a, reflected('a', { updated: true, merged: 1, expired: 0, artifactsExpired: 2 }));
    const secondBatch = await replay(nightlyConsolidationOrchestrator, h);
    expect(secondBatch.actions.at(-1)).toEqual([{ actionType: 2, functionName: 'orch-long-term-reflection', input: { userId: 'c' }, instanceId: 'reflection:c:20260105T03' }]);

    h.started().subCompleted(h.subCreated('orch-long-term-reflection', 'reflection:c:20260105T03'), reflected('c', { updated: true, merged: 2, expired: 5, artifactsExpired: 3 }));
    const done = await replay(nightlyConsolidationOrchestrator, h);
    expect(done.isDone).toBe(true);
    // b finished before retention shipped (no `expired`, no `artifactsExpired`): it counts as 0.
    expect(done.output).toMatchObject({ runId: '20260105T03', users: 3, profilesUpdated: 2, merged: 3, expired: 5, artifactsExpired: 5 });
    expect(await replay(nightlyConsolidationOrchestrator, h)).toEqual(done);
  });

  it('with no active users it finishes after the lookup', async () => {
    const done = await replay(nightlyConsolidationOrchestrator, new History(input).call('activity-users-active', { userIds: [] }));
    expect(done.output).toMatchObject({ users: 0, profilesUpdated: 0, merged: 0, expired: 0, artifactsExpired: 0 });
  });
});
