import { InsightDocument, ProfileDocument, type InsightStatus, type InsightType } from '../../contracts/insights.js';
import type { SessionKey } from '../../contracts/ids.js';
import type { SessionDocument } from '../../contracts/sessions.js';
import type { Retriever } from '../../contracts/facts.js';
import type { InsightStore, SessionDirectory, SessionSummaryRef } from '../../application/ports.js';
import type { InsightHit, SearchQuery, SessionSummaryHit } from '../../application/search-ports.js';
import { sessionSeqRange } from '../../domain/chunking.js';
import type { Db } from './db.js';
import { asVector, vectorAt, vectorParam, vectorsParam } from './vector-params.js';

/** The query text as an OR of its English lexemes (as interaction full text does); `$n` is the text parameter. */
const tsQuery = (n: number) => `(SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme), ' | '), '')) FROM unnest(to_tsvector('english', $${n})))`;

/** Appends a parameter and returns its placeholder. */
function param(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

/** The time filters of a search on `time` (a timestamptz expression). */
function timeFilters(query: SearchQuery, params: unknown[], time: string): string[] {
  return [
    ...(query.filters.from ? [`${time} >= ${param(params, query.filters.from)}::timestamptz`] : []),
    ...(query.filters.to ? [`${time} <= ${param(params, query.filters.to)}::timestamptz`] : []),
  ];
}

/** Insights (vector in a pgvector column, the rest as JSON) and the one profile row per user. */
export class PostgresInsightStore implements InsightStore {
  constructor(private readonly db: Db) {}

  async upsert(docs: readonly InsightDocument[]): Promise<void> {
    if (docs.length === 0) return;
    const vectors = vectorsParam(docs.map((d) => d.insightVector));
    await this.db.query(
      `INSERT INTO insights (user_id, id, session_id, type, status, category, created_at, doc, embedding_model, vector)
       SELECT r.user_id, r.id, r.session_id, r.type, r.status, r.category, r.created_at, r.doc, r.model, ${vectorAt('$11', 'r.v', 'r.v_size')}
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::jsonb[], $9::text[], $10::int[], $12::int[])
         AS r(user_id, id, session_id, type, status, category, created_at, doc, model, v, v_size)
       ON CONFLICT (user_id, id) DO UPDATE SET session_id = EXCLUDED.session_id, type = EXCLUDED.type, status = EXCLUDED.status,
         category = EXCLUDED.category, doc = EXCLUDED.doc, embedding_model = EXCLUDED.embedding_model, vector = EXCLUDED.vector`,
      [
        docs.map((d) => d.userId),
        docs.map((d) => d.id),
        docs.map((d) => d.sessionId),
        docs.map((d) => d.type),
        docs.map((d) => d.status),
        docs.map((d) => d.category),
        docs.map((d) => d.createdAt),
        docs.map(({ insightVector: _v, ...rest }) => JSON.stringify(rest)),
        docs.map((d) => d.embeddingModel),
        vectors.offsets,
        vectors.values,
        vectors.sizes,
      ],
    );
  }

  async list(userId: string, filter: { type?: InsightType; status?: InsightStatus; sessionId?: string; category?: string } = {}): Promise<InsightDocument[]> {
    const rows = await this.db.query<{ doc: Record<string, unknown>; v: string }>(
      `SELECT doc, vector::text AS v FROM insights
       WHERE user_id = $1 AND ($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR status = $3)
         AND ($4::text IS NULL OR session_id = $4) AND ($5::text IS NULL OR category = $5)
       ORDER BY created_at, id`,
      [userId, filter.type ?? null, filter.status ?? null, filter.sessionId ?? null, filter.category ?? null],
    );
    return rows.map((r) => InsightDocument.parse({ ...r.doc, insightVector: JSON.parse(r.v) }));
  }

  /**
   * Fact search over the user's live insights (`pending` / `processed`): full text (`ts_rank_cd` over the text's
   * tsvector) or cosine distance to vectors of the query's model. A session insight gets its session's seq range.
   */
  search(query: SearchQuery, retrievers: readonly Retriever[]): Promise<InsightHit[][]> {
    return Promise.all(retrievers.map((r) => this.searchOne(query, r)));
  }

  private async searchOne(query: SearchQuery, retriever: Retriever): Promise<InsightHit[]> {
    if (query.limit < 1 || (retriever === 'vector' && !query.vector)) return [];
    const params: unknown[] = [query.userId];
    const where = ["i.user_id = $1", "i.status IN ('pending', 'processed')"];
    let order: string;
    if (retriever === 'vector') {
      where.push(`i.embedding_model = ${param(params, query.vector!.model)}`);
      order = `i.vector <=> ${asVector(param(params, vectorParam(query.vector!.values)))}, i.created_at DESC, i.id`;
    } else {
      const q = tsQuery(params.push(query.text));
      where.push(`i.tsv @@ ${q}`);
      order = `ts_rank_cd(i.tsv, ${q}, 1) DESC, i.created_at DESC, i.id`;
    }
    if (query.filters.sessionId) where.push(`i.doc->'sourceSessionIds' ? ${param(params, query.filters.sessionId)}`);
    if (query.filters.agentId) {
      where.push(
        `EXISTS (SELECT 1 FROM sessions a WHERE a.user_id = i.user_id AND a.session_id IN (SELECT jsonb_array_elements_text(i.doc->'sourceSessionIds'))
           AND a.doc->'agentIds' ? ${param(params, query.filters.agentId)})`,
      );
    }
    where.push(...timeFilters(query, params, 'i.created_at'));
    const rows = await this.db.query<{ doc: InsightDocument; created_at: Date | string; chunked: number | null }>(
      `SELECT i.doc, i.created_at, (s.doc->>'chunkedThroughSeq')::int AS chunked
       FROM insights i LEFT JOIN sessions s ON s.user_id = i.user_id AND s.session_id = i.session_id
       WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${param(params, query.limit)}`,
      params,
    );
    return rows.map(({ doc, created_at, chunked }) => {
      const seqRange = doc.type === 'session' ? sessionSeqRange(chunked) : undefined;
      return {
        kind: 'insight',
        id: doc.id,
        type: doc.type,
        sessionId: doc.sessionId,
        sourceSessionIds: doc.sourceSessionIds,
        category: doc.category,
        text: doc.text,
        timestamp: new Date(created_at).toISOString(),
        ...(seqRange && { seqRange }),
      };
    });
  }

  async getProfile(userId: string): Promise<ProfileDocument | null> {
    const [row] = await this.db.query<{ doc: unknown }>('SELECT doc FROM profiles WHERE user_id = $1', [userId]);
    return row ? ProfileDocument.parse(row.doc) : null;
  }

  async putProfile(doc: ProfileDocument): Promise<void> {
    await this.db.query(
      `INSERT INTO profiles (user_id, doc, updated_at) VALUES ($1, $2, $3)
       ON CONFLICT (user_id) DO UPDATE SET doc = EXCLUDED.doc, updated_at = EXCLUDED.updated_at`,
      [doc.userId, JSON.stringify(doc), doc.updatedAt],
    );
  }

  async deleteProfile(userId: string): Promise<void> {
    await this.db.query('DELETE FROM profiles WHERE user_id = $1', [userId]);
  }

  async purge(userId: string, ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0;
    // The profile is a row of `profiles`, so no id here can reach it.
    const rows = await this.db.query<{ id: string }>('DELETE FROM insights WHERE user_id = $1 AND id = ANY($2::text[]) RETURNING id', [userId, [...ids]]);
    return rows.length;
  }
}

/** Cross-session queries over the `sessions` table's JSON documents. */
export class PostgresSessionDirectory implements SessionDirectory {
  constructor(private readonly db: Db) {}

  async recentSummaries(userId: string, limit: number, options: { before?: string; excludeSessionId?: string } = {}): Promise<SessionSummaryRef[]> {
    if (limit <= 0) return [];
    const rows = await this.db.query<{ session_id: string; ended_at: string; summary: string }>(
      `SELECT session_id, doc->>'endedAt' AS ended_at, doc->>'summary' AS summary FROM sessions
       WHERE user_id = $1 AND doc ? 'summary' AND doc ? 'endedAt'
         AND ($2::text IS NULL OR doc->>'endedAt' < $2) AND ($3::text IS NULL OR session_id <> $3)
       ORDER BY doc->>'endedAt' DESC LIMIT $4`,
      [userId, options.before ?? null, options.excludeSessionId ?? null, limit],
    );
    return rows.map((r) => ({ sessionId: r.session_id, endedAt: r.ended_at, summary: r.summary }));
  }

  /**
   * Fact search over the summaries of the user's ended sessions: full text (`ts_rank_cd` over the summary's tsvector)
   * or cosine distance to summary vectors of the query's model. Both columns are generated from the document.
   */
  async searchSummaries(query: SearchQuery, retriever: Retriever): Promise<SessionSummaryHit[]> {
    if (query.limit < 1 || (retriever === 'vector' && !query.vector)) return [];
    const params: unknown[] = [query.userId];
    const started = `coalesce(s.doc->>'startedAt', s.doc->>'endedAt')`;
    const where = ['s.user_id = $1', "s.doc->>'summary' <> ''", "s.doc ? 'endedAt'"];
    let order: string;
    if (retriever === 'vector') {
      where.push(`s.summary_vector IS NOT NULL AND s.doc->>'embeddingModel' = ${param(params, query.vector!.model)}`);
      order = `s.summary_vector <=> ${asVector(param(params, vectorParam(query.vector!.values)))}, s.doc->>'endedAt' DESC, s.session_id`;
    } else {
      const q = tsQuery(params.push(query.text));
      where.push(`s.summary_tsv @@ ${q}`);
      order = `ts_rank_cd(s.summary_tsv, ${q}, 1) DESC, s.doc->>'endedAt' DESC, s.session_id`;
    }
    if (query.filters.sessionId) where.push(`s.session_id = ${param(params, query.filters.sessionId)}`);
    if (query.filters.agentId) where.push(`s.doc->'agentIds' ? ${param(params, query.filters.agentId)}`);
    where.push(...timeFilters(query, params, `(${started})::timestamptz`));
    const rows = await this.db.query<{ session_id: string; doc: SessionDocument; started_at: string }>(
      `SELECT s.session_id, s.doc - 'summaryVector' - 'init' AS doc, ${started} AS started_at FROM sessions s
       WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ${param(params, query.limit)}`,
      params,
    );
    return rows.map(({ session_id, doc, started_at }) => {
      const seqRange = sessionSeqRange(doc.chunkedThroughSeq);
      return {
        kind: 'sessionSummary',
        sessionId: session_id,
        summary: doc.summary ?? '',
        keyTopics: doc.keyTopics ?? [],
        agentIds: doc.agentIds,
        ...(seqRange && { seqRange }),
        startedAt: new Date(started_at).toISOString(),
        endedAt: new Date(doc.endedAt!).toISOString(),
      };
    });
  }

  async idleSessions(cutoff: Date, limit: number): Promise<SessionKey[]> {
    const rows = await this.db.query<{ user_id: string; session_id: string }>(
      `SELECT user_id, session_id FROM sessions
       WHERE doc->>'status' = 'active' AND coalesce(doc->>'lastActivityAt', doc->>'lastTurnAt') < $1
       ORDER BY coalesce(doc->>'lastActivityAt', doc->>'lastTurnAt') LIMIT $2`,
      [cutoff.toISOString(), limit],
    );
    return rows.map((r) => ({ userId: r.user_id, sessionId: r.session_id }));
  }

  async byReflectionStatus(userId: string, status: SessionDocument['reflectionStatus']): Promise<SessionKey[]> {
    const rows = await this.db.query<{ session_id: string }>(
      `SELECT session_id FROM sessions WHERE user_id = $1 AND doc->>'reflectionStatus' = $2
       ORDER BY doc->>'startedAt', session_id`,
      [userId, status],
    );
    return rows.map((r) => ({ userId, sessionId: r.session_id }));
  }

  async usersActiveSince(since: Date, limit: number): Promise<string[]> {
    const rows = await this.db.query<{ user_id: string }>(
      'SELECT DISTINCT user_id FROM sessions WHERE updated_at >= $1 ORDER BY user_id LIMIT $2',
      [since.toISOString(), limit],
    );
    return rows.map((r) => r.user_id);
  }

  async setAsideEvents(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>(`SELECT coalesce(sum(jsonb_array_length(doc->'setAside')), 0)::int AS n FROM sessions WHERE doc ? 'setAside'`);
    return row?.n ?? 0;
  }
}
