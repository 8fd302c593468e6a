import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ChangeFeed } from '../../../shared/application/ports.js';
import type { MemoryEvent } from '../../../shared/contracts/events.js';
import type { InvocationContext } from '@azure/functions';
import { isLastRetry } from '../../../shared/platform/functions.js';
import { ChangeFeedPump } from '../../../shared/platform/local-host/pump.js';
import { turn } from '../../support/builders.js';

/**
 * An in-memory feed with the store's visibility rule: events are read in position order, never past one whose
 * transaction is still open (so an event that commits late is read later, not skipped). Counts reads.
 */
function memoryFeed() {
  const log: { event: MemoryEvent; committed: boolean }[] = [];
  const checkpoints = new Map<string, string>();
  let reads = 0;
  const feed: ChangeFeed = {
    async readFeed(cursor, limit) {
      reads += 1;
      const from = cursor === null ? 0 : Number(cursor);
      const events: MemoryEvent[] = [];
      for (let i = from; i < log.length && events.length < limit && log[i]!.committed; i++) events.push(log[i]!.event);
      return { events, cursor: events.length > 0 ? String(from + events.length) : cursor };
    },
    loadCheckpoint: async (name) => checkpoints.get(name) ?? null,
    saveCheckpoint: async (name, cursor) => void checkpoints.set(name, cursor),
  };
  let seq = 0;
  return {
    feed,
    reads: () => reads,
    /** Appends one event; `open` leaves its transaction uncommitted until `commit()` is called. */
    append(open = false) {
      const entry = { event: turn(++seq), committed: !open };
      log.push(entry);
      return { seq, commit: () => void (entry.committed = true) };
    },
  };
}

function recordingHandler(delayMs = 0) {
  const batches: number[][] = [];
  const handler = async (documents: unknown[]) => {
    batches.push(documents.map((d) => (d as MemoryEvent).metadata.seq));
    if (delayMs) await sleep(delayMs);
  };
  return { handler, batches, handled: () => batches.flat() };
}

async function until(condition: () => boolean, timeoutMs = 2_000) {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(2);
  }
}

describe('ChangeFeedPump', () => {
  it('given a burst of single-event appends each followed by wake(), then one read handles them all, long before the next poll', async () => {
    const { feed, append, reads } = memoryFeed();
    const { handler, batches } = recordingHandler();
    // The window must outlast the burst on a loaded machine (20 × sleep(1) took over 30 ms on 2 shared cores).
    const pump = new ChangeFeedPump(feed, handler, { name: 'p', batchSize: 100, intervalMs: 60_000, coalesceMs: 1_000 });
    pump.start();
    await until(() => reads() === 1); // the first pass found an empty feed; the pump now idles for a minute
    const woken = Date.now();
    for (let i = 0; i < 20; i++) {
      append();
      pump.wake();
      await sleep(1);
    }
    await until(() => batches.length === 1);
    expect(Date.now() - woken).toBeLessThan(5_000);
    expect(batches).toEqual([Array.from({ length: 20 }, (_, i) => i + 1)]);
    await pump.stop();
  });

  it('given a wake-up while a pass is running, then the events appended meanwhile are read right after it, not at the next poll', async () => {
    const { feed, append } = memoryFeed();
    const { handler, batches } = recordingHandler(100);
    const pump = new ChangeFeedPump(feed, handler, { name: 'p', batchSize: 1, intervalMs: 60_000, coalesceMs: 5 });
    append();
    pump.start();
    await until(() => batches.length === 1); // the pass handling event 1 is still running (100 ms)
    append();
    pump.wake();
    await until(() => batches.length === 2);
    // batchSize 1: event 2 was read by the same pass (it had committed); a third one, after the pass, needs the wake.
    await sleep(150);
    append();
    pump.wake();
    await until(() => batches.length === 3);
    expect(batches).toEqual([[1], [2], [3]]);
    await pump.stop();
  });

  it('given an event that commits after later ones were appended and woke the pump, then it is handled once, in order, by a later read', async () => {
    const { feed, append } = memoryFeed();
    const { handler, handled } = recordingHandler();
    const pump = new ChangeFeedPump(feed, handler, { name: 'p', batchSize: 100, intervalMs: 40, coalesceMs: 5 });
    pump.start();
    const late = append(true);
    append();
    pump.wake();
    append();
    pump.wake();
    await sleep(120); // several polls and a coalesced wake-up: nothing can be read past the open transaction
    expect(handled()).toEqual([]);
    late.commit(); // no wake-up: the poll finds it
    await until(() => handled().length === 3);
    append();
    pump.wake();
    await until(() => handled().length === 4);
    expect(handled()).toEqual([1, 2, 3, 4]);
    await pump.stop();
  });

  it('stops promptly, also while waiting out a failed batch backoff, and does not retry hot when woken during the backoff', async () => {
    const { feed, append } = memoryFeed();
    let calls = 0;
    const errors: unknown[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => void errors.push(args[0]);
    try {
      const failing = async () => {
        calls += 1;
        throw new Error('boom');
      };
      const pump = new ChangeFeedPump(feed, failing, { name: 'p', batchSize: 10, intervalMs: 1_000, coalesceMs: 1 });
      append();
      pump.start();
      await until(() => calls === 1);
      for (let i = 0; i < 10; i++) {
        pump.wake();
        await sleep(5);
      }
      expect(calls).toBe(1); // still in its 2 s backoff
      const stopping = Date.now();
      await pump.stop();
      expect(Date.now() - stopping).toBeLessThan(500);
      expect(errors).toHaveLength(1);
    } finally {
      console.error = original;
    }
  });

  it('given a batch that fails because the host stopped while it ran, then it is reported abandoned, not failed, and its checkpoint is not saved', async () => {
    const { feed, append } = memoryFeed();
    let fail: (error: Error) => void = () => {};
    let calls = 0;
    const handler = () => {
      calls += 1;
      return new Promise<void>((_, reject) => (fail = reject));
    };
    const errors: unknown[] = [];
    const warnings: unknown[] = [];
    const [error, warn] = [console.error, console.warn];
    console.error = (...args: unknown[]) => void errors.push(args[0]);
    console.warn = (...args: unknown[]) => void warnings.push(args[0]);
    try {
      const pump = new ChangeFeedPump(feed, handler, { name: 'p', batchSize: 10, intervalMs: 1, coalesceMs: 1 });
      append();
      pump.start();
      await until(() => calls === 1);
      const stopped = pump.stop();
      fail(new Error('The database was closed'));
      await stopped;
      expect(errors).toEqual([]);
      expect(warnings).toEqual(['change-feed pump p: batch abandoned at shutdown']);
      expect(calls).toBe(1);
      expect(await feed.loadCheckpoint('p')).toBeNull();
    } finally {
      [console.error, console.warn] = [error, warn];
    }
  });

  it('given a batch that keeps failing, then the handler is told its retry count and, from maxRetries on, that it is the last retry', async () => {
    const { feed, append } = memoryFeed();
    const seen: { retryCount: number; maxRetryCount: number }[] = [];
    const handler = async (_documents: unknown[], ctx: InvocationContext) => {
      seen.push(ctx.retryContext!);
      if (!isLastRetry(ctx)) throw new Error('not yet');
    };
    append();
    const original = console.error;
    console.error = () => {};
    const pump = new ChangeFeedPump(feed, handler, { name: 'retries', batchSize: 10, intervalMs: 1, maxRetries: 2 });
    try {
      pump.start();
      await until(() => seen.length === 3);
      await pump.stop();
      expect(seen).toEqual([0, 1, 2].map((retryCount) => ({ retryCount, maxRetryCount: 2 })));
      expect(await feed.loadCheckpoint('retries')).toBe('1');
    } finally {
      console.error = original;
    }
  });
});
