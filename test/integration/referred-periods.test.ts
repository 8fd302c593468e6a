import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelThreadPool } from '../../shared/adapters/local-models/index.js';
import type { PeriodReader } from '../../shared/application/ports.js';
import { applyEvents } from '../../shared/application/project-session.js';
import { retryDelayMs, serveProjectionQueue } from '../../shared/application/projection-scheduler.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import type { EventDraft } from '../../shared/contracts/events.js';
import { periodReferredTo } from '../../shared/domain/time-expressions.js';
import { createRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { embeddings, startOpenAITestServer, type OpenAITestServer } from '../support/openai-test-server.js';
import { atOffset, memoryRuntime } from '../support/runtime.js';

const said = (turnId: string, content: string, timestamp: string): EventDraft => ({ type: 'TurnAppended', data: { turnId, role: 'user', content, timestamp } });

describe('the period a turn refers to', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  }, 60_000);
  afterAll(() => runtime?.close());

  it("given turns with relative dates, when projected, then each is indexed with the period it means, read from the turn's own time", async () => {
    const key = { userId: 'u-referred', sessionId: 's1' };
    // Recorded long after they were said (an import): the clock must not be the anchor.
    await runtime.events.append(
      key,
      [said('t1', 'We adopted a kitten yesterday!', '2019-02-13T18:00:00Z'), said('t2', 'The kitten sleeps on the piano all day.', '2019-02-13T18:01:00Z')],
      new Date('2026-01-05T10:00:00Z'),
    );
    await applyEvents(runtime, key);

    const hits = await runtime.search.turns({ userId: key.userId, text: 'kitten', limit: 10, filters: {} }, 'fulltext');
    const bySeq = new Map(hits.map((h) => [h.seq, h]));
    expect(bySeq.get(1)?.refers).toEqual({ from: '2019-02-12T00:00:00.000Z', to: '2019-02-12T23:59:59.999Z' });
    expect(bySeq.get(2)).toBeDefined();
    expect(bySeq.get(2)?.refers).toBeUndefined();
    // And matched as words: a question naming the month without its year finds it.
    expect((await runtime.search.turns({ userId: key.userId, text: 'in February', limit: 10, filters: {} }, 'fulltext')).map((h) => h.seq)).toEqual([1]);
  });

  it('given a query naming a day, then a turn said later that refers to that day scores as if said on it', async () => {
    const key = { userId: 'u-referred-query', sessionId: 's1' };
    await runtime.events.append(
      key,
      [said('t1', 'I baked bread, then baked a cake.', '2020-06-01T10:00:00Z'), said('t2', 'I baked bread two days ago, the best one yet.', '2020-06-10T10:00:00Z')],
      new Date('2026-01-05T10:00:00Z'),
    );
    await applyEvents(runtime, key);

    // t1 matches "bake" twice, t2 once; t2 refers to 8 June.
    const { facts } = await searchFacts(runtime, key.userId, { query: 'What did I bake on 8 June 2020?', mode: 'search', topK: 2, sources: ['turns'], retrievers: ['fulltext'] });
    expect(facts.map((f) => f.turnIds)).toEqual([['t2'], ['t1']]);
    const { facts: unnamed } = await searchFacts(runtime, key.userId, { query: 'What did I bake?', mode: 'search', topK: 2, sources: ['turns'], retrievers: ['fulltext'] });
    expect(unnamed.map((f) => f.turnIds)).toEqual([['t1'], ['t2']]);
  });
});

describe("the period a turn refers to comes from the runtime's PeriodReader", () => {
  let runtime: Runtime;
  let parser: PeriodReader;
  beforeAll(async () => {
    runtime = await memoryRuntime();
    parser = runtime.periods;
  }, 60_000);
  afterAll(() => runtime?.close());
  const indexed = async (userId: string) => (await runtime.search.turns({ userId, text: 'piano', limit: 10, filters: {} }, 'fulltext')).map((h) => ({ seq: h.seq, refers: h.refers })).sort((a, b) => a.seq - b.seq);

  it('given a reader, when turns are projected, then only the turns that may refer to another day are asked (not one that says how long), and each is indexed with the period the reader answers', async () => {
    const asked: { text: string; at: string }[] = [];
    const march = { from: '2001-03-01T00:00:00.000Z', to: '2001-03-31T23:59:59.999Z' };
    runtime.periods = { referredPeriods: async (turns) => (asked.push(...turns), turns.map(({ text }) => (text.includes('sleeps') ? march : undefined))) };
    try {
      const key = { userId: 'u-reader', sessionId: 's1' };
      await runtime.events.append(
        key,
        [
          said('t1', 'She plays the piano.', '2019-02-13T18:00:00Z'),
          said('t2', 'The kitten sleeps on the piano since May.', '2019-02-13T18:01:00Z'),
          said('t3', 'It sleeps on the piano all day.', '2019-02-13T18:02:00Z'),
          said('t4', 'The piano was tuned last week.', '2019-02-13T18:03:00Z'),
        ],
        new Date(),
      );
      await applyEvents(runtime, key);
      expect(asked).toEqual([
        { text: 'The kitten sleeps on the piano since May.', at: '2019-02-13T18:01:00Z' },
        { text: 'The piano was tuned last week.', at: '2019-02-13T18:03:00Z' },
      ]);
      expect(await indexed(key.userId)).toEqual([
        { seq: 1, refers: undefined },
        { seq: 2, refers: march },
        { seq: 3, refers: undefined },
        { seq: 4, refers: undefined },
      ]);
      expect((await runtime.search.turns({ userId: key.userId, text: 'in March', limit: 10, filters: {} }, 'fulltext')).map((h) => h.seq)).toEqual([2]);
    } finally {
      runtime.periods = parser;
    }
  });

  it('given a slice whose turns have no time word, when projected, then the reader is not asked at all', async () => {
    let calls = 0;
    runtime.periods = { referredPeriods: async (turns) => (calls++, turns.map(() => undefined)) };
    try {
      const key = { userId: 'u-reader-timeless', sessionId: 's1' };
      await runtime.events.append(key, [said('t1', 'She plays the piano.', '2019-02-13T18:00:00Z'), said('t2', 'The kitten sleeps on the piano.', '2019-02-13T18:01:00Z')], new Date());
      await applyEvents(runtime, key);
      expect(calls).toBe(0);
      expect(await indexed(key.userId)).toEqual([
        { seq: 1, refers: undefined },
        { seq: 2, refers: undefined },
      ]);
    } finally {
      runtime.periods = parser;
    }
  });

  it('given the model thread dies parsing a slice\'s periods, then the slice fails and stays queued, and its retry on a new thread indexes them', async () => {
    const threads = new ModelThreadPool(1, { entry: new URL('../support/model-worker-stub.ts', import.meta.url) });
    runtime.periods = threads;
    process.env.MODEL_STUB_PERIODS_CRASH = '1';
    try {
      const key = { userId: 'u-crash', sessionId: 's1' };
      await runtime.events.append(key, [said('t1', 'The piano arrived yesterday.', '2019-02-13T18:00:00Z')], new Date());
      await runtime.projectionQueue.enqueue([key], runtime.clock.now());
      expect((await serveProjectionQueue(runtime, runtime.projection)).failed).toEqual([{ key, error: 'MemoryError internal' }]);
      await expect(threads.referredPeriods([{ text: 'x', at: '2019-02-13T18:00:00Z' }])).rejects.toMatchObject({ code: 'internal', message: expect.stringMatching(/model thread stopped \(Error: stub model exploded\)/) });
      expect(await indexed(key.userId)).toEqual([]);
      expect(await runtime.projectionQueue.size()).toBe(1);

      delete process.env.MODEL_STUB_PERIODS_CRASH; // the next thread started parses
      const retried = await atOffset(runtime, retryDelayMs(2) / 1000 + 1, () => serveProjectionQueue(runtime, runtime.projection));
      expect(retried).toMatchObject({ slices: 1, caughtUp: 1, failed: [] });
      // The stand-in answers a turn's own instant as its period.
      expect(await indexed(key.userId)).toEqual([{ seq: 1, refers: { from: '2019-02-13T18:00:00.000Z', to: '2019-02-13T18:00:00.000Z' } }]);
      expect(threads.starts).toBe(3);
    } finally {
      delete process.env.MODEL_STUB_PERIODS_CRASH;
      runtime.periods = parser;
      await threads.close();
    }
  });
});

describe('hosted models: the periods are parsed on model threads of their own', () => {
  let server: OpenAITestServer;
  beforeAll(async () => {
    server = await startOpenAITestServer();
    server.setDefault('embeddings', embeddings());
  });
  afterAll(() => server?.close());

  it('given MODEL_PROVIDER=openai, then the runtime parses on MODEL_THREADS threads, projects with them, and its close ends them', async () => {
    const runtime = await createRuntime(
      loadSettings({ MEMORY_DATA_DIR: 'memory://', MODEL_PROVIDER: 'openai', OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'test-key', EMBEDDING_DIMENSIONS: '8', MODEL_THREADS: '2', MODEL_MAX_RETRIES: '0' }),
    );
    try {
      expect(runtime.periods).toBeInstanceOf(ModelThreadPool);
      const threads = runtime.periods as ModelThreadPool;
      expect(threads.size).toBe(2);
      expect(threads.options.resourceLimits).toEqual({ maxYoungGenerationSizeMb: 8 }); // parse-only threads: a small young generation
      const key = { userId: 'u-hosted', sessionId: 's1' };
      await runtime.events.append(key, [said('t1', 'We adopted a kitten yesterday!', '2019-02-13T18:00:00Z')], new Date());
      await applyEvents(runtime, key);
      const [hit] = await runtime.search.turns({ userId: key.userId, text: 'kitten', limit: 10, filters: {} }, 'fulltext');
      expect(hit?.refers).toEqual(periodReferredTo('We adopted a kitten yesterday!', new Date('2019-02-13T18:00:00Z')));
      expect(threads.starts).toBe(1); // one request: the least busy thread started, the other not
    } finally {
      await runtime.close();
    }
    await expect(runtime.periods.referredPeriods([{ text: 'yesterday', at: '2019-02-13T18:00:00Z' }])).rejects.toMatchObject({ message: expect.stringContaining('closed') });
  }, 60_000);
});
