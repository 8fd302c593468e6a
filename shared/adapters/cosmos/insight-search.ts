import type { Container, SqlParameter, SqlQuerySpec } from '@azure/cosmos';
import { z } from 'zod';
import type { Retriever } from '../../contracts/facts.js';
import type { InsightHit, SearchQuery, SessionSummaryHit } from '../../application/search-ports.js';
import { sessionSeqRange } from '../../domain/chunking.js';
import { float32Vector } from './vectors.js';
import { checkLimit, filterClause, searchTerms, termParameters, type FilterShape } from './search.js';

/**
 * Fact search over the `insights` container (full-text path `/text`, vector path `/insightVector`) and over the
 * session summaries in `sessions` (`/summary`, `/summaryVector`), as declared in `COSMOS_CONTAINERS`. Like
 * `search.ts`, the SQL comes from pure builders unit-tested as text, because `VectorDistance` and `FullTextScore` do
 * not run on the wire fake; one ranked list per retriever, fused by the use case like every other source.
 *
 * - Insights: only `session` / `aggregate` documents (not the `profile`), only `pending` / `processed` ones
 *   (superseded and merged insights are never returned). A session filter matches any of `sourceSessionIds`. Insights
 *   record no agent, so an agent filter keeps the insights drawn from a session the agent took part in: the sessions
 *   container is asked for those sessions first (`agentSessionsQuery`) and the list is passed in as `@agentSessionIds`.
 * - Session summaries: sessions with a non-empty `summary` and an `endedAt`; the time filters apply to `startedAt`.
 */

export type InsightOrSummary = 'insight' | 'sessionSummary';

const TARGETS = {
  insight: {
    select: 'c.id, c.type, c.sessionId, c.sourceSessionIds, c.category, c.text, c.createdAt',
    base: ["(c.type = 'session' OR c.type = 'aggregate')", "(c.status = 'pending' OR c.status = 'processed')"],
    session: 'ARRAY_CONTAINS(c.sourceSessionIds, @sessionId)',
    agent: 'EXISTS(SELECT VALUE s FROM s IN c.sourceSessionIds WHERE ARRAY_CONTAINS(@agentSessionIds, s))',
    time: 'c.createdAt',
    text: 'c.text',
    vector: 'c.insightVector',
  },
  sessionSummary: {
    select: 'c.sessionId, c.summary, c.keyTopics, c.agentIds, c.chunkedThroughSeq, c.startedAt, c.endedAt',
    base: ['IS_STRING(c.summary)', "c.summary != ''", 'IS_STRING(c.endedAt)'],
    session: 'c.sessionId = @sessionId',
    agent: 'ARRAY_CONTAINS(c.agentIds, @agentId)',
    time: 'c.startedAt',
    text: 'c.summary',
    vector: 'c.summaryVector',
  },
} as const satisfies Record<InsightOrSummary, FilterShape & { select: string; text: string; vector: string }>;

/** The query's filters as a `WHERE` clause; an agent filter on insights matches the sessions the agent took part in. */
function where(query: SearchQuery, target: InsightOrSummary, parameters: SqlParameter[], extra: string[], agentSessionIds?: readonly string[]): string {
  let agentParameter: SqlParameter | undefined;
  if (target === 'insight' && query.filters.agentId) {
    if (!agentSessionIds) throw new RangeError('An agent filter on insights needs the sessions of the agent');
    agentParameter = { name: '@agentSessionIds', value: [...agentSessionIds] };
  }
  return filterClause(query, TARGETS[target], parameters, extra, agentParameter);
}

/**
 * One ranked list: nearest vectors of the query's embedding model (`ORDER BY VectorDistance`, `TOP @limit`), or BM25
 * over the documents containing any search term (`ORDER BY RANK FullTextScore`, `TOP <n>` inlined as ranked queries
 * require). Null when the query has no vector (vector) or no search terms (full text). `agentSessionIds`: with an agent
 * filter on insights, the sessions the agent took part in.
 */
export function buildInsightOrSummaryQuery(
  query: SearchQuery,
  target: InsightOrSummary,
  retriever: Retriever,
  agentSessionIds?: readonly string[],
  terms = searchTerms(query.text),
): SqlQuerySpec | null {
  const shape = TARGETS[target];
  const parameters: SqlParameter[] = [];
  if (retriever === 'vector') {
    if (!query.vector) return null;
    const filter = where(query, target, parameters, ['c.embeddingModel = @model'], agentSessionIds);
    parameters.push({ name: '@model', value: query.vector.model }, { name: '@vector', value: float32Vector(query.vector.values) }, { name: '@limit', value: checkLimit(query.limit) });
    return { query: `SELECT TOP @limit ${shape.select} FROM c ${filter} ORDER BY VectorDistance(${shape.vector}, @vector)`, parameters };
  }
  if (terms.length === 0) return null;
  const limit = checkLimit(query.limit);
  const filter = where(query, target, parameters, [], agentSessionIds);
  const args = termParameters(terms, parameters);
  return {
    query: `SELECT TOP ${limit} ${shape.select} FROM c ${filter} AND FullTextContainsAny(${shape.text}, ${args}) ORDER BY RANK FullTextScore(${shape.text}, ${args})`,
    parameters,
  };
}

/** The user's sessions an agent took part in (on `sessions`; runs on the wire fake too). */
export function agentSessionsQuery(userId: string, agentId: string): SqlQuerySpec {
  return {
    query: 'SELECT c.sessionId FROM c WHERE c.userId = @userId AND ARRAY_CONTAINS(c.agentIds, @agentId)',
    parameters: [
      { name: '@userId', value: userId },
      { name: '@agentId', value: agentId },
    ],
  };
}

/** How far the given sessions' interactions reach (`chunkedThroughSeq`), i.e. their last turn's seq (on `sessions`; runs on the wire fake too). */
export function chunkedThroughQuery(userId: string, sessionIds: readonly string[]): SqlQuerySpec {
  return {
    query: 'SELECT c.sessionId, c.chunkedThroughSeq FROM c WHERE c.userId = @userId AND ARRAY_CONTAINS(@sessionIds, c.sessionId)',
    parameters: [
      { name: '@userId', value: userId },
      { name: '@sessionIds', value: [...sessionIds] },
    ],
  };
}

const InsightRow = z.object({
  id: z.string(),
  type: z.enum(['session', 'aggregate']),
  sessionId: z.string(),
  sourceSessionIds: z.array(z.string()),
  category: z.string(),
  text: z.string(),
  createdAt: z.string(),
});

const SummaryRow = z.object({
  sessionId: z.string(),
  summary: z.string(),
  keyTopics: z.array(z.string()).nullish(),
  agentIds: z.array(z.string()),
  chunkedThroughSeq: z.number().int(),
  startedAt: z.string().nullish(),
  endedAt: z.string(),
});

/** An insight row as a hit; `chunkedThrough` maps session ids to their last turn's seq (for a session insight's range). */
export function toInsightHit(row: unknown, chunkedThrough: ReadonlyMap<string, number> = new Map()): InsightHit {
  const r = InsightRow.parse(row);
  const seqRange = r.type === 'session' ? sessionSeqRange(chunkedThrough.get(r.sessionId)) : undefined;
  return {
    kind: 'insight',
    id: r.id,
    type: r.type,
    sessionId: r.sessionId,
    sourceSessionIds: r.sourceSessionIds,
    category: r.category,
    text: r.text,
    timestamp: new Date(r.createdAt).toISOString(),
    ...(seqRange && { seqRange }),
  };
}

export function toSessionSummaryHit(row: unknown): SessionSummaryHit {
  const r = SummaryRow.parse(row);
  const seqRange = sessionSeqRange(r.chunkedThroughSeq);
  return {
    kind: 'sessionSummary',
    sessionId: r.sessionId,
    summary: r.summary,
    keyTopics: r.keyTopics ?? [],
    agentIds: r.agentIds,
    ...(seqRange && { seqRange }),
    startedAt: new Date(r.startedAt ?? r.endedAt).toISOString(),
    endedAt: new Date(r.endedAt).toISOString(),
  };
}

async function run<T>(container: Container, userId: string, spec: SqlQuerySpec): Promise<T[]> {
  const { resources } = await container.items.query<T>(spec, { partitionKey: userId }).fetchAll();
  return resources;
}

/**
 * Insight search, one list per retriever: `insights` for the rankings, `sessions` for the agent filter's sessions and
 * the session insights' seq ranges, each read once for all the lists.
 */
export async function searchInsights(insights: Container, sessions: Container, query: SearchQuery, retrievers: readonly Retriever[]): Promise<InsightHit[][]> {
  const none = () => retrievers.map(() => [] as InsightHit[]);
  if (query.limit < 1) return none();
  let agentSessionIds: string[] | undefined;
  if (query.filters.agentId) {
    agentSessionIds = (await run<{ sessionId: string }>(sessions, query.userId, agentSessionsQuery(query.userId, query.filters.agentId))).map((r) => r.sessionId);
    if (agentSessionIds.length === 0) return none();
  }
  const lists = await Promise.all(
    retrievers.map(async (retriever) => {
      const spec = buildInsightOrSummaryQuery(query, 'insight', retriever, agentSessionIds);
      return spec ? (await run<unknown>(insights, query.userId, spec)).map((r) => InsightRow.parse(r)) : [];
    }),
  );
  const sessionIds = [...new Set(lists.flat().flatMap((r) => (r.type === 'session' ? [r.sessionId] : [])))];
  const chunked =
    sessionIds.length === 0 ? [] : await run<{ sessionId: string; chunkedThroughSeq?: number }>(sessions, query.userId, chunkedThroughQuery(query.userId, sessionIds));
  const chunkedThrough = new Map(chunked.flatMap((r) => (typeof r.chunkedThroughSeq === 'number' ? [[r.sessionId, r.chunkedThroughSeq] as const] : [])));
  return lists.map((rows) => rows.map((r) => toInsightHit(r, chunkedThrough)));
}

export async function searchSessionSummaries(sessions: Container, query: SearchQuery, retriever: Retriever): Promise<SessionSummaryHit[]> {
  if (query.limit < 1) return [];
  const spec = buildInsightOrSummaryQuery(query, 'sessionSummary', retriever);
  return spec ? (await run<unknown>(sessions, query.userId, spec)).map(toSessionSummaryHit) : [];
}
