import type { Container, FeedOptions, SqlQuerySpec } from '@azure/cosmos';
import { afterAll, describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { searchInsights } from '../../shared/adapters/cosmos/insight-search.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import type { Stores } from '../../shared/application/ports.js';
import type { SearchQuery } from '../../shared/application/search-ports.js';
import type { Retriever } from '../../shared/contracts/facts.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { InsightDocument, ProfileDocument } from '../../shared/contracts/insights.js';
import type { SessionDocument } from '../../shared/contracts/sessions.js';
import { newSession } from '../../shared/domain/session.js';
import { useCosmosFake } from '../support/cosmos-fake.js';

// Fact search over insights and session summaries at the store level. PostgreSQL (PGlite) runs the whole search;
// Cosmos DB's VectorDistance / FullTextScore do not run on the wire fake, so there the sessions-container lookups the
// insight search makes (an agent's sessions, a session's seq range) run on the fake and the ranked insight query is
// answered by a double (its SQL is pinned in test/unit/adapters/cosmos/insight-search.test.ts).

const MODEL = 'test-model';
/** The one list a search with one retriever returns. */
const insightList = async (stores: Stores, q: SearchQuery, retriever: Retriever) => (await stores.insights.search(q, [retriever]))[0]!;
const at = (day: number) => `2026-01-${String(day).padStart(2, '0')}T10:00:00.000Z`;

function insight(userId: string, id: string, text: string, overrides: Partial<InsightDocument> = {}): InsightDocument {
  return {
    schemaVersion: SCHEMA_VERSION,
    id,
    userId,
    type: 'session',
    sessionId: 's1',
    sourceSessionIds: ['s1'],
    category: 'financial_goals',
    text,
    confidence: 0.9,
    importance: 'high',
    status: 'pending',
    embeddingModel: MODEL,
    insightVector: [1, 0, 0],
    createdAt: at(5),
    updatedAt: at(5),
    ...overrides,
  };
}

function endedSession(userId: string, sessionId: string, patch: Partial<SessionDocument>): SessionDocument {
  return {
    ...newSession({ userId, sessionId }, new Date(at(1))),
    status: 'completed',
    reflectionStatus: 'processed',
    projectedThroughSeq: 13,
    chunkedThroughSeq: 12,
    turnCount: 12,
    agentIds: ['advisor'],
    startedAt: at(1),
    lastTurnAt: at(1),
    endedAt: at(1),
    embeddingModel: MODEL,
    ...patch,
  };
}

const query = (userId: string, text: string, overrides: Partial<SearchQuery> = {}): SearchQuery => ({
  userId,
  text,
  vector: { model: MODEL, values: [1, 0, 0] },
  limit: 10,
  filters: {},
  ...overrides,
});

let users = 0;

describe('fact sources on PostgreSQL (PGlite): insights and session summaries', () => {
  // One database for the file (PGlite boots in seconds); every test seeds its own user.
  let opened: Promise<Stores> | undefined;
  afterAll(async () => (opened ? (await opened).close() : undefined));
  async function seeded() {
    const stores = await (opened ??= openPglite(undefined).then(async (db) => (await migrate(db), postgresStores(db))));
    const u = `u${++users}`;
    await stores.sessions.put(endedSession(u, 's1', { summary: 'Planning retirement savings and a mortgage refinance.', keyTopics: ['retirement', 'mortgage'], summaryVector: [1, 0, 0], startedAt: at(2), endedAt: at(2), chunkedThroughSeq: 12 }), null);
    await stores.sessions.put(endedSession(u, 's2', { summary: 'Booked a trip to Lisbon; worried about travel insurance.', keyTopics: ['travel'], summaryVector: [0, 1, 0], startedAt: at(8), endedAt: at(8), agentIds: ['travel'], chunkedThroughSeq: 7 }), null);
    await stores.sessions.put(endedSession(u, 's3', { summary: 'Asked about retirement accounts for the kids.', summaryVector: [0.9, 0.1, 0], startedAt: at(12), endedAt: at(12), embeddingModel: 'other-model', chunkedThroughSeq: 4 }), null);
    // An active session without a summary is not a search result.
    await stores.sessions.put({ ...newSession({ userId: u, sessionId: 'live' }, new Date(at(20))), startedAt: at(20), lastTurnAt: at(20), agentIds: ['advisor'] }, null);
    await stores.insights.upsert([
      insight(u, 'ins-retire', 'The user wants to retire at 60 with their savings.', { createdAt: at(2) }),
      insight(u, 'ins-lisbon', 'The user travels to Lisbon in July.', { sessionId: 's2', sourceSessionIds: ['s2'], insightVector: [0, 1, 0], createdAt: at(8), category: 'current_situation' }),
      insight(u, 'ins-aggregate', 'The user keeps asking about retirement savings.', { type: 'aggregate', sessionId: 's2', sourceSessionIds: ['s2', 's3'], insightVector: [0.8, 0.2, 0], createdAt: at(12) }),
      insight(u, 'ins-old', 'The user wants to retire at 55 with their savings.', { status: 'superseded', supersededBy: 'ins-retire' }),
      insight(u, 'ins-dup', 'The user plans to retire at 60 using savings.', { status: 'merged', mergedInto: 'ins-retire' }),
      insight(u, 'ins-done', 'Retirement savings are in an index fund.', { status: 'processed', insightVector: [0.95, 0.05, 0], createdAt: at(3), sessionId: 'gone', sourceSessionIds: ['gone'] }),
    ]);
    const profile: ProfileDocument = { schemaVersion: SCHEMA_VERSION, id: 'profile', userId: u, type: 'long_term', profile: 'Retirement savings at 60.', sourceInsightIds: [], version: 1, updatedAt: at(5) };
    await stores.insights.putProfile(profile);
    return { stores, u };
  }

  it('insights by full text: only live insights that share a word, with their session seq range; superseded, merged and the profile never', async () => {
    const { stores, u } = await seeded();
    const hits = await insightList(stores, query(u, 'retirement savings'), 'fulltext');
    expect(hits.map((h) => h.id).sort()).toEqual(['ins-aggregate', 'ins-done', 'ins-retire']);
    expect(hits.find((h) => h.id === 'ins-retire')).toEqual({
      kind: 'insight',
      id: 'ins-retire',
      type: 'session',
      sessionId: 's1',
      sourceSessionIds: ['s1'],
      category: 'financial_goals',
      text: 'The user wants to retire at 60 with their savings.',
      timestamp: at(2),
      seqRange: [1, 12],
    });
    // An aggregate spans sessions: no seq range; a session insight whose session is gone: none either.
    expect(hits.find((h) => h.id === 'ins-aggregate')).not.toHaveProperty('seqRange');
    expect(hits.find((h) => h.id === 'ins-done')).not.toHaveProperty('seqRange');
    expect(await insightList(stores, query(u, 'the of'), 'fulltext')).toEqual([]);
    expect(await insightList(stores, query('someone-else', 'retirement savings'), 'fulltext')).toEqual([]);
  }, 30_000);

  it('insights by vector: nearest first, only vectors of the query model, none without a query vector', async () => {
    const { stores, u } = await seeded();
    expect((await insightList(stores, query(u, 'x'), 'vector')).map((h) => h.id)).toEqual(['ins-retire', 'ins-done', 'ins-aggregate', 'ins-lisbon']);
    expect(await insightList(stores, query(u, 'x', { vector: { model: 'other-model', values: [1, 0, 0] } }), 'vector')).toEqual([]);
    expect(await insightList(stores, query(u, 'x', { vector: undefined }), 'vector')).toEqual([]);
    expect((await insightList(stores, query(u, 'x', { limit: 2 }), 'vector')).map((h) => h.id)).toEqual(['ins-retire', 'ins-done']);
  }, 30_000);

  it('insights with filters: a session (an aggregate matches each of its sessions), an agent of the source session, a time range', async () => {
    const { stores, u } = await seeded();
    const ids = async (filters: SearchQuery['filters']) => (await insightList(stores, query(u, 'x', { filters }), 'vector')).map((h) => h.id).sort();
    expect(await ids({ sessionId: 's3' })).toEqual(['ins-aggregate']);
    expect(await ids({ sessionId: 's2' })).toEqual(['ins-aggregate', 'ins-lisbon']);
    expect(await ids({ agentId: 'travel' })).toEqual(['ins-aggregate', 'ins-lisbon']);
    expect(await ids({ agentId: 'advisor' })).toEqual(['ins-aggregate', 'ins-retire']);
    expect(await ids({ agentId: 'nobody' })).toEqual([]);
    expect(await ids({ from: at(3), to: at(8) })).toEqual(['ins-done', 'ins-lisbon']);
  }, 30_000);

  it('session summaries by full text and by vector: ended sessions only, with the session seq range, first-turn time and agents', async () => {
    const { stores, u } = await seeded();
    const byText = await stores.directory.searchSummaries(query(u, 'retirement'), 'fulltext');
    expect(byText.map((h) => h.sessionId).sort()).toEqual(['s1', 's3']);
    expect(byText.find((h) => h.sessionId === 's1')).toEqual({
      kind: 'sessionSummary',
      sessionId: 's1',
      summary: 'Planning retirement savings and a mortgage refinance.',
      keyTopics: ['retirement', 'mortgage'],
      agentIds: ['advisor'],
      seqRange: [1, 12],
      startedAt: at(2),
      endedAt: at(2),
    });
    // s3's summary vector is of another model; the live session has no summary.
    expect((await stores.directory.searchSummaries(query(u, 'x'), 'vector')).map((h) => h.sessionId)).toEqual(['s1', 's2']);
    expect(await stores.directory.searchSummaries(query(u, 'x', { vector: undefined }), 'vector')).toEqual([]);
    expect(await stores.directory.searchSummaries(query('someone-else', 'retirement'), 'fulltext')).toEqual([]);
  }, 30_000);

  it('session summaries with filters: session, agent, time range of the first turn', async () => {
    const { stores, u } = await seeded();
    const ids = async (filters: SearchQuery['filters']) => (await stores.directory.searchSummaries(query(u, 'retirement trip Lisbon', { filters }), 'fulltext')).map((h) => h.sessionId).sort();
    expect(await ids({})).toEqual(['s1', 's2', 's3']);
    expect(await ids({ sessionId: 's2' })).toEqual(['s2']);
    expect(await ids({ agentId: 'travel' })).toEqual(['s2']);
    expect(await ids({ from: at(3) })).toEqual(['s2', 's3']);
    expect(await ids({ to: at(8) })).toEqual(['s1', 's2']);
  }, 30_000);

  it('a summary written after the session row exists is searchable at once (generated columns follow the document)', async () => {
    const { stores, u } = await seeded();
    const stored = await stores.sessions.get({ userId: u, sessionId: 'live' });
    expect(await stores.directory.searchSummaries(query(u, 'pension'), 'fulltext')).toEqual([]);
    await stores.sessions.put({ ...stored!.doc, summary: 'Discussed the pension transfer.', summaryVector: [0, 0, 1], embeddingModel: MODEL, endedAt: at(21), chunkedThroughSeq: 3 }, stored!.version);
    expect((await stores.directory.searchSummaries(query(u, 'pension'), 'fulltext')).map((h) => [h.sessionId, h.seqRange])).toEqual([['live', [1, 3]]]);
    expect((await stores.directory.searchSummaries(query(u, 'x', { vector: { model: MODEL, values: [0, 0, 1] } }), 'vector'))[0]?.sessionId).toBe('live');
    // An empty vector does not break the session write; the summary is then found by its text only.
    const again = await stores.sessions.get({ userId: u, sessionId: 'live' });
    await stores.sessions.put({ ...again!.doc, summaryVector: [] }, again!.version);
    expect((await stores.directory.searchSummaries(query(u, 'x', { vector: { model: MODEL, values: [0, 0, 1] } }), 'vector')).map((h) => h.sessionId)).not.toContain('live');
    expect((await stores.directory.searchSummaries(query(u, 'pension'), 'fulltext')).map((h) => h.sessionId)).toEqual(['live']);
  }, 30_000);
});

describe('fact sources on Cosmos DB: the insight search\u2019s lookups in the sessions container (wire fake)', () => {
  const openFakeDatabase = useCosmosFake(3);

  /** An insights container double that answers the ranked query with canned rows and records it. */
  function insightsDouble(rows: unknown[]) {
    const queries: { spec: SqlQuerySpec; options: FeedOptions | undefined }[] = [];
    const container = { items: { query: (spec: SqlQuerySpec, options?: FeedOptions) => (queries.push({ spec, options }), { fetchAll: async () => ({ resources: rows }) }) } };
    return { container: container as unknown as Container, queries };
  }

  const row = (id: string, overrides: Record<string, unknown> = {}) => ({ id, type: 'session', sessionId: 's1', sourceSessionIds: ['s1'], category: 'concern', text: `insight ${id}`, createdAt: at(5), ...overrides });

  it('gives each session insight its session seq range, read from the fake, and none to an aggregate', async () => {
    const database = await openFakeDatabase();
    const stores = cosmosStores(database, { atomicBatches: false, ownsClient: true });
    const u = `cu${++users}`;
    await stores.sessions.put(endedSession(u, 's1', { chunkedThroughSeq: 12 }), null);
    await stores.sessions.put(endedSession(u, 's2', { chunkedThroughSeq: 7 }), null);
    await stores.sessions.put(endedSession('other-user', 's1', { chunkedThroughSeq: 99 }), null);
    const insights = insightsDouble([row('a'), row('b', { sessionId: 's2', sourceSessionIds: ['s2'] }), row('c', { type: 'aggregate', sourceSessionIds: ['s1', 's2'] }), row('d', { sessionId: 'unknown', sourceSessionIds: ['unknown'] })]);
    const [hits] = await searchInsights(insights.container, database.container(COSMOS_CONTAINERS.sessions.name), query(u, 'retirement'), ['fulltext']);
    expect(hits!.map((h) => [h.id, h.seqRange])).toEqual([
      ['a', [1, 12]],
      ['b', [1, 7]],
      ['c', undefined],
      ['d', undefined],
    ]);
    expect(insights.queries[0]?.options).toEqual({ partitionKey: u });
    await stores.close();
  }, 30_000);

  it('an agent filter asks the fake for the agent\u2019s sessions and passes them to the insight query; none: no insight query at all', async () => {
    const database = await openFakeDatabase();
    const stores = cosmosStores(database, { atomicBatches: false, ownsClient: true });
    const u = `cu${++users}`;
    await stores.sessions.put(endedSession(u, 's1', { agentIds: ['advisor', 'travel'] }), null);
    await stores.sessions.put(endedSession(u, 's2', { agentIds: ['advisor'] }), null);
    await stores.sessions.put(endedSession(u, 's3', { agentIds: ['travel'] }), null);
    await stores.sessions.put(endedSession('other-user', 's9', { agentIds: ['travel'] }), null);
    const sessions = database.container(COSMOS_CONTAINERS.sessions.name);
    const insights = insightsDouble([row('a')]);
    await searchInsights(insights.container, sessions, query(u, 'retirement', { filters: { agentId: 'travel' } }), ['vector']);
    const agentSessions = insights.queries[0]?.spec.parameters?.find((p) => p.name === '@agentSessionIds')?.value as string[];
    expect([...agentSessions].sort()).toEqual(['s1', 's3']);
    expect(insights.queries[0]?.spec.query).toContain('ARRAY_CONTAINS(@agentSessionIds, s)');

    const none = insightsDouble([row('a')]);
    expect(await searchInsights(none.container, sessions, query(u, 'retirement', { filters: { agentId: 'nobody' } }), ['vector'])).toEqual([[]]);
    expect(none.queries).toEqual([]);
    await stores.close();
  }, 30_000);
});
