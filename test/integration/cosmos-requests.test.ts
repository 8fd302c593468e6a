import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { AppendTurnsBody } from '../../shared/contracts/turns.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import { FactSearchBody } from '../../shared/contracts/facts.js';
import type { InsightDocument } from '../../shared/contracts/insights.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { newSession } from '../../shared/domain/session.js';
import { openRecordedCosmos } from '../support/cosmos-requests.js';

// The recorder behind test/bench/cosmos-ru.ts: what it reports of each request is what the cost estimate prices.
describe('Cosmos request recorder (wire fake)', () => {
  let opened: Awaited<ReturnType<typeof openRecordedCosmos>>;
  beforeAll(async () => {
    opened = await openRecordedCosmos(3);
  });
  afterAll(async () => {
    await opened.close();
  });
  const turns = (...ids: string[]) => AppendTurnsBody.parse({ turns: ids.map((turnId) => ({ role: 'user', content: `turn ${turnId}`, turnId })) });

  it('sees an append as its tombstone checks, seq and key queries, one batch and the read-back of its turns, all in the user partition', async () => {
    const deps = { events: cosmosStores(opened.database).events, forgets: new CosmosForgetStore(opened.database), clock: { now: () => new Date() }, ids: { newId: () => 'unused' } };
    const key = { userId: 'append-user', sessionId: 's1' };
    await appendTurns(deps, key, turns('t1'));

    const requests = await opened.recorder.record(() => appendTurns(deps, key, turns('t2', 't3')));

    expect(requests.map((r) => [r.kind, r.container, r.scope])).toEqual([
      ['query', 'forgets', 'single-partition'],
      ['query', 'events', 'single-partition'],
      ['query', 'events', 'single-partition'],
      ['batch', 'events', 'single-partition'],
      ['query', 'forgets', 'single-partition'],
      ['query', 'events', 'single-partition'],
    ]);
    const [, lastSeq, keys, batch, , readBack] = requests;
    expect(lastSeq!.loaded).toHaveLength(1); // TOP 1 by seq reads the last event whole
    expect(keys!.loaded).toEqual([]);
    expect(readBack!.loaded).toHaveLength(2); // the two turns written, by their seqs, nothing else
    expect(batch!.writes.map((w) => [w.doc.seq, w.before])).toEqual([
      [2, undefined],
      [3, undefined],
    ]);
  });

  it('tells a point read that finds nothing, a first write and an overwrite of the same id apart', async () => {
    const { sessions } = cosmosStores(opened.database);
    const key = { userId: 'session-user', sessionId: 's1' };
    const doc = newSession(key, new Date('2026-01-05T10:00:00Z'));

    const requests = await opened.recorder.record(async () => {
      await sessions.get(key);
      const version = await sessions.put(doc, null);
      await sessions.put({ ...doc, turnCount: 1 }, version);
    });

    expect(requests.map((r) => [r.kind, r.status, r.writes.length, r.writes[0]?.before !== undefined])).toEqual([
      ['point read', 404, 0, false],
      ['create', 201, 1, false],
      ['replace', 200, 1, true],
    ]);
  });

  it('runs a ranked query the fake cannot score as its unranked filter, and reports the query as sent', async () => {
    const { search } = cosmosStores(opened.database);
    const turn = (seq: number) => ({ userId: 'search-user', sessionId: 's1', seq, turnId: `t${seq}`, speaker: 'user', text: `user: pension ${seq}`, matchText: `pension ${seq}`, timestamp: '2026-01-05T10:00:00.000Z', embeddingModel: 'm', vector: [1, 0, seq] });
    await search.indexTurns([turn(1), turn(2)]);

    const requests = await opened.recorder.record(() => search.turns({ userId: 'search-user', text: 'pension', vector: { model: 'm', values: [1, 0, 0] }, limit: 10, filters: {} }, 'fulltext'));

    expect(requests).toHaveLength(1);
    expect(requests[0]!.query).toContain('ORDER BY RANK FullTextScore(c.content');
    expect(requests[0]!.items).toBe(2);
    expect(requests[0]!.loaded).toHaveLength(2);
  });

  it("reads a session's turn vectors back in one query in the user partition, by seq and embedding model", async () => {
    const { search } = cosmosStores(opened.database);
    const turn = (sessionId: string, seq: number, embeddingModel = 'm') => ({ userId: 'vectors-user', sessionId, seq, turnId: `t${seq}`, speaker: 'user', text: `user: turn ${seq}`, matchText: `turn ${seq}`, timestamp: '2026-01-05T10:00:00.000Z', embeddingModel, vector: [0.5, 0.25, seq] });
    await search.indexTurns([turn('s1', 1), turn('s1', 2), turn('s1', 3, 'other'), turn('s2', 1)]);

    const requests = await opened.recorder.record(async () => {
      const read = await search.turnVectors({ userId: 'vectors-user', sessionId: 's1' }, [1, 3, 4], 'm');
      expect([...read]).toEqual([[1, Float32Array.of(0.5, 0.25, 1)]]);
    });

    expect(requests.map((r) => [r.kind, r.scope])).toEqual([['query', 'single-partition']]);
    expect(await search.turnVectors({ userId: 'vectors-user', sessionId: 's1' }, [], 'm')).toEqual(new Map());
  });

  it('marks a turn hit that ends by asking a question (asks), read from the text the turn document shows', async () => {
    const { search } = cosmosStores(opened.database);
    const turn = (seq: number, text: string) => ({ userId: 'asking-user', sessionId: 's1', seq, turnId: `t${seq}`, speaker: 'user', text, matchText: text, timestamp: '2026-01-05T10:00:00.000Z', embeddingModel: 'm', vector: [1, 0, seq] });
    await search.indexTurns([turn(1, 'user: my pension plan is settled.'), turn(2, 'user: what about your pension plan? ')]);

    for (const retriever of ['fulltext', 'vector'] as const) {
      const hits = await search.turns({ userId: 'asking-user', text: 'pension plan', vector: { model: 'm', values: [1, 0, 0] }, limit: 10, filters: {} }, retriever);
      expect(hits.map((h) => [h.seq, h.asks]).sort()).toEqual([
        [1, undefined],
        [2, true],
      ]);
    }
  });

  it('prices a fact search: no speakers DISTINCT, the speakers read once for two searches, one chunkedThrough read, vectors only in the vector rankings', async () => {
    const stores = cosmosStores(opened.database);
    const userId = 'fact-user';
    const at = '2026-01-05T10:00:00.000Z';
    const turn = (seq: number, speaker: string) => ({ userId, sessionId: 's1', seq, turnId: `t${seq}`, speaker, text: `${speaker}: pension ${seq}`, matchText: `pension ${seq}`, timestamp: at, embeddingModel: 'm', vector: [1, 0, seq] });
    await stores.search.indexTurns([turn(1, 'Maria'), turn(2, 'assistant')]);
    await stores.sessions.put({ ...newSession({ userId, sessionId: 's1' }, new Date(at)), chunkedThroughSeq: 2 }, null);
    const insight = (id: string): InsightDocument => ({
      schemaVersion: SCHEMA_VERSION,
      id,
      userId,
      type: 'session',
      sessionId: 's1',
      sourceSessionIds: ['s1'],
      category: 'financial_goals',
      text: `Maria saves into a pension (${id})`,
      confidence: 0.8,
      importance: 'high',
      status: 'pending',
      embeddingModel: 'm',
      insightVector: [1, 0, 0],
      createdAt: at,
      updatedAt: at,
    });
    await stores.insights.upsert([insight('i1'), insight('i2')]);
    const deps = {
      ...stores,
      embedder: { model: 'm', dimensions: 3, embed: async (texts: string[]) => texts.map(() => [1, 0, 0]) },
      memory: { topKFacts: 5 },
      clock: { now: () => new Date(at) },
    } as unknown as Parameters<typeof searchFacts>[0];
    const body = FactSearchBody.parse({ query: 'What does Maria save for her pension?' });

    const first = await opened.recorder.record(() => searchFacts(deps, userId, body));
    const second = await opened.recorder.record(() => searchFacts(deps, userId, body));

    const queries = (requests: typeof first) => requests.map((r) => r.query ?? '');
    expect(queries([...first, ...second]).filter((q) => /DISTINCT/.test(q))).toEqual([]);
    expect(queries(first).filter((q) => q.includes("c.kind = 'speaker'"))).toHaveLength(1);
    expect(queries(second).filter((q) => q.includes("c.kind = 'speaker'"))).toEqual([]);
    for (const requests of [first, second]) expect(queries(requests).filter((q) => q.includes('ARRAY_CONTAINS(@sessionIds'))).toHaveLength(1);
    for (const r of [...first, ...second]) {
      expect(r.scope).toBe('single-partition');
      // What a query returns holds no vector: its projection names none, and only a vector ranking sends one.
      expect(/^SELECT\s+([\s\S]*?)\s+FROM c\b/.exec(r.query ?? '')?.[1]).not.toMatch(/Vector|\*/);
      expect(r.parameters?.some((p) => p.name === '@vector')).toBe(/VectorDistance\(/.test(r.query ?? ''));
    }
    expect(queries(first).filter((q) => /VectorDistance\(/.test(q))).toHaveLength(5); // turns, interactions (content, summary), insights, summaries
  });

  it('ranks interactions by vector on their vector documents, and reads what the returned facts show afterwards, for them only', async () => {
    const stores = cosmosStores(opened.database);
    const userId = 'window-user';
    const at = '2026-01-05T10:00:00.000Z';
    const window = (n: number): InteractionDocument => ({
      schemaVersion: SCHEMA_VERSION,
      id: `s1:${String(n).padStart(10, '0')}`,
      userId,
      sessionId: 's1',
      agentIds: ['advisor'],
      turnIds: [`t${n}`, `t${n + 1}`],
      seqRange: [n, n + 1],
      startedAt: at,
      endedAt: at,
      content: `user: pension ${n}`,
      summary: `window ${n} on the pension`,
      topics: [],
      entities: [],
      embeddingModel: 'm',
      contentVector: [1, 0, n],
      summaryVector: [0, 1, n],
      createdAt: at,
    });
    const windows = [1, 3, 5, 7, 9, 11, 13, 15].map(window);
    await stores.interactions.upsert(windows);
    expect(await stores.interactions.listBySession({ userId, sessionId: 's1' })).toEqual(windows);
    const deps = {
      ...stores,
      embedder: { model: 'm', dimensions: 3, embed: async (texts: string[]) => texts.map(() => [1, 0, 0]) },
      memory: { topKFacts: 5 },
      clock: { now: () => new Date(at) },
    } as unknown as Parameters<typeof searchFacts>[0];

    let result: Awaited<ReturnType<typeof searchFacts>> | undefined;
    const requests = await opened.recorder.record(async () => {
      result = await searchFacts(deps, userId, FactSearchBody.parse({ query: 'pension', sources: ['interactions'], retrievers: ['vector'], topK: 3 }));
    });

    expect(result!.facts).toHaveLength(3);
    for (const fact of result!.facts) expect(fact.text).toBe(windows.find((w) => w.id === fact.id)!.summary);
    const ranked = requests.filter((r) => /VectorDistance\(/.test(r.query ?? ''));
    expect(ranked).toHaveLength(2); // content and summary vectors
    for (const r of ranked) expect(Math.max(...r.loaded!)).toBeLessThan(1024); // vector documents: no text, one vector
    const shown = requests.filter((r) => (r.query ?? '').startsWith('SELECT c.id, c.turnIds, c.summary'));
    expect(shown).toHaveLength(1);
    expect(shown[0]!.parameters!.find((p) => p.name === '@ids')!.value).toHaveLength(3);
  });

  it('an interaction written before its vectors had documents of their own still lists, ranks by vector (filters applied) and shows', async () => {
    const { database } = opened;
    const stores = cosmosStores(database);
    const key = { userId: 'old-window-user', sessionId: 's1' };
    const at = new Date('2026-01-05T10:00:00Z');
    const window = (from: number): InteractionDocument => ({
      schemaVersion: SCHEMA_VERSION,
      id: `${key.sessionId}:${String(from).padStart(10, '0')}`,
      ...key,
      agentIds: ['advisor'],
      turnIds: [`t${from}`],
      seqRange: [from, from + 1],
      startedAt: at.toISOString(),
      endedAt: at.toISOString(),
      content: `user: window ${from}`,
      summary: `window ${from}`,
      topics: [],
      entities: [],
      embeddingModel: 'test-3',
      contentVector: [0.1, 0.2, from],
      summaryVector: [0.3, 0.2, from],
      createdAt: at.toISOString(),
    });
    const [old, current] = [window(1), window(3)];
    await database.container(COSMOS_CONTAINERS.interactions.name).items.create({ ...old, fromSeq: 1 }); // as written before
    await stores.interactions.upsert([current]);
    expect(await stores.interactions.listBySession(key)).toEqual([old, current]);
    const query = { userId: key.userId, text: 'window', vector: { model: 'test-3', values: [0.1, 0.2, 0.3] }, limit: 10, filters: { sessionId: key.sessionId } };
    for (const retriever of ['vector', 'summaryVector'] as const) {
      const hits = await stores.search.interactions(query, retriever);
      expect(hits.map((h) => [h.id, h.shown])).toEqual([
        [old.id, undefined],
        [current.id, undefined],
      ]);
      const shown = await stores.search.show(key.userId, { turns: [], interactions: hits });
      expect(shown.interactions.map((h) => h.shown)).toEqual([
        { turnIds: old.turnIds, summary: old.summary },
        { turnIds: current.turnIds, summary: current.summary },
      ]);
    }
    // Filters apply to the vector documents as to the interactions.
    expect(await stores.search.interactions({ ...query, filters: { agentId: 'someone-else' } }, 'vector')).toEqual([]);
    expect(await stores.search.interactions({ ...query, filters: { sessionId: 'other' } }, 'summaryVector')).toEqual([]);
    expect((await stores.search.interactions({ ...query, filters: { from: '2030-01-01T00:00:00Z' } }, 'vector')).map((h) => h.id)).toEqual([]);
  });
});
