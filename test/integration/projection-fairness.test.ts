import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import { enqueueProjection, LEASE_MS, serveProjectionQueue, type ProjectionSchedule } from '../../shared/application/projection-scheduler.js';
import type { Embedder } from '../../shared/application/ports.js';
import type { QueuedSession } from '../../shared/application/projection-ports.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { invocationContext } from '../../shared/platform/local-host/invocation.js';
import { turnDraft } from '../support/builders.js';
import { atOffset, embedderWith, memoryRuntime } from '../support/runtime.js';

/** The runtime's embedder with one-hot vectors at once: the offline encoder would make a backlog of thousands slow. */
const fast = (like: Embedder) => embedderWith(like, async (texts) => texts.map((_, i) => Array.from({ length: like.dimensions }, (_, d) => (d === i % like.dimensions ? 1 : 0))));

async function appendTurns(runtime: Runtime, key: { userId: string; sessionId: string }, count: number): Promise<void> {
  for (let i = 0; i < count; i += 500) {
    const drafts = Array.from({ length: Math.min(500, count - i) }, (_, j) => turnDraft(`t-${i + j + 1}`, `turn ${i + j + 1} about the garden plan`, (i + j) % 2 ? 'assistant' : 'user'));
    await runtime.events.append(key, drafts, new Date());
  }
}

/**
 * The change feed as the pump delivers it: `read` takes what the feed holds since the last read (at most `limit`
 * events), `deliver` hands it to the change-feed handler and returns how many events it brought.
 */
function feedOf(runtime: () => Runtime) {
  let cursor: string | null = null;
  const read = async (limit: number) => {
    const batch = await runtime().changeFeed!.readFeed(cursor, limit);
    cursor = batch.cursor ?? cursor;
    return batch.events;
  };
  const deliver = async (limit: number) => {
    const events = await read(limit);
    await projectHandler(events, invocationContext('cosmos-events-project'));
    return events.length;
  };
  return { read, deliver };
}

const busy = { userId: 'busy-user', sessionId: 'backlog' };
const newcomer = { userId: 'new-user', sessionId: 's1' };
const BACKLOG = 3000;

describe("fair projection: one user's backlog does not hold up another user's turn", () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime({ PROJECTION_SLICE_EVENTS: '50', PROJECTION_PARALLELISM: '1' });
    runtime.embedder = fast(runtime.embedder);
  }, 60_000);
  afterAll(() => runtime?.close());
  const { deliver } = feedOf(() => runtime);

  it('given a backlog of thousands delivered by the feed, when a new user appends one turn, then the batch that delivers it projects it while the backlog is still pending', async () => {
    await appendTurns(runtime, busy, BACKLOG);
    // The feed delivers the backlog in batches of more than a slice: each only queues the session (the scheduler's to
    // serve), so the feed keeps moving.
    for (let delivered = 0; delivered < BACKLOG; ) delivered += await deliver(500);
    expect((await getSessionStatus(runtime, busy)).projectedThroughSeq).toBe(0);
    expect(await runtime.projectionQueue.size()).toBe(1);

    await runtime.events.append(newcomer, [turnDraft('hello', 'Hi, I am new here')], new Date());
    await deliver(500);
    expect(await getSessionStatus(runtime, newcomer)).toMatchObject({ pending: 0, turnCount: 1 });
    const busyNow = await getSessionStatus(runtime, busy);
    expect(busyNow.pending).toBeGreaterThan(BACKLOG - 100);
    expect(await runtime.projectionQueue.size()).toBe(1);
  });

  it("given the busy session being served slice by slice, when a new user's session is queued, then the next slice is the new session's", async () => {
    const schedule: ProjectionSchedule = { sliceEvents: 50, parallelism: 1, budgetMs: 3_600_000 };
    expect((await serveProjectionQueue(runtime, schedule, { slices: 3 })).slices).toBe(3);
    const before = (await getSessionStatus(runtime, busy)).projectedThroughSeq;

    const other = { userId: 'other-user', sessionId: 's1' };
    await runtime.events.append(other, [turnDraft('q1', 'What should I plant in March?')], new Date());
    await enqueueProjection(runtime, await runtime.events.read(other, 0));
    const report = await serveProjectionQueue(runtime, schedule, { slices: 1 });
    expect(report).toMatchObject({ slices: 1, caughtUp: 1 });
    expect(await getSessionStatus(runtime, other)).toMatchObject({ pending: 0, turnCount: 1 });
    expect((await getSessionStatus(runtime, busy)).projectedThroughSeq).toBe(before);

    // Both parallel workers of a wider schedule take different sessions: the busy one and a newcomer at once.
    const third = { userId: 'third-user', sessionId: 's1' };
    await runtime.events.append(third, [turnDraft('q2', 'And in April?')], new Date());
    await enqueueProjection(runtime, await runtime.events.read(third, 0));
    expect(await serveProjectionQueue(runtime, { ...schedule, parallelism: 2 }, { slices: 2 })).toMatchObject({ slices: 2, caughtUp: 1 });
    expect((await getSessionStatus(runtime, third)).pending).toBe(0);
    expect((await getSessionStatus(runtime, busy)).projectedThroughSeq).toBeGreaterThan(before);
  });
});

describe('fair projection: a backlog over many sessions, each brought a few events at a time', () => {
  /**
   * Five sessions of 40 turns, appended 10 at a time to each in turn: a batch of 50 brings each 10 events, less than a
   * slice, while the rest of its stream waits in later batches.
   */
  const backlog = async (parallelism: number) => {
    const runtime = await memoryRuntime({ PROJECTION_SLICE_EVENTS: '50', PROJECTION_PARALLELISM: String(parallelism) });
    runtime.embedder = fast(runtime.embedder);
    const sessions = Array.from({ length: 5 }, (_, i) => ({ userId: 'busy-user', sessionId: `s${i + 1}` }));
    for (let round = 0; round < 4; round++) {
      for (const key of sessions) {
        const drafts = Array.from({ length: 10 }, (_, j) => turnDraft(`t-${round * 10 + j + 1}`, `turn ${round * 10 + j + 1} of ${key.sessionId} about the garden plan`));
        await runtime.events.append(key, drafts, new Date());
      }
    }
    return { runtime, sessions, ...feedOf(() => runtime) };
  };

  it("given more such sessions in a batch than slices run at once, when the feed delivers them, then it only queues them, and a new user's turn is projected by the batch that delivers it", async () => {
    const { runtime, sessions, read, deliver } = await backlog(1);
    try {
      for (let delivered = 0; delivered < 200; ) delivered += await deliver(50);
      for (const key of sessions) expect((await getSessionStatus(runtime, key)).projectedThroughSeq).toBe(0);
      expect(await runtime.projectionQueue.size()).toBe(5);

      await runtime.events.append(newcomer, [turnDraft('hello', 'Hi, I am new here')], new Date());
      await deliver(50);
      expect(await getSessionStatus(runtime, newcomer)).toMatchObject({ pending: 0, turnCount: 1 });

      // A turn appended after the feed read the one before it is projected with it.
      const racing = { userId: 'racing-user', sessionId: 's1' };
      await runtime.events.append(racing, [turnDraft('q1', 'Is March too early to plant?')], new Date());
      const events = await read(50);
      await runtime.events.append(racing, [turnDraft('q2', 'And tomatoes?')], new Date());
      await projectHandler(events, invocationContext('cosmos-events-project'));
      expect(await getSessionStatus(runtime, racing)).toMatchObject({ pending: 0, turnCount: 2 });

      // The scheduler serves the backlog; once it has caught up, a session's next turn is served at once again.
      await serveProjectionQueue(runtime, runtime.projection);
      expect(await runtime.projectionQueue.size()).toBe(0);
      const [first] = sessions;
      await runtime.events.append(first!, [turnDraft('t-41', 'one more turn about the garden plan')], new Date());
      await deliver(50);
      expect(await getSessionStatus(runtime, first!)).toMatchObject({ turnCount: 41, projectedThroughSeq: await runtime.events.lastSeq(first!) });
    } finally {
      await runtime.close();
    }
  });

  it('given no more of them than slices run at once, when the feed delivers the first batch, then each is projected at once to its stream end', async () => {
    const { runtime, sessions, deliver } = await backlog(5);
    try {
      await deliver(50);
      for (const key of sessions) expect((await getSessionStatus(runtime, key)).turnCount).toBe(40);
    } finally {
      await runtime.close();
    }
  });
});

describe('a queued session left half-projected by a crash is finished by a fresh scheduler', () => {
  const dir = mkdtempSync(join(tmpdir(), 'projection-restart-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const key = { userId: 'crash-user', sessionId: 's1' };
  const TURNS = 640;
  const schedule: ProjectionSchedule = { sliceEvents: 100, parallelism: 2, budgetMs: 3_600_000 };

  it('given two slices written and a third claimed when the process ends, when a new process serves the queue after the lease, then the session is projected whole', async () => {
    const first = await memoryRuntime({ MEMORY_DATA_DIR: join(dir, 'pglite') });
    first.embedder = fast(first.embedder);
    await appendTurns(first, key, TURNS);
    await enqueueProjection(first, await first.events.read(key, 0, 1));
    await serveProjectionQueue(first, schedule, { slices: 2 });
    const half = await getSessionStatus(first, key);
    expect(half.projectedThroughSeq).toBeGreaterThanOrEqual(200);
    expect(half.pending).toBeGreaterThan(0);
    // The third slice is claimed (leased) and then the process ends before it is written.
    expect(await first.projectionQueue.claim(1, new Date(), new Date(Date.now() + LEASE_MS))).toHaveLength(1);
    await first.close();

    const second = await memoryRuntime({ MEMORY_DATA_DIR: join(dir, 'pglite') });
    second.embedder = fast(second.embedder);
    try {
      // Within the lease the session is the crashed scheduler's; after it, the fresh one serves it to the end.
      expect((await serveProjectionQueue(second, schedule)).slices).toBe(0);
      const report = await atOffset(second, LEASE_MS / 1000 + 1, () => serveProjectionQueue(second, schedule));
      expect(report.caughtUp).toBe(1);
      expect(await second.projectionQueue.size()).toBe(0);
      const status = await getSessionStatus(second, key);
      expect(status).toMatchObject({ pending: 0, turnCount: TURNS, chunkedThroughSeq: TURNS });
      expect(await second.interactions.listBySession(key)).toHaveLength(TURNS / 10);
      // Each window was decided once: one InteractionSummarised per window, one init block, nothing twice.
      const lifecycle = (await second.events.read(key, TURNS)).map((e) => e.type);
      expect(lifecycle.filter((t) => t === 'InteractionSummarised')).toHaveLength(TURNS / 10);
      expect(lifecycle.filter((t) => t === 'SessionInitFixed')).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('given a slice that outlasts its lease, when another scheduler claims meanwhile, then the session is still held', async () => {
    const runtime = await memoryRuntime();
    let offset = 0;
    runtime.clock = { now: () => new Date(Date.now() + offset) };
    const slow = { userId: 'slow-user', sessionId: 's1' };
    await appendTurns(runtime, slow, 20);
    await enqueueProjection(runtime, await runtime.events.read(slow, 0, 1));
    // The slice's embeddings wait until released; the queue reports the extension it makes.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let embedding!: () => void;
    const embeds = new Promise<void>((resolve) => (embedding = resolve));
    const quick = fast(runtime.embedder);
    runtime.embedder = embedderWith(quick, async (texts) => {
      embedding();
      await released;
      return quick.embed(texts);
    });
    const queue = runtime.projectionQueue;
    const extend = queue.extend.bind(queue);
    let extended!: (entry: QueuedSession | null) => void;
    const extension = new Promise<QueuedSession | null>((resolve) => (extended = resolve));
    queue.extend = async (entry, until) => {
      const next = await extend(entry, until);
      extended(next);
      return next;
    };
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const serving = serveProjectionQueue(runtime, schedule, { slices: 1 });
      await embeds;
      // 25 s into the slice its lease (30 s from the claim) is extended by 30 s: at 40 s another scheduler finds it held.
      offset = 25_000;
      vi.advanceTimersByTime(LEASE_MS / 3);
      expect(await extension).toMatchObject({ key: slow });
      expect(await queue.claim(5, new Date(Date.now() + 40_000), new Date(Date.now() + 70_000))).toEqual([]);
      release();
      expect(await serving).toMatchObject({ slices: 1, failed: [] });
    } finally {
      vi.useRealTimers();
      await runtime.close();
    }
  });
});
