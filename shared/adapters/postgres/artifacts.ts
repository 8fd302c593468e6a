import { ArtifactRecord, GLOBAL_OWNER } from '../../contracts/artifacts.js';
import type { Viewer } from '../../domain/scopes.js';
import { artifactSortKey, decodeCursor, encodeCursor, type ArtifactFilter, type ArtifactStore, type SnapshotRecord } from '../../application/artifact-ports.js';
import type { Db } from './db.js';
import { forgetInProgress } from '../../domain/errors.js';
import { FORGET_IN_PROGRESS } from './forget.js';

/** The forget guard (migration 14) refused the write: the user or the session is being forgotten (409). */
const refusedWhileForgetting =
  (userId: string, sessionId?: string) =>
  (error: unknown): never => {
    if ((error as { code?: unknown } | null)?.code === FORGET_IN_PROGRESS) throw forgetInProgress(userId, sessionId);
    throw error;
  };

interface Row {
  doc: Omit<ArtifactRecord, 'storage'> & { storage: { kind: 'inline' } | { kind: 'blob'; blobName: string } };
  content: string | null;
  sort_key: string;
}

const toRecord = (r: Row): ArtifactRecord =>
  ArtifactRecord.parse({ ...r.doc, storage: r.doc.storage.kind === 'inline' ? { kind: 'inline', content: r.content ?? '' } : r.doc.storage });

const likeAny = (terms: readonly string[]) => terms.map((t) => `%${t.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);

/** Live at `$n`: permanent, or expiring after it. */
const live = (p: string) => `(expires_at IS NULL OR expires_at > ${p}::timestamptz)`;

/**
 * What `viewer` may see, as SQL (canSee in shared/domain/scopes.ts): its user's rows whose scope admits it, and the
 * global rows. `param` adds a parameter and returns its placeholder. Rows from before scopes have scope 'user' (migration 18).
 */
function visibleTo(viewer: Viewer, param: (value: unknown) => string): string {
  const user = param(viewer.userId);
  const session = viewer.sessionId === undefined ? `scope = 'session'` : `(scope = 'session' AND session_id = ${param(viewer.sessionId)})`;
  const grants = [...(viewer.grants ?? [])];
  const ownPrivate =
    viewer.agentId === undefined
      ? `scope = 'private'`
      : `(scope = 'private' AND (agent_id = ${param(viewer.agentId)}${grants.length > 0 ? ` OR key = ANY(${param(grants)}::text[])` : ''}))`;
  return `((user_id = ${user} AND (scope = 'user' OR ${session} OR ${ownPrivate})) OR (user_id = '${GLOBAL_OWNER}' AND scope = 'global'))`;
}

/**
 * Artifacts in PostgreSQL: metadata as jsonb, inline content in its own column (blobs hold only a name). `expires_at`
 * mirrors the record's expiresAt for the readers' filter and the sweep; `artifact_blob_deletions` is the sweep's queue
 * of blobs whose artifacts are gone.
 */
export class PostgresArtifactStore implements ArtifactStore {
  constructor(private readonly db: Db) {}

  async putIfAbsent(record: ArtifactRecord): Promise<{ record: ArtifactRecord; created: boolean }> {
    const { storage, ...meta } = record;
    const doc = { ...meta, storage: storage.kind === 'inline' ? { kind: 'inline' } : storage };
    const rows = await this.db.query(
      `INSERT INTO artifacts (user_id, key, sort_key, type, source, tags, session_id, agent_id, created_at, doc, content, expires_at, scope)
       VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (user_id, key) DO NOTHING RETURNING key`,
      [
        record.userId,
        record.key,
        artifactSortKey(record),
        record.type,
        record.source ?? null,
        record.tags,
        record.sessionId ?? null,
        record.agentId ?? null,
        record.createdAt,
        JSON.stringify(doc),
        storage.kind === 'inline' ? storage.content : null,
        record.expiresAt,
        record.scope,
      ],
    ).catch(refusedWhileForgetting(record.userId, record.sessionId));
    if (rows.length > 0) return { record, created: true };
    // Whatever holds the key, expired or not: the caller decides.
    const [existing] = await this.db.query<Row>('SELECT doc, content, sort_key FROM artifacts WHERE user_id = $1 AND key = $2', [record.userId, record.key]);
    if (!existing) throw new Error('artifact vanished between insert and read');
    return { record: toRecord(existing), created: false };
  }

  async get(userId: string, key: string, now: Date): Promise<ArtifactRecord | null> {
    const [row] = await this.db.query<Row>(`SELECT doc, content, sort_key FROM artifacts WHERE user_id = $1 AND key = $2 AND ${live('$3')}`, [userId, key, now.toISOString()]);
    return row ? toRecord(row) : null;
  }

  async list(viewer: Viewer, filter: ArtifactFilter, limit: number, now: Date, cursor?: string): Promise<{ items: ArtifactRecord[]; nextCursor: string | null }> {
    const params: unknown[] = [now.toISOString()];
    const param = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const where = [live('$1'), visibleTo(viewer, param)];
    const add = (sql: (p: string) => string, value: unknown) => where.push(sql(param(value)));
    if (filter.type) add((p) => `type = ${p}`, filter.type);
    if (filter.source) add((p) => `source = ${p}`, filter.source);
    if (filter.tags?.length) add((p) => `tags @> ${p}::text[]`, filter.tags);
    if (filter.scope) add((p) => `scope = ${p}`, filter.scope);
    if (filter.from) add((p) => `created_at >= ${p}::timestamptz`, filter.from);
    if (filter.to) add((p) => `created_at <= ${p}::timestamptz`, filter.to);
    if (cursor) add((p) => `sort_key < ${p}`, decodeCursor(cursor));
    params.push(limit + 1);
    const rows = await this.db.query<Row>(
      `SELECT doc, NULL::text AS content, sort_key FROM artifacts WHERE ${where.join(' AND ')} ORDER BY sort_key DESC LIMIT $${params.length}`,
      params,
    );
    const page = rows.slice(0, limit);
    return { items: page.map(toRecord), nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!.sort_key) : null };
  }

  async delete(userId: string, key: string): Promise<ArtifactRecord | null> {
    const [row] = await this.db.query<Row>('DELETE FROM artifacts WHERE user_id = $1 AND key = $2 RETURNING doc, content, sort_key', [userId, key]);
    return row ? toRecord(row) : null;
  }

  async search(viewer: Viewer, terms: readonly string[], limit: number, now: Date): Promise<ArtifactRecord[]> {
    if (terms.length === 0) return [];
    const params: unknown[] = [likeAny(terms), limit, now.toISOString()];
    const param = (value: unknown) => {
      params.push(value);
      return `$${params.length}`;
    };
    const rows = await this.db.query<Row>(
      `SELECT doc, content, sort_key FROM artifacts
       WHERE ${visibleTo(viewer, param)} AND ${live('$3')} AND ((doc->>'description') ILIKE ANY($1::text[]) OR content ILIKE ANY($1::text[]))
       ORDER BY sort_key DESC LIMIT $2`,
      params,
    );
    return rows.map(toRecord);
  }

  async expire(userId: string, now: Date, options: { key?: string; limit?: number } = {}): Promise<number> {
    // One statement, so atomic: the rows go and their blob names enter the queue together, or neither happens.
    const [row] = await this.db.query<{ removed: number }>(
      `WITH due AS (
         SELECT key FROM artifacts
         WHERE user_id = $1 AND expires_at <= $2::timestamptz AND ($3::text IS NULL OR key = $3)
         ORDER BY expires_at LIMIT $4
       ), gone AS (
         DELETE FROM artifacts a USING due WHERE a.user_id = $1 AND a.key = due.key RETURNING a.doc
       ), queued AS (
         INSERT INTO artifact_blob_deletions (user_id, blob_name)
         SELECT $1, doc->'storage'->>'blobName' FROM gone WHERE doc->'storage'->>'kind' = 'blob'
         ON CONFLICT DO NOTHING
       )
       SELECT count(*)::int AS removed FROM gone`,
      [userId, now.toISOString(), options.key ?? null, options.limit ?? 1000],
    );
    return row?.removed ?? 0;
  }

  async pendingBlobDeletions(userId: string, limit: number): Promise<string[]> {
    const rows = await this.db.query<{ blob_name: string }>(
      `SELECT d.blob_name FROM artifact_blob_deletions d
       WHERE d.user_id = $1 AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.user_id = d.user_id AND a.doc->'storage'->>'blobName' = d.blob_name)
       ORDER BY d.queued_at, d.blob_name LIMIT $2`,
      [userId, limit],
    );
    return rows.map((r) => r.blob_name);
  }

  async blobDeletionsDone(userId: string, blobNames: readonly string[]): Promise<void> {
    if (blobNames.length === 0) return;
    await this.db.query('DELETE FROM artifact_blob_deletions WHERE user_id = $1 AND blob_name = ANY($2::text[])', [userId, blobNames]);
  }

  async putSnapshot(snapshot: SnapshotRecord): Promise<void> {
    await this.db.query('INSERT INTO artifact_snapshots (user_id, snapshot_id, doc) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
      snapshot.userId,
      snapshot.snapshotId,
      JSON.stringify(snapshot),
    ]).catch(refusedWhileForgetting(snapshot.userId));
  }

  async getSnapshot(userId: string, snapshotId: string): Promise<SnapshotRecord | null> {
    const [row] = await this.db.query<{ doc: SnapshotRecord }>('SELECT doc FROM artifact_snapshots WHERE user_id = $1 AND snapshot_id = $2', [userId, snapshotId]);
    return row?.doc ?? null;
  }
}
