import type { Container, FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import {
  agentSessionsQuery,
  buildInsightOrSummaryQuery,
  chunkedThroughQuery,
  searchInsights,
  searchSessionSummaries,
  toInsightHit,
  toSessionSummaryHit,
} from '../../../../shared/adapters/cosmos/insight-search.js';
import { COSMOS_CONTAINERS } from '../../../../shared/adapters/cosmos/containers.js';
import type { SearchQuery } from '../../../../shared/application/search-ports.js';
import { MemoryError } from '../../../../shared/domain/errors.js';

// VectorDistance and FullTextScore do not run on the wire fake: these tests pin the exact SQL and parameters of the
// insight and session-summary searches, and the adapter's handling of rows, through hand-made container doubles.

const INSIGHT_SELECT = 'c.id, c.type, c.sessionId, c.sourceSessionIds, c.category, c.text, c.createdAt';
const SUMMARY_SELECT = 'c.sessionId, c.summary, c.keyTopics, c.agentIds, c.chunkedThroughSeq, c.startedAt, c.endedAt';
const LIVE_INSIGHTS = "c.userId = @userId AND (c.type = 'session' OR c.type = 'aggregate') AND (c.status = 'pending' OR c.status = 'processed')";
const ENDED_SESSIONS = "c.userId = @userId AND IS_STRING(c.summary) AND c.summary != '' AND IS_STRING(c.endedAt)";

const vector = { model: 'use-lite-512', values: [0.1, -0.2, 0.3] };
const query = (overrides: Partial<SearchQuery> = {}): SearchQuery => ({ userId: 'u-1', text: 'Is the user saving for retirement?', vector, limit: 10, filters: {}, ...overrides });
const allFilters = { sessionId: 's-7', agentId: 'advisor', from: '2026-01-01T00:00:00+02:00', to: '2026-02-01T00:00:00Z' };
const TERMS = '@t0, @t1, @t2';
const termParams = ['user', 'saving', 'retirement'].map((value, i) => ({ name: `@t${i}`, value }));
const timeParams = [
  { name: '@from', value: '2025-12-31T22:00:00.000Z' },
  { name: '@to', value: '2026-02-01T00:00:00.000Z' },
];

function containerDouble(answer: (spec: SqlQuerySpec) => unknown[] = () => []) {
  const queries: { spec: SqlQuerySpec; options: FeedOptions | undefined }[] = [];
  const container = {
    items: {
      query: (spec: SqlQuerySpec, options?: FeedOptions) => {
        queries.push({ spec, options });
        return { fetchAll: async () => ({ resources: answer(spec) }) };
      },
    },
  };
  return { container: container as unknown as Container, queries };
}

describe('Cosmos insight search queries', () => {
  it('by vector: live insights (not the profile, not superseded or merged) of the query model, nearest insightVector first', () => {
    expect(buildInsightOrSummaryQuery(query(), 'insight', 'vector')).toEqual({
      query: `SELECT TOP @limit ${INSIGHT_SELECT} FROM c WHERE ${LIVE_INSIGHTS} AND c.embeddingModel = @model ORDER BY VectorDistance(c.insightVector, @vector)`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@model', value: 'use-lite-512' },
        { name: '@vector', value: [0.1, -0.2, 0.3] },
        { name: '@limit', value: 10 },
      ],
    });
  });

  it('by full text: BM25 over /text of the insights containing any term, TOP inlined for the ranked query', () => {
    expect(buildInsightOrSummaryQuery(query(), 'insight', 'fulltext')).toEqual({
      query: `SELECT TOP 10 ${INSIGHT_SELECT} FROM c WHERE ${LIVE_INSIGHTS} AND FullTextContainsAny(c.text, ${TERMS}) ORDER BY RANK FullTextScore(c.text, ${TERMS})`,
      parameters: [{ name: '@userId', value: 'u-1' }, ...termParams],
    });
  });

  it('with every filter: any source session, the agent as the list of its sessions, createdAt as the time', () => {
    expect(buildInsightOrSummaryQuery(query({ filters: allFilters }), 'insight', 'fulltext', ['s-1', 's-7'])).toEqual({
      query:
        `SELECT TOP 10 ${INSIGHT_SELECT} FROM c WHERE ${LIVE_INSIGHTS}` +
        ' AND ARRAY_CONTAINS(c.sourceSessionIds, @sessionId)' +
        ' AND EXISTS(SELECT VALUE s FROM s IN c.sourceSessionIds WHERE ARRAY_CONTAINS(@agentSessionIds, s))' +
        ' AND c.createdAt >= @from AND c.createdAt <= @to' +
        ` AND FullTextContainsAny(c.text, ${TERMS}) ORDER BY RANK FullTextScore(c.text, ${TERMS})`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@sessionId', value: 's-7' },
        { name: '@agentSessionIds', value: ['s-1', 's-7'] },
        ...timeParams,
        ...termParams,
      ],
    });
  });

  it('refuses an agent filter on insights without the agent’s sessions, a bad limit and a bad time bound', () => {
    expect(() => buildInsightOrSummaryQuery(query({ filters: { agentId: 'advisor' } }), 'insight', 'vector')).toThrow(RangeError);
    expect(() => buildInsightOrSummaryQuery(query({ limit: 0 }), 'insight', 'fulltext')).toThrow(RangeError);
    expect(() => buildInsightOrSummaryQuery(query({ limit: 2.5 }), 'insight', 'vector')).toThrow(RangeError);
    expect(() => buildInsightOrSummaryQuery(query({ filters: { from: 'yesterday' } }), 'insight', 'vector')).toThrow(MemoryError);
  });

  it('is null without a query vector (vector) or without search terms (full text)', () => {
    expect(buildInsightOrSummaryQuery(query({ vector: undefined }), 'insight', 'vector')).toBeNull();
    expect(buildInsightOrSummaryQuery(query({ text: 'what is it?' }), 'insight', 'fulltext')).toBeNull();
  });

  it('uses only paths the insights container indexes', () => {
    const { vectorPaths, fullTextPaths } = COSMOS_CONTAINERS.insights;
    expect(buildInsightOrSummaryQuery(query(), 'insight', 'vector')?.query).toContain(`VectorDistance(c${vectorPaths[0]!.replace('/', '.')}, @vector)`);
    expect(buildInsightOrSummaryQuery(query(), 'insight', 'fulltext')?.query).toContain(`FullTextScore(c${fullTextPaths[0]!.replace('/', '.')}, `);
  });
});

describe('Cosmos session summary search queries', () => {
  it('by vector: ended sessions with a summary, nearest summaryVector of the query model first', () => {
    expect(buildInsightOrSummaryQuery(query(), 'sessionSummary', 'vector')).toEqual({
      query: `SELECT TOP @limit ${SUMMARY_SELECT} FROM c WHERE ${ENDED_SESSIONS} AND c.embeddingModel = @model ORDER BY VectorDistance(c.summaryVector, @vector)`,
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@model', value: 'use-lite-512' },
        { name: '@vector', value: [0.1, -0.2, 0.3] },
        { name: '@limit', value: 10 },
      ],
    });
  });

  it('by full text with every filter: the session, the agent among agentIds, startedAt as the time', () => {
    expect(buildInsightOrSummaryQuery(query({ filters: allFilters, limit: 25 }), 'sessionSummary', 'fulltext')).toEqual({
      query:
        `SELECT TOP 25 ${SUMMARY_SELECT} FROM c WHERE ${ENDED_SESSIONS}` +
        ' AND c.sessionId = @sessionId AND ARRAY_CONTAINS(c.agentIds, @agentId) AND c.startedAt >= @from AND c.startedAt <= @to' +
        ` AND FullTextContainsAny(c.summary, ${TERMS}) ORDER BY RANK FullTextScore(c.summary, ${TERMS})`,
      parameters: [{ name: '@userId', value: 'u-1' }, { name: '@sessionId', value: 's-7' }, { name: '@agentId', value: 'advisor' }, ...timeParams, ...termParams],
    });
  });

  it('uses only paths the sessions container indexes', () => {
    const { vectorPaths, fullTextPaths } = COSMOS_CONTAINERS.sessions;
    expect(buildInsightOrSummaryQuery(query(), 'sessionSummary', 'vector')?.query).toContain(`VectorDistance(c${vectorPaths[0]!.replace('/', '.')}, @vector)`);
    expect(buildInsightOrSummaryQuery(query(), 'sessionSummary', 'fulltext')?.query).toContain(`FullTextScore(c${fullTextPaths[0]!.replace('/', '.')}, `);
  });
});

describe('Cosmos lookups in the sessions container', () => {
  it('the agent’s sessions and the sessions’ chunked-through seq, in the user partition', () => {
    expect(agentSessionsQuery('u-1', 'advisor')).toEqual({
      query: 'SELECT c.sessionId FROM c WHERE c.userId = @userId AND ARRAY_CONTAINS(c.agentIds, @agentId)',
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@agentId', value: 'advisor' },
      ],
    });
    expect(chunkedThroughQuery('u-1', ['s-1', 's-2'])).toEqual({
      query: 'SELECT c.sessionId, c.chunkedThroughSeq FROM c WHERE c.userId = @userId AND ARRAY_CONTAINS(@sessionIds, c.sessionId)',
      parameters: [
        { name: '@userId', value: 'u-1' },
        { name: '@sessionIds', value: ['s-1', 's-2'] },
      ],
    });
  });
});

describe('Cosmos insight and summary rows', () => {
  it('an insight row: time normalised, seq range from its session for a session insight only', () => {
    const chunked = new Map([['s-1', 9]]);
    const row = { id: 'ins-1', type: 'session', sessionId: 's-1', sourceSessionIds: ['s-1'], category: 'concern', text: 'Worried about fees.', createdAt: '2026-01-05T12:00:00+02:00', _rid: 'x' };
    expect(toInsightHit(row, chunked)).toEqual({
      kind: 'insight',
      id: 'ins-1',
      type: 'session',
      sessionId: 's-1',
      sourceSessionIds: ['s-1'],
      category: 'concern',
      text: 'Worried about fees.',
      timestamp: '2026-01-05T10:00:00.000Z',
      seqRange: [1, 9],
    });
    expect(toInsightHit({ ...row, type: 'aggregate' }, chunked)).not.toHaveProperty('seqRange');
    expect(toInsightHit(row, new Map([['s-1', 0]]))).not.toHaveProperty('seqRange');
    expect(() => toInsightHit({ ...row, text: undefined })).toThrow();
  });

  it('a summary row: missing key topics are empty, a missing start falls back to the end', () => {
    const row = { sessionId: 's-1', summary: 'Talked about fees.', agentIds: ['a'], chunkedThroughSeq: 4, startedAt: null, endedAt: '2026-01-05T10:00:00.000Z' };
    expect(toSessionSummaryHit(row)).toEqual({
      kind: 'sessionSummary',
      sessionId: 's-1',
      summary: 'Talked about fees.',
      keyTopics: [],
      agentIds: ['a'],
      seqRange: [1, 4],
      startedAt: '2026-01-05T10:00:00.000Z',
      endedAt: '2026-01-05T10:00:00.000Z',
    });
  });
});

describe('Cosmos insight and summary search adapters', () => {
  it('insights: the ranked query in the user partition, then one lookup of the sessions of the session insights', async () => {
    const insights = containerDouble(() => [
      { id: 'a', type: 'session', sessionId: 's-1', sourceSessionIds: ['s-1'], category: 'c', text: 'a', createdAt: '2026-01-05T10:00:00.000Z' },
      { id: 'b', type: 'session', sessionId: 's-1', sourceSessionIds: ['s-1'], category: 'c', text: 'b', createdAt: '2026-01-05T10:00:00.000Z' },
      { id: 'c', type: 'aggregate', sessionId: 's-2', sourceSessionIds: ['s-2', 's-3'], category: 'c', text: 'c', createdAt: '2026-01-05T10:00:00.000Z' },
    ]);
    const sessions = containerDouble(() => [{ sessionId: 's-1', chunkedThroughSeq: 6 }]);
    const [hits] = await searchInsights(insights.container, sessions.container, query(), ['vector']);
    expect(hits!.map((h) => [h.id, h.seqRange])).toEqual([
      ['a', [1, 6]],
      ['b', [1, 6]],
      ['c', undefined],
    ]);
    expect(insights.queries.map((q) => q.options)).toEqual([{ partitionKey: 'u-1' }]);
    expect(sessions.queries).toEqual([{ spec: chunkedThroughQuery('u-1', ['s-1']), options: { partitionKey: 'u-1' } }]);
  });

  it('insights by both retrievers: one list each, in order, and one lookup of the sessions of both lists (and of the agent\u2019s sessions)', async () => {
    const row = (id: string, sessionId: string) => ({ id, type: 'session', sessionId, sourceSessionIds: [sessionId], category: 'c', text: id, createdAt: '2026-01-05T10:00:00.000Z' });
    const insights = containerDouble((spec) => (spec.query.includes('VectorDistance') ? [row('a', 's-1'), row('b', 's-2')] : [row('b', 's-2'), row('c', 's-3')]));
    const sessions = containerDouble((spec) =>
      spec.query.includes('agentIds')
        ? [{ sessionId: 's-1' }, { sessionId: 's-2' }, { sessionId: 's-3' }]
        : [
            { sessionId: 's-1', chunkedThroughSeq: 6 },
            { sessionId: 's-2', chunkedThroughSeq: 9 },
            { sessionId: 's-3', chunkedThroughSeq: 3 },
          ],
    );
    const [byVector, byText] = await searchInsights(insights.container, sessions.container, query({ filters: { agentId: 'advisor' } }), ['vector', 'fulltext']);
    expect(byVector!.map((h) => [h.id, h.seqRange])).toEqual([
      ['a', [1, 6]],
      ['b', [1, 9]],
    ]);
    expect(byText!.map((h) => [h.id, h.seqRange])).toEqual([
      ['b', [1, 9]],
      ['c', [1, 3]],
    ]);
    expect(insights.queries).toHaveLength(2);
    expect(sessions.queries.map((q) => q.spec)).toEqual([agentSessionsQuery('u-1', 'advisor'), chunkedThroughQuery('u-1', ['s-1', 's-2', 's-3'])]);
  });

  it('insights: no query for a zero limit or a text without terms; no session lookup without session insights', async () => {
    const insights = containerDouble();
    const sessions = containerDouble();
    expect(await searchInsights(insights.container, sessions.container, query({ limit: 0 }), ['vector'])).toEqual([[]]);
    expect(await searchInsights(insights.container, sessions.container, query({ text: 'it is' }), ['fulltext'])).toEqual([[]]);
    expect(insights.queries).toEqual([]);
    expect(await searchInsights(insights.container, sessions.container, query(), ['vector'])).toEqual([[]]);
    expect(insights.queries).toHaveLength(1);
    expect(sessions.queries).toEqual([]);
  });

  it('session summaries: the ranked query in the user partition, rows validated', async () => {
    const sessions = containerDouble(() => [{ sessionId: 's-1', summary: 'Fees.', keyTopics: ['fees'], agentIds: [], chunkedThroughSeq: 3, startedAt: '2026-01-05T10:00:00.000Z', endedAt: '2026-01-05T11:00:00.000Z' }]);
    const hits = await searchSessionSummaries(sessions.container, query(), 'fulltext');
    expect(hits.map((h) => [h.sessionId, h.seqRange, h.keyTopics])).toEqual([['s-1', [1, 3], ['fees']]]);
    expect(sessions.queries).toEqual([{ spec: buildInsightOrSummaryQuery(query(), 'sessionSummary', 'fulltext'), options: { partitionKey: 'u-1' } }]);
    const broken = containerDouble(() => [{ sessionId: 's-1' }]);
    await expect(searchSessionSummaries(broken.container, query(), 'fulltext')).rejects.toThrow();
  });
});
