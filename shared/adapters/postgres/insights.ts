import { InsightDocument, ProfileDocument, type InsightStatus, type InsightType } from '../../contracts/insights.js';
import type { SessionKey } from '../../contracts/ids.js';
import type { SessionDocument } from '../../contracts/sessions.js';
import type { InsightStore, SessionDirectory, SessionSummaryRef } from '../../application/ports.js';
import type { Db } from './db.js';

/** Insights (vector in a pgvector column, the rest as JSON) and the one profile row per user. */
export class PostgresInsightStore implements InsightStore {
  constructor(private readonly db: Db) {}

  async upsert(docs: readonly InsightDocument[]): Promise<void> {
    if (docs.length === 0) return;
    await this.db.query(
      `INSERT INTO insights (user_id, id, session_id, type, status, category, created_at, doc, embedding_model, vector)
       SELECT r.user_id, r.id, r.session_id, r.type, r.status, r.category, r.created_at, r.doc, r.model, r.v::vector
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::jsonb[], $9::text[], $10::text[])
         AS r(user_id, id, session_id, type, status, category, created_at, doc, model, v)
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
        docs.map((d) => JSON.stringify(d.insightVector)),
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

  async idleSessions(cutoff: Date, limit: number): Promise<SessionKey[]> {
    const rows = await this.db.query<{ user_id: string; session_id: string }>(
      `SELECT user_id, session_id FROM sessions
       WHERE doc->>'status' = 'active' AND doc->>'lastTurnAt' IS NOT NULL AND doc->>'lastTurnAt' < $1
       ORDER BY doc->>'lastTurnAt' LIMIT $2`,
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
}
