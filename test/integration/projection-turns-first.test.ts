import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import { getContext } from '../../shared/application/get-context.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import type { ChatModel, InsightStore } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import { serveProjectionQueue, type ProjectionSchedule } from '../../shared/application/projection-scheduler.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { invocationContext } from '../../shared/platform/local-host/invocation.js';
import { turnDraft } from '../support/builders.js';
import { memoryRuntime } from '../support/runtime.js';

const K = 4;
const schedule: ProjectionSchedule = { sliceEvents: 50, parallelism: 2, budgetMs: 3_600_000 };

/** `chat` with its window calls held until released (or failing): a projector caught in a window's model call. */
function gatedChat(chat: ChatModel, { fail = false } = {}) {
  let release!: () => void;
  let entered!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  const run: ChatModel['run'] = async (task, input) => {
    if (task === 'windowMetadata') {
      entered();
      await open;
      if (fail) throw new Error('the model went away');
    }
    return chat.run(task, input);
  };
  return { chat: Object.assign(Object.create(chat) as ChatModel, { run }), reached, release };
}

const types = async (runtime: Runtime, key: SessionKey) => (await runtime.events.read(key, 0)).map((e) => e.type);
const count = (list: string[], type: string) => list.filter((t) => t === type).length;

describe("a new turn is projected before its window's summary", () => {
  let runtime: Runtime;
  /** Seqs of every turn-index row written, in order. */
  const indexed: number[] = [];
  beforeAll(async () => {
    runtime = await memoryRuntime({ K_TURN_BUFFER: String(K) });
    const indexTurns = runtime.search.indexTurns.bind(runtime.search);
    runtime.search.indexTurns = async (turns) => {
      indexed.push(...turns.map((t) => t.seq));
      return indexTurns(turns);
    };
  }, 60_000);
  afterAll(() => runtime?.close());

  async function appendTurns(key: SessionKey, from: number, to: number): Promise<number> {
    let seq = 0;
    for (let i = from; i <= to; i++) seq = (await runtime.events.append(key, [turnDraft(`t${i}`, `turn ${i} about the garden`)], new Date()))[0]!.seq;
    return seq;
  }

  it("given a window's last turn, when its window's model call is still running, then the turn is already searchable and in the session document, and the window is decided once after", async () => {
    const key = { userId: 'u-first', sessionId: 's1' };
    await appendTurns(key, 1, K - 1);
    await projectSession(runtime, key);
    const last = await appendTurns(key, K, K);

    const gate = gatedChat(runtime.chat);
    const projecting = projectSession({ ...runtime, chat: gate.chat }, key);
    await gate.reached;
    expect(indexed).toContain(last);
    expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBeGreaterThanOrEqual(last);
    expect(count(await types(runtime, key), 'InteractionSummarised')).toBe(0);

    gate.release();
    await projecting;
    expect(count(await types(runtime, key), 'InteractionSummarised')).toBe(1);
    expect(await runtime.interactions.listBySession(key)).toHaveLength(1);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: K, chunkedThroughSeq: last });
    expect(indexed.filter((s) => s === last)).toHaveLength(1);
  });

  it("given a window's model call that fails, when the session is projected again, then the turn written first is kept and the window is decided once", async () => {
    const key = { userId: 'u-first', sessionId: 's2' };
    const last = await appendTurns(key, 1, K);
    const gate = gatedChat(runtime.chat, { fail: true });
    const projecting = projectSession({ ...runtime, chat: gate.chat }, key);
    await gate.reached;
    gate.release();
    await expect(projecting).rejects.toThrow('the model went away');
    expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(last);
    expect(count(await types(runtime, key), 'InteractionSummarised')).toBe(0);

    await projectSession(runtime, key);
    expect(count(await types(runtime, key), 'InteractionSummarised')).toBe(1);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: K, chunkedThroughSeq: last });
  });

  it("given the change feed delivering a window's last turn and then the next turn, when their batches are handled, then both turns are projected and the window is left queued for the scheduler, which decides it once", async () => {
    const key = { userId: 'u-feed', sessionId: 's1' };
    let cursor = (await runtime.changeFeed!.readFeed(null, 100_000)).cursor;
    const deliver = async () => {
      const batch = await runtime.changeFeed!.readFeed(cursor, 500);
      cursor = batch.cursor ?? cursor;
      await projectHandler(batch.events, invocationContext('cosmos-events-project'));
    };
    await serveProjectionQueue(runtime, schedule); // what earlier tests left queued
    const chat = runtime.chat;
    const calls: string[] = [];
    runtime.chat = Object.assign(Object.create(chat) as ChatModel, { run: ((task, input) => (calls.push(task), chat.run(task, input))) as ChatModel['run'] });
    try {
      await appendTurns(key, 1, K - 1);
      await deliver();
      await serveProjectionQueue(runtime, schedule); // the init block the feed left queued
      await deliver(); // its SessionInitFixed event
      expect(await runtime.projectionQueue.size()).toBe(0);
      const last = await appendTurns(key, K, K);
      await deliver();
      expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(last);
      expect(indexed).toContain(last);
      expect(calls).toEqual([]);
      expect(await runtime.projectionQueue.size()).toBe(1);
      // The status counts the window as pending until it is decided: `pending: 0` still means summarised too.
      expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 1, projectedThroughSeq: last, chunkedThroughSeq: 0 });

      // The session's next turn, while its window waits in the queue: the feed projects it too, the window still waits.
      const next = await appendTurns(key, K + 1, K + 1);
      await deliver();
      expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(next);
      expect(indexed).toContain(next);
      expect(calls).toEqual([]);
      expect(await runtime.projectionQueue.size()).toBe(1);

      expect(await serveProjectionQueue(runtime, schedule)).toMatchObject({ caughtUp: 1, failed: [] });
      expect(calls).toEqual(['windowMetadata']);
      expect(count(await types(runtime, key), 'InteractionSummarised')).toBe(1);
      expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: K + 1, chunkedThroughSeq: last });
      expect(await runtime.projectionQueue.size()).toBe(0);
    } finally {
      runtime.chat = chat;
    }
  });

  it('given projectors racing (the feed, the scheduler and direct projections) while turns keep arriving, then every turn is projected and every window decided exactly once', async () => {
    const key = { userId: 'u-race', sessionId: 's1' };
    const turns = 6 * K + 1;
    let cursor = (await runtime.changeFeed!.readFeed(null, 100_000)).cursor;
    const deliver = async () => {
      const batch = await runtime.changeFeed!.readFeed(cursor, 500);
      cursor = batch.cursor ?? cursor;
      await projectHandler(batch.events, invocationContext('cosmos-events-project'));
    };
    for (let i = 1; i <= turns; i++) {
      await runtime.events.append(key, [turnDraft(`t${i}`, `turn ${i} about the garden`)], new Date());
      if (i % 3 === 0) await Promise.all([deliver(), serveProjectionQueue(runtime, schedule), projectSession(runtime, key, { sliceEvents: 5 }), projectSession(runtime, key)]);
    }
    await deliver();
    await serveProjectionQueue(runtime, schedule);
    await projectSession(runtime, key);
    const list = await types(runtime, key);
    expect(count(list, 'InteractionSummarised')).toBe(Math.floor(turns / K));
    expect(count(list, 'SessionInitFixed')).toBe(1);
    expect(await runtime.interactions.listBySession(key)).toHaveLength(Math.floor(turns / K));
    const status = await getSessionStatus(runtime, key);
    expect(status).toMatchObject({ pending: 0, turnCount: turns });
    const turnSeqs = (await runtime.events.read(key, 0)).filter((e) => e.type === 'TurnAppended').map((e) => e.metadata.seq);
    expect(turnSeqs.every((seq) => indexed.includes(seq))).toBe(true);
  });

  it("given a forget that runs to its end while the projector waits on the window's model call, then nothing the projector wrote is left", async () => {
    const key = { userId: 'u-forget', sessionId: 's1' };
    await appendTurns(key, 1, K);
    const gate = gatedChat(runtime.chat);
    const projecting = projectSession({ ...runtime, chat: gate.chat }, key);
    await gate.reached;
    await beginForget(runtime, key);
    await purgeStores(runtime, key);
    await finishForget(runtime, { ...key, removed: 0 });
    gate.release();
    await projecting;
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(await runtime.events.lastSeq(key)).toBe(0);
    expect(Object.values(await runtime.forgets.scan(key)).reduce((a, b) => a + b, 0)).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });
});

/** `insights` with its profile reads held until released (or failing): a projector caught fixing an init block. */
function gatedInsights(insights: InsightStore, { fail = false, readers = 1 } = {}) {
  let release!: () => void;
  let entered!: () => void;
  let waiting = 0;
  const open = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  const getProfile: InsightStore['getProfile'] = async (userId) => {
    if (++waiting === readers) entered();
    await open;
    if (fail) throw new Error('the store went away');
    return insights.getProfile(userId);
  };
  return { insights: Object.assign(Object.create(insights) as InsightStore, { getProfile }), reached, release };
}

describe("a session's first turn is projected before its init block is fixed", () => {
  let runtime: Runtime;
  const indexed: number[] = [];
  /** Users whose profile was read (the init block's decision, or what /context shows before it is fixed). */
  const profileReads: string[] = [];
  const PROFILE = 'prefers index funds';
  beforeAll(async () => {
    runtime = await memoryRuntime({ K_TURN_BUFFER: String(K) });
    const indexTurns = runtime.search.indexTurns.bind(runtime.search);
    runtime.search.indexTurns = async (turns) => {
      indexed.push(...turns.map((t) => t.seq));
      return indexTurns(turns);
    };
    const getProfile = runtime.insights.getProfile.bind(runtime.insights);
    runtime.insights.getProfile = async (userId) => (profileReads.push(userId), getProfile(userId));
  }, 60_000);
  afterAll(() => runtime?.close());

  async function firstTurn(key: SessionKey): Promise<number> {
    const at = new Date();
    await runtime.insights.putProfile({ schemaVersion: SCHEMA_VERSION, id: 'profile', userId: key.userId, type: 'long_term', profile: PROFILE, sourceInsightIds: ['i1'], version: 1, updatedAt: at.toISOString() });
    return (await runtime.events.append(key, [turnDraft('t1', 'the first turn, about pensions')], at))[0]!.seq;
  }

  it("given a session's first turn, when its init block's profile read is held, then the turn is already searchable and in the session document, the status counts the init block as pending and the context shows the profile; once released, the init block is fixed once", async () => {
    const key = { userId: 'u-init', sessionId: 's1' };
    const seq = await firstTurn(key);
    const gate = gatedInsights(runtime.insights);
    const projecting = projectSession({ ...runtime, insights: gate.insights }, key);
    await gate.reached;
    expect(indexed).toContain(seq);
    expect((await runtime.sessions.get(key))!.doc).toMatchObject({ projectedThroughSeq: seq, turnCount: 1 });
    expect((await runtime.sessions.get(key))!.doc.init).toBeUndefined();
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 1, projectedThroughSeq: seq });
    expect((await getContext(runtime, key, {})).sections.profile).toBe(PROFILE);
    expect(count(await types(runtime, key), 'SessionInitFixed')).toBe(0);

    gate.release();
    await projecting;
    expect(count(await types(runtime, key), 'SessionInitFixed')).toBe(1);
    expect((await runtime.sessions.get(key))!.doc.init).toEqual({ profile: PROFILE, recentSessions: [] });
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: 1 });
    expect(indexed.filter((s) => s === seq)).toHaveLength(1);
  });

  it('given the init block\'s reads failing, when the session is projected again, then the turn written first is kept and the init block is fixed once', async () => {
    const key = { userId: 'u-init', sessionId: 's2' };
    const seq = await firstTurn(key);
    const gate = gatedInsights(runtime.insights, { fail: true });
    const projecting = projectSession({ ...runtime, insights: gate.insights }, key);
    await gate.reached;
    gate.release();
    await expect(projecting).rejects.toThrow('the store went away');
    expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(seq);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 1 });

    await projectSession(runtime, key);
    expect(count(await types(runtime, key), 'SessionInitFixed')).toBe(1);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: 1 });
  });

  it("given two projectors of a session's first turn both held in its init block's reads, then the turn is searchable meanwhile and the init block is fixed once", async () => {
    const key = { userId: 'u-init', sessionId: 's3' };
    const seq = await firstTurn(key);
    const gate = gatedInsights(runtime.insights, { readers: 2 });
    const deps = { ...runtime, insights: gate.insights };
    const projecting = Promise.all([projectSession(deps, key), projectSession(deps, key, { sliceEvents: 5 })]);
    await gate.reached;
    expect(indexed).toContain(seq);
    gate.release();
    await projecting;
    expect(count(await types(runtime, key), 'SessionInitFixed')).toBe(1);
    expect((await runtime.sessions.get(key))!.doc.init).toEqual({ profile: PROFILE, recentSessions: [] });
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: 1 });
  });

  it("given the change feed delivering a session's first turn, when its batch is handled, then the turn is projected without reading the profile, and the init block is left queued for the scheduler, which fixes it once", async () => {
    const key = { userId: 'u-init-feed', sessionId: 's1' };
    let cursor = (await runtime.changeFeed!.readFeed(null, 100_000)).cursor;
    const deliver = async () => {
      const batch = await runtime.changeFeed!.readFeed(cursor, 500);
      cursor = batch.cursor ?? cursor;
      await projectHandler(batch.events, invocationContext('cosmos-events-project'));
    };
    await serveProjectionQueue(runtime, schedule); // what earlier tests left queued
    const seq = await firstTurn(key);
    profileReads.length = 0;
    await deliver();
    expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(seq);
    expect(indexed).toContain(seq);
    expect(profileReads).toEqual([]);
    expect(await runtime.projectionQueue.size()).toBe(1);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 1, projectedThroughSeq: seq });

    // The session's next turn, while its init block waits in the queue: the feed projects it too.
    const next = (await runtime.events.append(key, [turnDraft('t2', 'the second turn')], new Date()))[0]!.seq;
    await deliver();
    expect((await runtime.sessions.get(key))!.doc.projectedThroughSeq).toBe(next);
    expect(profileReads).toEqual([]);

    expect(await serveProjectionQueue(runtime, schedule)).toMatchObject({ caughtUp: 1, failed: [] });
    expect(profileReads).toEqual([key.userId]);
    await deliver(); // the SessionInitFixed event itself: already projected, nothing to do
    expect(count(await types(runtime, key), 'SessionInitFixed')).toBe(1);
    expect(await getSessionStatus(runtime, key)).toMatchObject({ pending: 0, turnCount: 2 });
    expect((await runtime.sessions.get(key))!.doc.init).toEqual({ profile: PROFILE, recentSessions: [] });
    expect(await runtime.projectionQueue.size()).toBe(0);
  });

  it("given a forget that runs to its end while the projector waits on the init block's reads, then nothing the projector wrote is left", async () => {
    const key = { userId: 'u-init-forget', sessionId: 's1' };
    await firstTurn(key);
    const gate = gatedInsights(runtime.insights);
    const projecting = projectSession({ ...runtime, insights: gate.insights }, key);
    await gate.reached;
    // What the forget purges includes the turn written ahead of the init block.
    expect(await runtime.sessions.get(key)).not.toBeNull();
    await beginForget(runtime, key);
    await purgeStores(runtime, key);
    await finishForget(runtime, { ...key, removed: 0 });
    gate.release();
    await projecting;
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(await runtime.events.lastSeq(key)).toBe(0);
    expect(Object.values(await runtime.forgets.scan(key)).reduce((a, b) => a + b, 0)).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });
});
