import type { Container, FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import {
  buildFullTextQuery,
  buildHybridQuery,
  buildSpeakersQuery,
  buildShownQuery,
  interactionDocument,
  interactionVectorDocuments,
  speakerDocument,
  SPEAKERS_CACHE_MS,
  buildVectorQuery,
  CosmosSearchIndex,
  INDEX_CONCURRENCY,
  MAX_SEARCH_TERMS,
  searchTerms,
  turnDocument,
} from '../../../../shared/adapters/cosmos/search.js';
import { float32Component } from '../../../../shared/adapters/cosmos/vectors.js';
import type { IndexedTurn, SearchQuery } from '../../../../shared/application/search-ports.js';
import { MemoryError } from '../../../../shared/domain/errors.js';

// Cosmos DB's scoring functions do not run on the wire fake, so these tests pin the exact SQL and parameters, and the
// adapter's handling of what a real container would return, through a hand-made container double.

const TURN_SELECT = 'SELECT TOP 10 c.sessionId, c.seq, c.turnId, c.agentId, c.speaker, c.text, c.timestamp, c.refersFrom, c.refersTo FROM c';
const WINDOW_SELECT = 'SELECT TOP 10 c.id, c.sessionId, c.seqRange, c.turnIds, c.agentIds, c.summary, c.startedAt FROM c';
const TURN_SELECT_PARAM = TURN_SELECT.replace('TOP 10', 'TOP @limit');
const WINDOW_VECTOR_SELECT = 'SELECT TOP @limit c.id, c.interactionId, c.sessionId, c.seqRange, c.agentIds, c.startedAt FROM c';

const vector = { model: 'use-lite-512', values: [0.1, -0.2, 0.3] };

const query = (overrides: Partial<SearchQuery> = {}): SearchQuery => ({
  userId: 'u-1',
  text: 'When did Caroline go to the LGBTQ support group?',
  vector,
  limit: 10,
  filters: {},
  ...overrides,
});

const allFilters = { sessionId: 's-7', agentId: 'travel-agent', from: '2026-01-01T00:00:00+02:00', to: '2026-02-01T00:00:00Z' };
const filterParams = [
  { name: '@sessionId', value: 's-7' },
  { name: '@agentId', value: 'travel-agent' },
  { name: '@from', value: '2025-12-31T22:00:00.000Z' },
  { name: '@to', value: '2026-02-01T00:00:00.000Z' },
];
const termParams = ['caroline', 'go', 'lgbtq', 'support', 'group'].map((value, i) => ({ name: `@t${i}`, value }));
const TERMS = '@t0, @t1, @t2, @t3, @t4';

/** A container double: records every query and upsert, answers queries with canned rows. */
function fakeContainer(rows: unknown[] = [], upsert: (doc: unknown) => Promise<unknown> = async () => ({}), create: (doc: unknown) => Promise<unknown> = async () => ({})) {
  const queries: { spec: SqlQuerySpec; options: FeedOptions | undefined }[] = [];
  const upserts: unknown[] = [];
  const creates: unknown[] = [];
  const container = {
    items: {
      query: (spec: SqlQuerySpec, options?: FeedOptions) => {
        queries.push({ spec, options });
        return { fetchAll: async () => ({ resources: rows }) };
      },
      upsert: async (doc: unknown) => {
        upserts.push(doc);
        return upsert(doc);
      },
      create: async (doc: unknown) => {
        creates.push(doc);
        return create(doc);
      },
    },
  };
  return { container: container as unknown as Container, queries, upserts, creates };
}

describe('searchTerms', () => {
  it('keeps the content words of a question, lowercased, in order', () => {
    expect(searchTerms('When did Caroline go to the LGBTQ support group?')).toEqual(['caroline', 'go', 'lgbtq', 'support', 'group']);
  });

  it('drops duplicates, one-letter words, possessives and apostrophes', () => {
    expect(searchTerms("Melanie's kids don't like Paris; PARIS is loud, a b c")).toEqual(['melanie', 'kids', 'like', 'paris', 'loud']);
  });

  it('keeps letters of any script and numbers', () => {
    expect(searchTerms('Café in München, 2023 – über 9000')).toEqual(['café', 'münchen', '2023', 'über', '9000']);
  });

  it('caps the number of terms', () => {
    const words = Array.from({ length: 30 }, (_, i) => `word${i}`);
    expect(searchTerms(words.join(' '))).toEqual(words.slice(0, MAX_SEARCH_TERMS));
    expect(searchTerms(words.join(' '), 3)).toEqual(['word0', 'word1', 'word2']);
  });

  it('has no terms for empty or stop-word-only text', () => {
    expect(searchTerms('')).toEqual([]);
    expect(searchTerms('What is it? Was it them?')).toEqual([]);
  });
});

describe('Cosmos search queries', () => {
  it("the user's speakers: their speaker markers, not a DISTINCT over their turn documents", () => {
    expect(buildSpeakersQuery('u-1')).toEqual({
      query: "SELECT VALUE c.speaker FROM c WHERE c.userId = @userId AND c.kind = 'speaker'",
      parameters: [{ name: '@userId', value: 'u-1' }],
    });
  });

  it('turns by vector: nearest contentVector of the same embedding model, in the user partition', () => {
    expect(buildVectorQuery(query(), 'turn')).toEqual({
      query: `${TURN_SELECT_PARAM} WHERE c.userId = @userId AND c.kind = 'turn' AND c.embeddingModel = @model ORDER BY VectorDistance(c.contentVector, @vector)`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@model', value: 'use-lite-512' },
        { name: '@vector', value: [0.1, -0.2, 0.3] },
        { name: '@limit', value: 10 },
      ],
    });
  });

  it('turns by vector with every filter', () => {
    expect(buildVectorQuery(query({ filters: allFilters }), 'turn')).toEqual({
      query:
        `${TURN_SELECT_PARAM} WHERE c.userId = @userId AND c.kind = 'turn' AND c.embeddingModel = @model` +
        ' AND c.sessionId = @sessionId AND c.agentId = @agentId AND c.timestamp >= @from AND c.timestamp <= @to' +
        ' ORDER BY VectorDistance(c.contentVector, @vector)',
      parameters: [
        { name: '@userId', value: 'u-1' },
        ...filterParams,
        { name: '@model', value: 'use-lite-512' },
        { name: '@vector', value: [0.1, -0.2, 0.3] },
        { name: '@limit', value: 10 },
      ],
    });
  });

  it('turns by full text: BM25 rank of the turns containing any term, one parameter per term', () => {
    expect(buildFullTextQuery(query(), 'turn')).toEqual({
      query: `${TURN_SELECT} WHERE c.userId = @userId AND c.kind = 'turn' AND FullTextContainsAny(c.content, ${TERMS}) ORDER BY RANK FullTextScore(c.content, ${TERMS})`,
      parameters: [{ name: '@userId', value: 'u-1' }, ...termParams],
    });
  });

  it('turns by full text with every filter; no vector or model condition', () => {
    expect(buildFullTextQuery(query({ filters: allFilters, vector: undefined }), 'turn')).toEqual({
      query:
        `${TURN_SELECT} WHERE c.userId = @userId AND c.kind = 'turn'` +
        ' AND c.sessionId = @sessionId AND c.agentId = @agentId AND c.timestamp >= @from AND c.timestamp <= @to' +
        ` AND FullTextContainsAny(c.content, ${TERMS}) ORDER BY RANK FullTextScore(c.content, ${TERMS})`,
      parameters: [{ name: '@userId', value: 'u-1' }, ...filterParams, ...termParams],
    });
  });

  it('interactions by content and summary vectors: the path\u2019s vector documents (or an interaction holding the vector), no text selected, agents by ARRAY_CONTAINS, time by startedAt', () => {
    for (const path of ['contentVector', 'summaryVector'] as const) {
      const base = `((c.kind = 'interactionVector' AND c.vectorPath = '${path}') OR (NOT IS_DEFINED(c.kind) AND NOT IS_DEFINED(c.vectorsApart)))`;
      expect(buildVectorQuery(query(), 'interaction', path)).toEqual({
        query: `${WINDOW_VECTOR_SELECT} WHERE c.userId = @userId AND ${base} AND c.embeddingModel = @model ORDER BY VectorDistance(c.${path}, @vector)`,
        parameters: [
          { name: '@userId', value: 'u-1' },
          { name: '@model', value: 'use-lite-512' },
          { name: '@vector', value: [0.1, -0.2, 0.3] },
          { name: '@limit', value: 10 },
        ],
      });
      expect(buildVectorQuery(query({ filters: allFilters }), 'interaction', path)?.query).toBe(
        `${WINDOW_VECTOR_SELECT} WHERE c.userId = @userId AND ${base} AND c.embeddingModel = @model` +
          ' AND c.sessionId = @sessionId AND ARRAY_CONTAINS(c.agentIds, @agentId) AND c.startedAt >= @from AND c.startedAt <= @to' +
          ` ORDER BY VectorDistance(c.${path}, @vector)`,
      );
    }
  });

  it('interactions by full text, with and without filters', () => {
    expect(buildFullTextQuery(query(), 'interaction')).toEqual({
      query: `${WINDOW_SELECT} WHERE c.userId = @userId AND NOT IS_DEFINED(c.kind) AND FullTextContainsAny(c.content, ${TERMS}) ORDER BY RANK FullTextScore(c.content, ${TERMS})`,
      parameters: [{ name: '@userId', value: 'u-1' }, ...termParams],
    });
    expect(buildFullTextQuery(query({ filters: { agentId: 'travel-agent', from: '2026-01-01T00:00:00Z' } }), 'interaction')).toEqual({
      query:
        `${WINDOW_SELECT} WHERE c.userId = @userId AND NOT IS_DEFINED(c.kind) AND ARRAY_CONTAINS(c.agentIds, @agentId) AND c.startedAt >= @from` +
        ` AND FullTextContainsAny(c.content, ${TERMS}) ORDER BY RANK FullTextScore(c.content, ${TERMS})`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@agentId', value: 'travel-agent' },
        { name: '@from', value: '2026-01-01T00:00:00.000Z' },
        ...termParams,
      ],
    });
  });

  it('never puts query text into the SQL: hostile input only reaches parameters', () => {
    const text = `"); SELECT * FROM c WHERE c.userId = 'victim' -- ' OR 1=1`;
    const spec = buildFullTextQuery(query({ text }), 'turn')!;
    expect(spec.query).not.toMatch(/victim|1=1|"\)/);
    expect(spec.query).toContain('FullTextScore(c.content, @t0, @t1, @t2)');
    expect(spec.parameters?.slice(1)).toEqual(['select', 'userid', 'victim'].map((value, i) => ({ name: `@t${i}`, value })));
  });

  it('inlines the row count of a ranked query only as a checked positive integer', () => {
    expect(buildFullTextQuery(query({ limit: 25 }), 'turn')?.query).toMatch(/^SELECT TOP 25 /);
    for (const limit of [0, -1, 2.5, Number.NaN]) {
      expect(() => buildFullTextQuery(query({ limit }), 'turn')).toThrow(RangeError);
      expect(() => buildVectorQuery(query({ limit }), 'turn')).toThrow(RangeError);
    }
  });

  it('has no query without a vector or without search terms, and rejects a malformed time bound', () => {
    expect(buildVectorQuery(query({ vector: undefined }), 'turn')).toBeNull();
    expect(buildFullTextQuery(query({ text: 'what was it?' }), 'interaction')).toBeNull();
    expect(() => buildVectorQuery(query(), 'turn', 'summaryVector')).toThrow(RangeError);
    const error = (() => {
      try {
        buildVectorQuery(query({ filters: { from: 'last May' } }), 'turn');
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(MemoryError);
    expect(error).toMatchObject({ code: 'validation_failed' });
  });
});

describe('buildHybridQuery', () => {
  it('fuses the vector and BM25 rankings with RRF in one ranked query', () => {
    expect(buildHybridQuery(query(), 'turn')).toEqual({
      query:
        `${TURN_SELECT} WHERE c.userId = @userId AND c.kind = 'turn' AND c.embeddingModel = @model` +
        ` ORDER BY RANK RRF(VectorDistance(c.contentVector, @vector), FullTextScore(c.content, ${TERMS}))`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@model', value: 'use-lite-512' },
        { name: '@vector', value: [0.1, -0.2, 0.3] },
        ...termParams,
      ],
    });
  });

  it('ranks turns only: an interaction and its vectors are separate documents', () => {
    expect(() => buildHybridQuery(query(), 'interaction', { vectorPath: 'summaryVector', weights: [2, 1] })).toThrow(RangeError);
    expect(() => buildHybridQuery(query(), 'turn', { vectorPath: 'summaryVector' })).toThrow(RangeError);
  });

  it('is the vector query without search terms, and nothing without a vector', () => {
    expect(buildHybridQuery(query({ text: 'what was it?' }), 'turn')).toEqual(buildVectorQuery(query(), 'turn'));
    expect(buildHybridQuery(query({ vector: undefined }), 'turn')).toBeNull();
  });
});

describe('CosmosSearchIndex', () => {
  const turnRows = [
    { sessionId: 's-1', seq: 4, turnId: 'D1:4', agentId: 'travel-agent', speaker: 'Caroline', text: 'Caroline: I went to the support group', timestamp: '2023-05-08T13:56:00.000Z' },
    {
      sessionId: 's-2',
      seq: 1,
      turnId: 'D2:1',
      speaker: 'Melanie',
      text: 'Melanie: support matters, as it did last week',
      timestamp: '2023-05-25T09:00:00.000Z',
      refersFrom: '2023-05-15T00:00:00.000Z',
      refersTo: '2023-05-21T23:59:59.999Z',
    },
    { sessionId: 's-2', seq: 2, turnId: 'D2:2', speaker: 'Caroline', text: 'Caroline: did the support help? ', timestamp: '2023-05-25T09:01:00.000Z' },
  ];
  const windowRows = [
    { id: 's-1:0000000001', sessionId: 's-1', seqRange: [1, 4], turnIds: ['D1:1', 'D1:2', 'D1:3', 'D1:4'], agentIds: ['travel-agent'], summary: 'Support group', startedAt: '2023-05-08T13:50:00.000Z' },
  ];

  it('runs each turn retriever in the user partition and maps the rows to hits, in rank order', async () => {
    for (const retriever of ['vector', 'fulltext'] as const) {
      const { container, queries } = fakeContainer(turnRows);
      const hits = await new CosmosSearchIndex(container).turns(query({ filters: { sessionId: 's-1' } }), retriever);
      expect(queries).toEqual([
        { spec: retriever === 'vector' ? buildVectorQuery(query({ filters: { sessionId: 's-1' } }), 'turn') : buildFullTextQuery(query({ filters: { sessionId: 's-1' } }), 'turn'), options: { partitionKey: 'u-1' } },
      ]);
      expect(hits).toEqual([
        { kind: 'turn', sessionId: 's-1', seq: 4, agentId: 'travel-agent', speaker: 'Caroline', timestamp: '2023-05-08T13:56:00.000Z', shown: { turnId: 'D1:4', text: 'Caroline: I went to the support group' } },
        {
          kind: 'turn',
          sessionId: 's-2',
          seq: 1,
          speaker: 'Melanie',
          timestamp: '2023-05-25T09:00:00.000Z',
          refers: { from: '2023-05-15T00:00:00.000Z', to: '2023-05-21T23:59:59.999Z' },
          shown: { turnId: 'D2:1', text: 'Melanie: support matters, as it did last week' },
        },
        { kind: 'turn', sessionId: 's-2', seq: 2, speaker: 'Caroline', timestamp: '2023-05-25T09:01:00.000Z', asks: true, shown: { turnId: 'D2:2', text: 'Caroline: did the support help? ' } },
      ]);
    }
  });

  it('runs each window retriever against its vector or the text, and maps the rows to window hits (a vector hit without what it shows)', async () => {
    const hit = { kind: 'interaction', id: 's-1:0000000001', sessionId: 's-1', seqRange: [1, 4], agentIds: ['travel-agent'], timestamp: '2023-05-08T13:50:00.000Z' };
    const shown = { turnIds: ['D1:1', 'D1:2', 'D1:3', 'D1:4'], summary: 'Support group' };
    const vectorRows = [{ id: 's-1:0000000001:contentVector', interactionId: 's-1:0000000001', sessionId: 's-1', seqRange: [1, 4], agentIds: ['travel-agent'], startedAt: '2023-05-08T13:50:00.000Z' }];
    const cases = [
      ['vector', buildVectorQuery(query(), 'interaction', 'contentVector'), vectorRows, hit],
      ['summaryVector', buildVectorQuery(query(), 'interaction', 'summaryVector'), windowRows, hit], // an interaction from before the split
      ['fulltext', buildFullTextQuery(query(), 'interaction'), windowRows, { ...hit, shown }],
    ] as const;
    for (const [retriever, spec, rows, expected] of cases) {
      const { container, queries } = fakeContainer([...rows]);
      expect(await new CosmosSearchIndex(container).interactions(query(), retriever)).toEqual([expected]);
      expect(queries).toEqual([{ spec, options: { partitionKey: 'u-1' } }]);
    }
  });

  it('show reads what the vector-ranked interactions show in one query, keeps the order, and leaves out one gone meanwhile', async () => {
    const hit = (id: string, seq: number) => ({ kind: 'interaction' as const, id, sessionId: 's-1', seqRange: [seq, seq + 3] as [number, number], agentIds: [], timestamp: '2023-05-08T13:50:00.000Z' });
    const turn = { kind: 'turn' as const, sessionId: 's-1', seq: 1, speaker: 'user', timestamp: '2023-05-08T13:50:00.000Z', shown: { turnId: 't1', text: 'user: hi' } };
    const { container, queries } = fakeContainer([
      { id: 'w5', turnIds: ['t5'], summary: 'five' },
      { id: 'w1', turnIds: ['t1'], summary: 'one' },
    ]);
    const index = new CosmosSearchIndex(container);
    const read = await index.show('u-1', { turns: [turn], interactions: [hit('w1', 1), { ...hit('w9', 9), shown: { turnIds: ['t9'], summary: 'nine' } }, hit('gone', 13), hit('w5', 5), hit('w1', 1)] });
    expect(read.turns).toEqual([turn]);
    expect(read.interactions.map((h) => [h.id, h.shown?.summary])).toEqual([
      ['w1', 'one'],
      ['w9', 'nine'],
      ['w5', 'five'],
      ['w1', 'one'],
    ]);
    expect(queries).toEqual([{ spec: buildShownQuery('u-1', ['w1', 'gone', 'w5']), options: { partitionKey: 'u-1' } }]);
    expect(buildShownQuery('u-1', ['w1']).query).toBe('SELECT c.id, c.turnIds, c.summary FROM c WHERE c.userId = @userId AND NOT IS_DEFINED(c.kind) AND ARRAY_CONTAINS(@ids, c.id)');
    await index.show('u-1', { turns: [turn], interactions: [] });
    expect(queries).toHaveLength(1);
  });

  it('writes an interaction without its vectors, and one small document per vector with the fields its ranking and filters read', () => {
    const doc = {
      schemaVersion: 1 as const,
      id: 's-1:0000000001',
      userId: 'u-1',
      sessionId: 's-1',
      agentIds: ['advisor'],
      turnIds: ['t1', 't2'],
      seqRange: [1, 2] as [number, number],
      startedAt: '2026-01-05T10:00:00.000Z',
      endedAt: '2026-01-05T10:01:00.000Z',
      content: 'user: hi',
      summary: 'greeting',
      topics: [],
      entities: [],
      embeddingModel: 'm',
      contentVector: [1 / 3, 0],
      summaryVector: [0, 1],
      createdAt: '2026-01-05T10:01:00.000Z',
    };
    const written = interactionDocument(doc);
    expect(written).toEqual({ ...doc, contentVector: undefined, summaryVector: undefined, fromSeq: 1, vectorsApart: true });
    expect(Object.keys(written)).not.toContain('contentVector');
    expect(Object.keys(written)).not.toContain('summaryVector');
    const common = { kind: 'interactionVector', schemaVersion: 1, userId: 'u-1', sessionId: 's-1', interactionId: doc.id, seqRange: [1, 2], agentIds: ['advisor'], startedAt: doc.startedAt, embeddingModel: 'm' };
    expect(interactionVectorDocuments(doc)).toEqual([
      { id: 's-1:0000000001:contentVector', ...common, vectorPath: 'contentVector', contentVector: [float32Component(1 / 3), 0] },
      { id: 's-1:0000000001:summaryVector', ...common, vectorPath: 'summaryVector', summaryVector: [0, 1] },
    ]);
  });

  it('returns nothing, without a round trip, when there is no vector, no search term or no room', async () => {
    const { container, queries } = fakeContainer(turnRows);
    const index = new CosmosSearchIndex(container);
    expect(await index.turns(query({ vector: undefined }), 'vector')).toEqual([]);
    expect(await index.interactions(query({ vector: undefined }), 'summaryVector')).toEqual([]);
    expect(await index.turns(query({ text: 'and then?' }), 'fulltext')).toEqual([]);
    expect(await index.interactions(query({ limit: 0 }), 'fulltext')).toEqual([]);
    expect(queries).toEqual([]);
  });

  it('fails on a row that is not a search document instead of returning a partial hit', async () => {
    const { container } = fakeContainer([{ sessionId: 's-1', seq: 'four' }]);
    await expect(new CosmosSearchIndex(container).turns(query(), 'fulltext')).rejects.toThrow();
  });
});

describe('CosmosSearchIndex.indexTurns', () => {
  const turn = (seq: number, overrides: Partial<IndexedTurn> = {}): IndexedTurn => ({
    userId: 'u-1',
    sessionId: 's-1',
    seq,
    turnId: `D1:${seq}`,
    speaker: 'Caroline',
    text: `Caroline: turn ${seq}`,
    matchText: `Melanie: turn ${seq - 1}\nCaroline: turn ${seq}`,
    timestamp: '2023-05-08T15:56:00+02:00',
    embeddingModel: 'use-lite-512',
    vector: [seq, 0, 1],
    ...overrides,
  });

  it('writes one turn document per turn, covered by the container’s /content and /contentVector policies', () => {
    expect(turnDocument(turn(7, { agentId: 'travel-agent' }))).toEqual({
      id: 'turn:s-1:0000000007',
      kind: 'turn',
      schemaVersion: 1,
      userId: 'u-1',
      sessionId: 's-1',
      seq: 7,
      turnId: 'D1:7',
      agentId: 'travel-agent',
      speaker: 'Caroline',
      content: 'Melanie: turn 6\nCaroline: turn 7',
      text: 'Caroline: turn 7',
      timestamp: '2023-05-08T13:56:00.000Z',
      embeddingModel: 'use-lite-512',
      contentVector: [7, 0, 1],
    });
    expect(turnDocument(turn(12))).not.toHaveProperty('agentId');
    expect(turnDocument(turn(12))).not.toHaveProperty('refersFrom');
  });

  it('stores the period a turn refers to beside its time, as normalised instants', () => {
    const doc = turnDocument(turn(3, { refers: { from: '2023-04-01T00:00:00+02:00', to: '2023-04-30T23:59:59.999Z' } }));
    expect(doc).toMatchObject({ refersFrom: '2023-03-31T22:00:00.000Z', refersTo: '2023-04-30T23:59:59.999Z' });
  });

  it('upserts every turn with bounded concurrency', async () => {
    let inFlight = 0;
    let peak = 0;
    const { container, upserts } = fakeContainer([], async () => {
      peak = Math.max(peak, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 1));
      inFlight--;
    });
    const turns = Array.from({ length: 30 }, (_, i) => turn(i + 1));
    await new CosmosSearchIndex(container).indexTurns(turns);
    expect(upserts).toEqual(turns.map(turnDocument));
    expect(peak).toBe(INDEX_CONCURRENCY);
    await new CosmosSearchIndex(container).indexTurns([]);
    expect(upserts).toHaveLength(30);
  });

  it("writes a speaker's marker once, before the turns; a marker written elsewhere (409) is fine, another failure rejects", async () => {
    const { container, upserts, creates } = fakeContainer([], async () => ({}), async (doc) => {
      if ((doc as { speaker: string }).speaker === 'Melanie') throw Object.assign(new Error('Conflict'), { code: 409 });
      return {};
    });
    const index = new CosmosSearchIndex(container);
    await index.indexTurns([turn(1), turn(2, { speaker: 'Melanie' }), turn(3), turn(4, { userId: 'u-2' })]);
    expect(creates).toEqual([speakerDocument('u-1', 'Caroline'), speakerDocument('u-1', 'Melanie'), speakerDocument('u-2', 'Caroline')]);
    expect(upserts).toHaveLength(4);
    await index.indexTurns([turn(5), turn(6, { speaker: 'Melanie' })]);
    expect(creates).toHaveLength(3);
    expect(speakerDocument('u-1', 'Caroline')).toEqual({ id: speakerDocument('u-9', 'Caroline').id, kind: 'speaker', schemaVersion: 1, userId: 'u-1', speaker: 'Caroline' });
    expect(speakerDocument('u-1', 'a/b?#c').id).toMatch(/^speaker:[0-9a-f]{64}$/);

    const failing = fakeContainer([], async () => ({}), async () => Promise.reject(Object.assign(new Error('Request rate is large'), { code: 429 })));
    await expect(new CosmosSearchIndex(failing.container).indexTurns([turn(1)])).rejects.toThrow('Request rate is large');
    expect(failing.upserts).toEqual([]);
  });

  it("keeps a user's speakers for SPEAKERS_CACHE_MS: a new speaker indexed here or a dropped user reads them again", async () => {
    let now = 0;
    const { container, queries, creates } = fakeContainer(['Melanie', 'Caroline']);
    const index = new CosmosSearchIndex(container, { now: () => now });
    expect(await index.speakers('u-1')).toEqual(['Caroline', 'Melanie']);
    expect(await index.speakers('u-1')).toEqual(['Caroline', 'Melanie']);
    expect(queries).toEqual([{ spec: buildSpeakersQuery('u-1'), options: { partitionKey: 'u-1' } }]);
    await index.speakers('u-2');
    expect(queries).toHaveLength(2);

    await index.indexTurns([turn(1)]); // a new speaker marker for u-1
    await index.speakers('u-1');
    expect(queries).toHaveLength(3);
    await index.indexTurns([turn(2)]); // known: no marker, the list stays
    await index.speakers('u-1');
    expect(queries).toHaveLength(3);

    now += SPEAKERS_CACHE_MS;
    await index.speakers('u-1');
    expect(queries).toHaveLength(4);

    index.dropCached('u-1'); // a rebuild deleted the markers: the next indexTurns writes them again
    await index.indexTurns([turn(3)]);
    expect(creates).toHaveLength(2);
    await index.speakers('u-1');
    expect(queries).toHaveLength(5);
  });

  it('rejects when an upsert fails, so the projection is retried', async () => {
    const { container } = fakeContainer([], async (doc) => {
      if ((doc as { seq: number }).seq === 3) throw Object.assign(new Error('Request rate is large'), { code: 429 });
    });
    await expect(new CosmosSearchIndex(container).indexTurns([turn(1), turn(2), turn(3), turn(4)])).rejects.toThrow('Request rate is large');
  });
});
