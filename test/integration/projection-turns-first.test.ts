import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import type { ChatModel, Embedder } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import { serveProjectionQueue, type ProjectionSchedule } from '../../shared/application/projection-scheduler.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import { meanDirection } from '../../shared/domain/ranking.js';
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

  /** A window whose last turn is projected before it is decided: its interaction and its transcript's lines. */
  async function decideWindowAfterItsTurns(key: SessionKey, embedder: Embedder) {
    await appendTurns(key, 1, K - 1);
    await projectSession({ ...runtime, embedder }, key);
    await appendTurns(key, K, K);
    await projectSession({ ...runtime, embedder }, key);
    const [window] = await runtime.interactions.listBySession(key);
    // Each transcript line of these unnamed turns is the text its turn row was embedded with.
    const turnTexts = window!.content.split('\n');
    expect(turnTexts).toHaveLength(K);
    return { window: window!, turnTexts };
  }

  it("given a window decided after its turns were projected, then its content vector is the mean direction of its turns' vectors, and its transcript is not embedded", async () => {
    const key = { userId: 'u-first', sessionId: 's-mean' };
    const embedded: string[] = [];
    const vectorOf = new Map<string, number[]>();
    const embedder = Object.assign(Object.create(runtime.embedder) as Embedder, {
      embed: async (texts: readonly string[]) => {
        const vectors = await runtime.embedder.embed(texts);
        texts.forEach((t, i) => (embedded.push(t), vectorOf.set(t, vectors[i]!)));
        return vectors;
      },
    });
    const { window, turnTexts } = await decideWindowAfterItsTurns(key, embedder);
    const expected = meanDirection(turnTexts.map((t) => vectorOf.get(t)!));
    window.contentVector!.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 6));
    expect(embedded).not.toContain(window.content);
  });

  it("given a window decided after its turns' texts have left the embedder's memory, then their vectors are read from the turn index, not embedded again", async () => {
    const key = { userId: 'u-first', sessionId: 's-forgotten' };
    const embedded: string[] = [];
    const embedder = Object.assign(Object.create(runtime.embedder) as Embedder, {
      embed: async (texts: readonly string[]) => (embedded.push(...texts), runtime.embedder.embed(texts)),
      remembers: () => false,
    });
    const { window, turnTexts } = await decideWindowAfterItsTurns(key, embedder);
    // Each turn's text was embedded once, when its row was written.
    for (const text of turnTexts) expect(embedded.filter((t) => t === text), text).toHaveLength(1);
    const [from, to] = window.seqRange;
    // The window's seqs hold its turns and the init block, which has no row.
    const stored = await runtime.search.turnVectors(key, Array.from({ length: to - from + 1 }, (_, i) => from + i), runtime.embedder.model);
    expect(stored.size).toBe(K);
    const expected = meanDirection([...stored.values()]);
    window.contentVector!.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 6));
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

describe('a serving of the projection queue takes the sessions queued while its slices run', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime({ K_TURN_BUFFER: String(K) });
  }, 60_000);
  afterAll(() => runtime?.close());

  it("given a serving with a slot free while one session's window model call runs, when another session is queued, then the same serving projects it before that call returns", async () => {
    const held = { userId: 'u-held', sessionId: 's1' };
    const later = { userId: 'u-later', sessionId: 's1' };
    await runtime.events.append(held, Array.from({ length: K }, (_, i) => turnDraft(`t${i}`, `turn ${i} about the garden`)), new Date());
    await runtime.projectionQueue.enqueue([held], runtime.clock.now());
    const gate = gatedChat(runtime.chat);
    let served = false;
    const serving = serveProjectionQueue({ ...runtime, chat: gate.chat }, schedule).finally(() => (served = true));
    await gate.reached;

    await runtime.events.append(later, [turnDraft('hello', 'Hi, I am new here')], new Date());
    await runtime.projectionQueue.enqueue([later], runtime.clock.now());
    // Before the change the second slot's worker had found nothing and left: the new session waited for the held call.
    for (let polls = 0; polls < 40 && (await getSessionStatus(runtime, later)).turnCount === 0; polls++) await new Promise((r) => setTimeout(r, 50));
    expect(await getSessionStatus(runtime, later)).toMatchObject({ pending: 0, turnCount: 1 });
    expect(served).toBe(false);

    gate.release();
    expect(await serving).toMatchObject({ caughtUp: 2, failed: [] });
    expect(await getSessionStatus(runtime, held)).toMatchObject({ pending: 0, turnCount: K });
  });
});
