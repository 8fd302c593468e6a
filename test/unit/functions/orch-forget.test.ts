import { describe, expect, it } from 'vitest';
import { forgetOrchestrator } from '../../../functions/orch-forget.js';
import { forgetInstanceId, OperationProgress } from '../../../shared/contracts/operations.js';
import { History, replay } from '../../support/durable-history.js';

const input = { userId: 'u1' };
const begin = { sessionIds: ['s1', 's2'] };
const blobs = { blobNames: ['u1/k/h'], deleted: 1 };
const stores = { removed: { events: 30, insights: 4 } };
const clean = { residual: { events: 0, insights: 0, blobs: 0, durableInstances: 0 }, total: 0, tombstone: '"t1"' };
const left = { residual: { events: 0, interactions: 1, blobs: 0, durableInstances: 0 }, total: 1 };

const nothing = { blobs: { blobNames: [], deleted: 0 }, stores: { removed: { events: 0, insights: 0 } } };

/** One purge round: blobs → stores → verify (in an episode at `at`, the orchestration clock the timer is set from). */
const round = (h: History, scan: unknown, removed: { removed: Record<string, number> } = stores, deleted = blobs, at?: string) =>
  h.call('activity-forget-blobs', deleted).call('activity-forget-stores', removed).call('activity-forget-verify', scan, at);
/** A round after a grace's wait that finds nothing to purge. */
const settledRound = (h: History, scan: unknown = clean) => round(h, scan, nothing.stores, nothing.blobs);
const TIMER = 5;

describe('orch-forget (replayed through the durable-functions engine)', () => {
  it('given a clean scan, then it clears the tombstone and returns the purge report: removed per store, residual zero', async () => {
    const h = round(new History(input).call('activity-forget-begin', begin).call('activity-forget-durable', { durableInstances: 2 }), clean);
    const beforeFinish = await replay(forgetOrchestrator, h);
    expect(beforeFinish.flat.map((a) => a.functionName)).toEqual([
      'activity-forget-begin',
      'activity-forget-durable',
      'activity-forget-blobs',
      'activity-forget-stores',
      'activity-forget-verify',
      'activity-forget-finish',
    ]);
    expect(beforeFinish.flat[4]!.input).toEqual({ userId: 'u1', sessionIds: ['s1', 's2'], blobNames: ['u1/k/h'] });
    expect(beforeFinish.flat[5]!.input).toEqual({ userId: 'u1', removed: 2 + 1 + 30 + 4, tombstone: '"t1"' });
    const done = await replay(forgetOrchestrator, h.call('activity-forget-finish', { cleared: true }));
    expect(done.isDone).toBe(true);
    expect(done.output).toMatchObject({ userId: 'u1', sessions: 2, removed: { durableInstances: 2, blobs: 1, events: 30, insights: 4 }, residual: clean.residual, verified: true, rounds: 1 });
  });

  it('given a scan that finds something (a write raced the purge), then it purges again before it clears the tombstone', async () => {
    const h = round(round(new History(input).call('activity-forget-begin', begin).call('activity-forget-durable', { durableInstances: 0 }), left), clean, { removed: { events: 0, insights: 0, interactions: 1 } });
    const state = await replay(forgetOrchestrator, h);
    expect(state.flat.at(-1)?.functionName).toBe('activity-forget-finish');
    const done = await replay(forgetOrchestrator, h.call('activity-forget-finish', { cleared: true }));
    expect(done.output).toMatchObject({ rounds: 2, removed: { interactions: 1, events: 30, blobs: 2 } });
  });

  it('given a clean scan but a tombstone a late writer enlisted with since, then it purges and scans again before it clears the tombstone', async () => {
    const h = round(new History(input).call('activity-forget-begin', begin).call('activity-forget-durable', { durableInstances: 0 }), clean).call('activity-forget-finish', { cleared: false });
    const again = round(h, { ...clean, tombstone: '"t2"' }, { removed: { events: 0, insights: 0, interactions: 1 } });
    const state = await replay(forgetOrchestrator, again);
    expect(state.flat.slice(-4).map((a) => a.functionName)).toEqual(['activity-forget-blobs', 'activity-forget-stores', 'activity-forget-verify', 'activity-forget-finish']);
    expect(state.flat.at(-1)!.input).toMatchObject({ tombstone: '"t2"' });
    const done = await replay(forgetOrchestrator, again.call('activity-forget-finish', { cleared: true }));
    expect(done.output).toMatchObject({ rounds: 2, removed: { interactions: 1 } });
  });

  it('given a late writer enlisted after every round, then it fails and never clears the tombstone', async () => {
    let h = new History(input).call('activity-forget-begin', begin).call('activity-forget-durable', { durableInstances: 0 });
    for (let i = 0; i < 3; i++) h = round(h, clean).call('activity-forget-finish', { cleared: false });
    await expect(replay(forgetOrchestrator, h)).rejects.toThrow(/a late write after each of 3 scans/);
  });

  it('given residuals after every round, then it fails with the counts and never clears the tombstone', async () => {
    let h = new History(input).call('activity-forget-begin', begin).call('activity-forget-durable', { durableInstances: 0 });
    for (let i = 0; i < 3; i++) h = round(h, left);
    await expect(replay(forgetOrchestrator, h)).rejects.toThrow(/interactions=1/);
  });

  describe('with a grace (FORGET_GRACE_SECONDS, from the begin step)', () => {
    const graced = () => new History(input).call('activity-forget-begin', { ...begin, graceSeconds: 600 }).call('activity-forget-durable', { durableInstances: 0 });

    it('given a clean scan, then it waits on a durable timer until the grace after that scan, runs one more round, and clears only then', async () => {
      const h = round(graced(), clean, stores, blobs, '2026-01-05T10:00:07.000Z');
      const waiting = await replay(forgetOrchestrator, h);
      expect(waiting.flat.map((a) => a.functionName ?? a.actionType)).toEqual(['activity-forget-begin', 'activity-forget-durable', 'activity-forget-blobs', 'activity-forget-stores', 'activity-forget-verify', TIMER]);
      expect(new Date(waiting.flat.at(-1)!.fireAt!).toISOString()).toBe('2026-01-05T10:10:07.000Z');
      expect(waiting.isDone).toBe(false);

      const after = settledRound(h.timer('2026-01-05T10:10:07.000Z'), { ...clean, tombstone: '"t2"' });
      const finishing = await replay(forgetOrchestrator, after);
      expect(finishing.flat.slice(5).map((a) => a.functionName ?? a.actionType)).toEqual([TIMER, 'activity-forget-blobs', 'activity-forget-stores', 'activity-forget-verify', 'activity-forget-finish']);
      expect(finishing.flat.at(-1)!.input).toMatchObject({ tombstone: '"t2"' });
      const done = await replay(forgetOrchestrator, after.call('activity-forget-finish', { cleared: true }));
      expect(done.output).toMatchObject({ rounds: 2, graceSeconds: 600, removed: { blobs: 1, events: 30, insights: 4 }, verified: true });
    });

    it('given the round after the wait purges something (a write landed meanwhile), then it waits again before the round that may clear', async () => {
      const h = round(graced(), clean).timer('2026-01-05T10:10:00.000Z');
      const purgedLate = round(h, clean, { removed: { events: 2, insights: 0 } }, nothing.blobs, '2026-01-05T10:10:03.000Z');
      const waiting = await replay(forgetOrchestrator, purgedLate);
      expect(waiting.flat.at(-1)!.actionType).toBe(TIMER);
      expect(new Date(waiting.flat.at(-1)!.fireAt!).toISOString()).toBe('2026-01-05T10:20:03.000Z');
      const after = settledRound(purgedLate.timer('2026-01-05T10:20:03.000Z'));
      expect((await replay(forgetOrchestrator, after)).flat.at(-1)!.functionName).toBe('activity-forget-finish');
      const done = await replay(forgetOrchestrator, after.call('activity-forget-finish', { cleared: true }));
      expect(done.output).toMatchObject({ rounds: 3, removed: { events: 32 } });
    });

    it('publishes where it is as its custom status: the round it purges in, then the grace wait and when it fires; ids, numbers and times only', async () => {
      const purging = await replay(forgetOrchestrator, graced());
      expect(purging.customStatus).toEqual({ step: 'purging', round: 1 });
      const h = round(graced(), clean, stores, blobs, '2026-01-05T10:00:07.000Z');
      const waiting = await replay(forgetOrchestrator, h);
      expect(waiting.customStatus).toEqual({ step: 'grace', round: 1, until: '2026-01-05T10:10:07.000Z' });
      expect(OperationProgress.strict().parse(waiting.customStatus)).toEqual(waiting.customStatus);
      expect((await replay(forgetOrchestrator, h.timer('2026-01-05T10:10:07.000Z'))).customStatus).toEqual({ step: 'purging', round: 2 });
    });

    it('given a dirty scan, then it purges again at once, and waits after the first clean one', async () => {
      const h = round(graced(), left);
      expect((await replay(forgetOrchestrator, h)).flat.at(-1)!.functionName).toBe('activity-forget-blobs');
      const clean2 = round(h, clean, nothing.stores, nothing.blobs);
      expect((await replay(forgetOrchestrator, clean2)).flat.at(-1)!.actionType).toBe(TIMER);
    });

    it('given a clear that fails after the wait (a writer enlisted), then the next round is followed by a wait too', async () => {
      const h = settledRound(round(graced(), clean).timer('2026-01-05T10:10:00.000Z')).call('activity-forget-finish', { cleared: false });
      const again = settledRound(h);
      expect((await replay(forgetOrchestrator, again)).flat.at(-1)!.actionType).toBe(TIMER);
    });

    it('given 0, then there is no timer: the clean scan is followed by the clear (as a begin recorded before the grace existed)', async () => {
      const h = round(new History(input).call('activity-forget-begin', { ...begin, graceSeconds: 0 }).call('activity-forget-durable', { durableInstances: 0 }), clean);
      const state = await replay(forgetOrchestrator, h);
      expect(state.flat.map((a) => a.actionType)).not.toContain(TIMER);
      expect(state.flat.at(-1)!.functionName).toBe('activity-forget-finish');
      const done = await replay(forgetOrchestrator, h.call('activity-forget-finish', { cleared: true }));
      expect(done.output).toMatchObject({ rounds: 1, graceSeconds: 0 });
    });
  });

  it('instance ids: one per user and one per session, stable', () => {
    expect(forgetInstanceId('u1')).toBe('forget-user:u1');
    expect(forgetInstanceId('u1', 's1')).toBe('forget-session:u1:s1');
    expect(forgetInstanceId('u:1', 's1')).toMatch(/^forget-session:[0-9a-f]{64}$/);
  });
});
