import type { Container, SqlParameter } from '@azure/cosmos';
import { InsightDocument, ProfileDocument, type InsightStatus, type InsightType } from '../../contracts/insights.js';
import type { SessionKey } from '../../contracts/ids.js';
import type { SessionDocument } from '../../contracts/sessions.js';
import type { Retriever } from '../../contracts/facts.js';
import type { InsightStore, SessionDirectory, SessionSummaryRef } from '../../application/ports.js';
import type { InsightHit, SearchQuery, SessionSummaryHit } from '../../application/search-ports.js';
import { searchInsights, searchSessionSummaries } from './insight-search.js';
import { COSMOS_CONTAINERS, statusOf } from './containers.js';
import { withFloat32Vectors } from './vectors.js';
import { insightExpiresAt, itemTtlSeconds, type RetentionPolicy } from '../../domain/retention.js';

async function query<T>(container: Container, sql: string, parameters: SqlParameter[], partitionKey?: string): Promise<T[]> {
  const { resources } = await container.items.query<T>({ query: sql, parameters }, partitionKey === undefined ? {} : { partitionKey }).fetchAll();
  return resources;
}

export interface CosmosInsightStoreOptions {
  /** Stamps a superseded or merged insight with a per-item `ttl`, so Cosmos deletes it when its audit period is over. */
  retention?: RetentionPolicy;
  /** The time a `ttl` counts from (the write); a test may pin it. */
  now?: () => Date;
  /** The `sessions` container: fact search reads an agent's sessions and a session's seq range there. */
  sessions?: Container;
}

/**
 * Insights and the profile share the `insights` container (partition `/userId`); the profile has id `profile`.
 * Retention is native: the container has TTL on (`defaultTtl: -1`) and an insight that stops being live gets its own
 * `ttl`; an upsert that makes it live again writes it without one.
 */
export class CosmosInsightStore implements InsightStore {
  constructor(
    private readonly container: Container,
    private readonly options: CosmosInsightStoreOptions = {},
  ) {}

  async upsert(docs: readonly InsightDocument[]): Promise<void> {
    const { retention } = this.options;
    const now = this.options.now?.() ?? new Date();
    await Promise.all(
      docs.map((doc) => {
        const ttl = retention && itemTtlSeconds(insightExpiresAt(doc, retention), now);
        return this.container.items.upsert(withFloat32Vectors(ttl === undefined ? doc : { ...doc, ttl }, COSMOS_CONTAINERS.insights));
      }),
    );
  }

  async list(userId: string, filter: { type?: InsightType; status?: InsightStatus; sessionId?: string; category?: string } = {}): Promise<InsightDocument[]> {
    const clauses = ['c.userId = @userId', "(c.type = 'session' OR c.type = 'aggregate')"];
    const parameters: SqlParameter[] = [{ name: '@userId', value: userId }];
    for (const [field, value] of Object.entries(filter)) {
      if (value === undefined) continue;
      clauses.push(`c.${field} = @${field}`);
      parameters.push({ name: `@${field}`, value });
    }
    const rows = await query<unknown>(this.container, `SELECT * FROM c WHERE ${clauses.join(' AND ')} ORDER BY c.createdAt ASC`, parameters, userId);
    // Same createdAt: by id, as the PostgreSQL adapter orders them.
    return rows.map((r) => InsightDocument.parse(r)).sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  /** Fact search over the live insights (see `insight-search.ts`). */
  async search(query: SearchQuery, retrievers: readonly Retriever[]): Promise<InsightHit[][]> {
    if (!this.options.sessions) throw new Error('CosmosInsightStore: fact search needs the sessions container (options.sessions)');
    return searchInsights(this.container, this.options.sessions, query, retrievers);
  }

  async getProfile(userId: string): Promise<ProfileDocument | null> {
    const response = await this.container.item('profile', userId).read<ProfileDocument>();
    if (response.statusCode === 404 || !response.resource) return null;
    return ProfileDocument.parse(response.resource);
  }

  async putProfile(doc: ProfileDocument): Promise<void> {
    await this.container.items.upsert(doc);
  }

  async deleteProfile(userId: string): Promise<void> {
    try {
      await this.container.item('profile', userId).delete();
    } catch (error) {
      if (statusOf(error) !== 404) throw error; // none: nothing to do
    }
  }

  async purge(userId: string, ids: readonly string[]): Promise<number> {
    const deleted = await Promise.all(
      [...new Set(ids)]
        .filter((id) => id !== 'profile')
        .map(async (id) => {
          try {
            await this.container.item(id, userId).delete();
            return 1;
          } catch (error) {
            // Already gone (an earlier run, or the item's own ttl).
            if (typeof error === 'object' && error !== null && 'code' in error && error.code === 404) return 0;
            throw error;
          }
        }),
    );
    return deleted.reduce((n: number, d) => n + d, 0);
  }
}

/** Cross-session queries on `sessions`. The idle and active-user scans are cross-partition (timer functions only). */
export class CosmosSessionDirectory implements SessionDirectory {
  constructor(private readonly container: Container) {}

  /** Fact search over session summaries (see `insight-search.ts`). */
  searchSummaries(query: SearchQuery, retriever: Retriever): Promise<SessionSummaryHit[]> {
    return searchSessionSummaries(this.container, query, retriever);
  }

  async recentSummaries(userId: string, limit: number, options: { before?: string; excludeSessionId?: string } = {}): Promise<SessionSummaryRef[]> {
    if (limit <= 0) return [];
    const rows = await query<{ sessionId: string; endedAt: string; summary: string }>(
      this.container,
      // TOP: without it the query reads every ended session of the user (each with its summary vector) to keep a few.
      `SELECT TOP ${Math.trunc(limit)} c.sessionId, c.endedAt, c.summary FROM c WHERE c.userId = @userId AND IS_DEFINED(c.summary) AND IS_DEFINED(c.endedAt)
       AND (@before = null OR c.endedAt < @before) AND (@exclude = null OR c.sessionId != @exclude) ORDER BY c.endedAt DESC`,
      [
        { name: '@userId', value: userId },
        { name: '@before', value: options.before ?? null },
        { name: '@exclude', value: options.excludeSessionId ?? null },
      ],
      userId,
    );
    return rows;
  }

  async idleSessions(cutoff: Date, limit: number): Promise<SessionKey[]> {
    const rows = await query<SessionKey>(
      this.container,
      "SELECT c.userId, c.sessionId FROM c WHERE c.status = 'active' AND IS_STRING(c.lastActivityAt) AND c.lastActivityAt < @cutoff ORDER BY c.lastActivityAt ASC",
      [{ name: '@cutoff', value: cutoff.toISOString() }],
    );
    return rows.slice(0, limit).map((r) => ({ userId: r.userId, sessionId: r.sessionId }));
  }

  async byReflectionStatus(userId: string, status: SessionDocument['reflectionStatus']): Promise<SessionKey[]> {
    const rows = await query<{ sessionId: string; startedAt: string | null }>(
      this.container,
      "SELECT c.sessionId, c.startedAt FROM c WHERE c.userId = @userId AND c.reflectionStatus = @status",
      [
        { name: '@userId', value: userId },
        { name: '@status', value: status },
      ],
      userId,
    );
    return rows
      .sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? '') || a.sessionId.localeCompare(b.sessionId))
      .map((r) => ({ userId, sessionId: r.sessionId }));
  }

  async usersActiveSince(since: Date, limit: number): Promise<string[]> {
    // No DISTINCT: the fake does not run it, and one row per session is small for a nightly scan.
    const rows = await query<{ userId: string }>(this.container, 'SELECT c.userId FROM c WHERE c.updatedAt >= @since', [{ name: '@since', value: since.toISOString() }]);
    return [...new Set(rows.map((r) => r.userId))].sort().slice(0, limit);
  }

  async setAsideEvents(): Promise<number> {
    const rows = await query<{ setAside: unknown[] }>(this.container, 'SELECT c.setAside FROM c WHERE IS_DEFINED(c.setAside)', []);
    return rows.reduce((n, r) => n + r.setAside.length, 0);
  }
}
