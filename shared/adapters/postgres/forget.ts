import type { SessionKey } from '../../contracts/ids.js';
import { TOMBSTONE_OWNERS, type ForgetScope, type ForgetStore, type PurgeOptions, type SearchCache, type StoreCounts, type TombstoneOwner } from '../../application/forget-ports.js';
import type { Db, Queryable } from './db.js';

/** append_events and the guard triggers (migration 14) refuse a write under a forget tombstone with SQLSTATE AM410. */
export const FORGET_IN_PROGRESS = 'AM410';

/**
 * Tables the scan leaves out: the tombstone itself (deleted when the scan is clean) and `search_purges`, which keeps
 * only the user id and the revision of the purge so that search snapshots built before it are never reused.
 */
const NOT_SCANNED = new Set(['forget_tombstones', 'search_purges', 'schema_migrations']);

/**
 * What the purge deletes, children before parents. For a session: the rows of the session, the session's own insights
 * and aggregate insights built from it, and the profile when it was synthesised from a deleted insight (the next
 * long-term reflection writes a new one from what is left). User-level statistics are recomputed from what is left.
 */
const USER_TABLES = [
  'memory_turns',
  'memory_turn_stats',
  'interactions',
  'interaction_stats',
  'sessions',
  'events',
  'session_heads',
  'insights',
  'profiles',
  'artifacts',
  'artifact_snapshots',
  'artifact_blob_deletions',
  'slot_events',
  'projection_queue',
] as const;
const SESSION_TABLES = ['memory_turns', 'interactions', 'sessions', 'events', 'session_heads', 'artifacts', 'slot_events', 'projection_queue'] as const;

/** The tables of what clients write beside a session's events (see ForgetStore.purge `keepClientItems`). */
const CLIENT_TABLES = new Set<string>(['artifacts', 'artifact_snapshots', 'slot_events']);

/** Blob names of the scope's artifact rows ($1 user, $2 session or null). */
const ARTIFACT_BLOBS = `SELECT doc->'storage'->>'blobName' AS name FROM artifacts
  WHERE user_id = $1 AND ($2::text IS NULL OR session_id = $2) AND doc->'storage'->>'kind' = 'blob'`;

export class PostgresForgetStore implements ForgetStore {
  readonly refusesWritesItself = true;

  constructor(
    private readonly db: Db,
    /** PGlite's in-process search snapshots, when composition uses them. */
    private readonly cache?: SearchCache,
  ) {}

  async markForgetting(scope: ForgetScope, owner: TombstoneOwner, at: Date): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      // Waits for every write of the user in flight (they hold the lock shared until they commit); see migration 14.
      await tx.query('SELECT pg_advisory_xact_lock(7071014, hashtext($1))', [scope.userId]);
      const recorded = await tx.query(
        `INSERT INTO forget_tombstones (user_id, session_id, owner, requested_at) VALUES ($1, $2, $3, $4) ON CONFLICT (user_id, session_id, owner) DO NOTHING RETURNING 1`,
        [...tombstoneKey(scope, owner), at.toISOString()],
      );
      return recorded.length > 0;
    });
  }

  async forgetting(key: SessionKey): Promise<boolean> {
    return this.covered(key, TOMBSTONE_OWNERS);
  }

  /** Only whether a tombstone (of `owners`) is there: the guard triggers refused every write of the scope under it. */
  async enlist(key: SessionKey, owners: readonly TombstoneOwner[] = TOMBSTONE_OWNERS): Promise<boolean> {
    return this.covered(key, owners);
  }

  /** Whether a tombstone of `owners` covers the session: its user's or its own. */
  private async covered(key: SessionKey, owners: readonly TombstoneOwner[]): Promise<boolean> {
    const rows = await this.db.query(`SELECT 1 FROM forget_tombstones WHERE user_id = $1 AND session_id IN ('', $2) AND owner = ANY($3::text[]) LIMIT 1`, [key.userId, key.sessionId, owners]);
    return rows.length > 0;
  }

  async sessions(scope: ForgetScope): Promise<string[]> {
    const rows = await this.db.query<{ session_id: string }>(
      `SELECT session_id FROM session_heads WHERE user_id = $1 AND ($2::text IS NULL OR session_id = $2)
       UNION SELECT session_id FROM sessions WHERE user_id = $1 AND ($2::text IS NULL OR session_id = $2) ORDER BY 1`,
      [scope.userId, scope.sessionId ?? null],
    );
    return rows.map((r) => r.session_id);
  }

  async blobNames(scope: ForgetScope): Promise<string[]> {
    const rows = await this.db.query<{ name: string }>(
      `${ARTIFACT_BLOBS} UNION SELECT blob_name FROM artifact_blob_deletions WHERE user_id = $1 AND $2::text IS NULL ORDER BY 1`,
      [scope.userId, scope.sessionId ?? null],
    );
    return rows.map((r) => r.name);
  }

  async purge(scope: ForgetScope, options: PurgeOptions = {}): Promise<StoreCounts> {
    const counts: StoreCounts = await this.db.transaction(async (tx) => {
      // The blobs of the artifact rows deleted below, as on Cosmos DB (here the guard refuses a row under the
      // tombstone, so none is written after the blob step); a rollback leaves the rows naming them for the rerun.
      const blobs = options.deleteBlobs && !options.keepClientItems ? await tx.query<{ name: string }>(ARTIFACT_BLOBS, [scope.userId, scope.sessionId ?? null]) : [];
      if (blobs.length > 0) await options.deleteBlobs!(blobs.map((r) => r.name));
      return scope.sessionId === undefined ? purgeUser(tx, scope.userId) : purgeSession(tx, scope.userId, scope.sessionId, options.keepClientItems ?? false);
    });
    // The deletions recorded a purge revision (migration 11), so no snapshot built before them is reused; dropping the
    // user's snapshot now also frees the rows it holds in this process.
    if (this.cache) counts.searchSnapshots = this.cache.evict(scope.userId);
    return counts;
  }

  async redactInit(scope: Required<ForgetScope>): Promise<{ events: number; sessionIds: string[] }> {
    return this.db.transaction(async (tx) => {
      // Erasure: the one in-place change of recorded events (see ForgetStore.redactInit). The entry goes from the
      // array, the rest of the event stays as recorded; the change feed (by insert position) does not deliver it again.
      const events = await tx.query<{ session_id: string }>(
        `UPDATE events e SET doc = jsonb_set(e.doc, '{data,recentSessions}',
           (SELECT coalesce(jsonb_agg(r.entry ORDER BY r.n), '[]'::jsonb) FROM jsonb_array_elements(e.doc->'data'->'recentSessions') WITH ORDINALITY AS r(entry, n)
            WHERE r.entry->>'sessionId' IS DISTINCT FROM $2))
         WHERE ${namesSession('e', "e.type = 'SessionInitFixed'", "e.doc->'data'->'recentSessions'")}
         RETURNING e.session_id`,
        [scope.userId, scope.sessionId],
      );
      const documents = await tx.query<{ session_id: string }>(`SELECT s.session_id FROM sessions s WHERE ${namesSession('s', 'true', "s.doc->'init'->'recentSessions'")}`, [
        scope.userId,
        scope.sessionId,
      ]);
      return { events: events.length, sessionIds: [...new Set([...events, ...documents].map((r) => r.session_id))].sort() };
    });
  }

  /**
   * Counts rows of the scope in every table of the schema that has a `user_id` column (found in the catalog, so a table
   * added later is scanned too), by the session's `session_id` for a session scope, plus the insights and the profile
   * derived from the session.
   */
  async scan(scope: ForgetScope): Promise<StoreCounts> {
    const counts: StoreCounts = {};
    for (const [table, { session }] of await userTables(this.db)) {
      if (scope.sessionId !== undefined && !session) continue;
      const where = scope.sessionId === undefined ? 'user_id = $1' : 'user_id = $1 AND session_id = $2';
      const [row] = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE ${where}`, scope.sessionId === undefined ? [scope.userId] : [scope.userId, scope.sessionId]);
      counts[table] = row?.n ?? 0;
    }
    if (scope.sessionId !== undefined) {
      const [derived] = await this.db.query<{ insights: number }>(`SELECT count(*)::int AS insights FROM insights WHERE user_id = $1 AND doc->'sourceSessionIds' ? $2`, [scope.userId, scope.sessionId]);
      counts.aggregateInsights = derived?.insights ?? 0;
      const [init] = await this.db.query<{ events: number; documents: number }>(
        `SELECT (SELECT count(*)::int FROM events e WHERE ${namesSession('e', "e.type = 'SessionInitFixed'", "e.doc->'data'->'recentSessions'")}) AS events,
                (SELECT count(*)::int FROM sessions s WHERE ${namesSession('s', 'true', "s.doc->'init'->'recentSessions'")}) AS documents`,
        [scope.userId, scope.sessionId],
      );
      counts.initEvents = init?.events ?? 0;
      counts.initDocuments = init?.documents ?? 0;
    }
    if (this.cache) counts.searchSnapshots = this.cache.held(scope.userId);
    return counts;
  }

  async tombstoneVersion(scope: ForgetScope, owner: TombstoneOwner): Promise<string | null> {
    const [row] = await this.db.query<{ version: string }>(`SELECT xmin::text AS version FROM forget_tombstones WHERE ${TOMBSTONE}`, tombstoneKey(scope, owner));
    return row?.version ?? null;
  }

  async clearForgetting(scope: ForgetScope, owner: TombstoneOwner, version?: string): Promise<boolean> {
    const key = tombstoneKey(scope, owner);
    if (version === undefined) {
      await this.db.query(`DELETE FROM forget_tombstones WHERE ${TOMBSTONE}`, key);
      return true;
    }
    const deleted = await this.db.query(`DELETE FROM forget_tombstones WHERE ${TOMBSTONE} AND xmin::text = $4 RETURNING 1`, [...key, version]);
    return deleted.length > 0 || (await this.tombstoneVersion(scope, owner)) === null;
  }

  async clearStale(scope: ForgetScope, owner: TombstoneOwner, recordedBefore: Date): Promise<void> {
    await this.db.query(`DELETE FROM forget_tombstones WHERE ${TOMBSTONE} AND requested_at < $4`, [...tombstoneKey(scope, owner), recordedBefore.toISOString()]);
  }
}

/** One owner's tombstone of a scope ($1 user, $2 session or '' for the user, $3 owner; migration 22). */
const TOMBSTONE = 'user_id = $1 AND session_id = $2 AND owner = $3';
const tombstoneKey = (scope: ForgetScope, owner: TombstoneOwner) => [scope.userId, scope.sessionId ?? '', owner];

/**
 * Rows (alias `t`, parameters $1 user and $2 forgotten session) of the user's other sessions whose `recentSessions`
 * array names the forgotten session. A session under a tombstone of its own (or of its user) is left out: the guard
 * trigger (migration 14) refuses its writes, and its own forget deletes it whole.
 */
const namesSession = (t: string, and: string, recentSessions: string) =>
  `${t}.user_id = $1 AND ${t}.session_id <> $2 AND ${and} AND ${recentSessions} @> jsonb_build_array(jsonb_build_object('sessionId', $2::text))
   AND NOT EXISTS (SELECT 1 FROM forget_tombstones f WHERE f.user_id = ${t}.user_id AND f.session_id IN ('', ${t}.session_id))`;

/** Tables of the schema with a `user_id` column (and whether they have `session_id`), from the catalog. */
async function userTables(q: Queryable): Promise<Map<string, { session: boolean }>> {
  const columns = await q.query<{ table_name: string; column_name: string }>(
    `SELECT table_name, column_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND column_name IN ('user_id', 'session_id') ORDER BY table_name`,
  );
  const tables = new Map<string, Set<string>>();
  for (const c of columns) tables.set(c.table_name, (tables.get(c.table_name) ?? new Set()).add(c.column_name));
  const found = new Map<string, { session: boolean }>();
  for (const [table, cols] of tables) if (cols.has('user_id') && !NOT_SCANNED.has(table)) found.set(table, { session: cols.has('session_id') });
  return found;
}

async function purgeUser(tx: Queryable, userId: string): Promise<StoreCounts> {
  const counts: StoreCounts = {};
  // The known tables in order, then any other table that holds user rows (one added later, e.g. a dead-letter table).
  const others = [...(await userTables(tx)).keys()].filter((t) => !(USER_TABLES as readonly string[]).includes(t));
  for (const table of [...USER_TABLES, ...others]) {
    const rows = await tx.query(`DELETE FROM "${table}" WHERE user_id = $1 RETURNING 1`, [userId]);
    counts[table] = rows.length;
  }
  return counts;
}

async function purgeSession(tx: Queryable, userId: string, sessionId: string, keepClientItems: boolean): Promise<StoreCounts> {
  const counts: StoreCounts = {};
  const others = [...(await userTables(tx))].filter(([t, { session }]) => session && t !== 'insights' && !(SESSION_TABLES as readonly string[]).includes(t)).map(([t]) => t);
  for (const table of [...SESSION_TABLES, ...others]) {
    if (keepClientItems && CLIENT_TABLES.has(table)) continue;
    const rows = await tx.query(`DELETE FROM "${table}" WHERE user_id = $1 AND session_id = $2 RETURNING 1`, [userId, sessionId]);
    counts[table] = rows.length;
  }
  // The session's insights, and aggregate insights reflected from it together with other sessions: their text may
  // carry what was said in it.
  const insights = await tx.query<{ id: string }>(`DELETE FROM insights WHERE user_id = $1 AND (session_id = $2 OR doc->'sourceSessionIds' ? $2) RETURNING id`, [userId, sessionId]);
  counts.insights = insights.length;
  const gone = insights.map((i) => i.id);
  const profiles = gone.length === 0 ? [] : await tx.query(`DELETE FROM profiles WHERE user_id = $1 AND doc->'sourceInsightIds' ?| $2::text[] RETURNING 1`, [userId, gone]);
  counts.profiles = profiles.length;
  // BM25 statistics of what is left (the speakers list keeps the user's participants: ids and names, no text).
  await tx.query(
    `UPDATE memory_turn_stats s SET docs = t.docs, total_len = t.total_len
     FROM (SELECT count(*)::int AS docs, coalesce(sum(doc_len), 0)::bigint AS total_len FROM memory_turns WHERE user_id = $1) t WHERE s.user_id = $1`,
    [userId],
  );
  return counts;
}
