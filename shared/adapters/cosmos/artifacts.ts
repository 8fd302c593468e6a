import { createHash } from 'node:crypto';
import type { Container, SqlParameter } from '@azure/cosmos';
import { ArtifactRecord, GLOBAL_OWNER } from '../../contracts/artifacts.js';
import type { Viewer } from '../../domain/scopes.js';
import { artifactSortKey, decodeCursor, encodeCursor, type ArtifactFilter, type ArtifactStore, type SnapshotRecord } from '../../application/artifact-ports.js';
import { artifactItemTtlSeconds } from '../../domain/retention.js';
import { statusOf } from './containers.js';

/** Cosmos ids cannot hold '/', '\\', '?' or '#'; keys and snapshot ids never do (Id alphabet). */
const artifactId = (key: string) => `artifact:${key}`;
const snapshotId = (id: string) => `snapshot:${id}`;
/** Blob names hold '/' and can be long: the queue entry's id is a hash of the name. */
const blobDeletionId = (blobName: string) => `blob-deletion:${createHash('sha256').update(blobName).digest('hex')}`;

interface ArtifactDoc extends ArtifactRecord {
  id: string;
  docType: 'artifact';
  sortKey: string;
  /** Cosmos's per-item ttl (seconds from the write); absent = the container default (-1: never). */
  ttl?: number;
}

/** The sweep's queue entry: a blob whose artifact is expired, to delete before the entry goes. */
interface BlobDeletionDoc {
  id: string;
  userId: string;
  docType: 'blob_deletion';
  blobName: string;
  queuedAt: string;
}

/** Live at @now: permanent (no expiresAt, or null), or expiring after it. ISO strings compare in time order. */
const LIVE = '(NOT IS_DEFINED(c.expiresAt) OR IS_NULL(c.expiresAt) OR c.expiresAt > @now)';
const nowParam = (now: Date): SqlParameter => ({ name: '@now', value: now.toISOString() });

/** Scope 'user', also for items written before scopes (no `scope`). */
const USER_SCOPE = "(NOT IS_DEFINED(c.scope) OR c.scope = 'user')";

/** What `viewer` may see of its user's partition (canSee in shared/domain/scopes.ts); `param` adds a parameter and returns its name. */
function visibleTo(viewer: Viewer, param: (value: unknown) => string): string {
  const session = viewer.sessionId === undefined ? `c.scope = 'session'` : `(c.scope = 'session' AND c.sessionId = ${param(viewer.sessionId)})`;
  const grants = [...(viewer.grants ?? [])];
  const ownPrivate =
    viewer.agentId === undefined
      ? `c.scope = 'private'`
      : `(c.scope = 'private' AND (c.agentId = ${param(viewer.agentId)}${grants.length > 0 ? ` OR ARRAY_CONTAINS(${param(grants)}, c.key)` : ''}))`;
  return `(${USER_SCOPE} OR ${session} OR ${ownPrivate})`;
}

/** Two pages, each newest first, merged newest first (sort keys of the user's and the global partition never tie). */
const mergeNewestFirst = <T extends { sortKey: string }>(a: T[], b: T[]) => [...a, ...b].sort((x, y) => (x.sortKey < y.sortKey ? 1 : x.sortKey > y.sortKey ? -1 : 0));

const SYSTEM = new Set(['id', 'docType', 'sortKey', 'ttl', '_rid', '_self', '_etag', '_attachments', '_ts']);
const toRecord = (doc: Record<string, unknown>): ArtifactRecord => ArtifactRecord.parse(Object.fromEntries(Object.entries(doc).filter(([k]) => !SYSTEM.has(k))));

/**
 * Artifacts in the `artifacts` container (partition `/userId`): one document per artifact, and snapshots as
 * `docType: 'snapshot'` documents beside them. Queries filter on userId in SQL as well as by partition key. Global
 * artifacts live in the partition GLOBAL_OWNER: a listing or search reads the user's partition (filtered by scope in
 * the query) and the global one, each to the page size, and merges them by sort key.
 *
 * TTL: an expiring artifact carries `expiresAt` (readers filter on it, so it is gone at once) and a per-item `ttl`
 * (the container's defaultTtl is -1), so Cosmos deletes it natively: an inline one at its expiry; a blob-backed one a
 * grace period later, so the sweep can still find it and delete its blob first (`blob_deletion` queue documents).
 */
export class CosmosArtifactStore implements ArtifactStore {
  constructor(private readonly container: Container) {}

  private async query<T>(userId: string, sql: string, parameters: SqlParameter[]): Promise<T[]> {
    const { resources } = await this.container.items.query<T>({ query: sql, parameters: [{ name: '@userId', value: userId }, ...parameters] }, { partitionKey: userId }).fetchAll();
    return resources;
  }

  async putIfAbsent(record: ArtifactRecord): Promise<{ record: ArtifactRecord; created: boolean }> {
    // Cosmos counts the ttl from the write, which is the record's creation.
    const ttl = artifactItemTtlSeconds(record.expiresAt === null ? null : new Date(record.expiresAt), record.storage.kind, new Date(record.createdAt));
    const doc: ArtifactDoc = { ...record, id: artifactId(record.key), docType: 'artifact', sortKey: artifactSortKey(record), ...(ttl !== undefined && { ttl }) };
    try {
      await this.container.items.create(doc);
      return { record, created: true };
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      // Whatever holds the key, expired or not: the caller decides.
      const existing = await this.getAny(record.userId, record.key);
      if (!existing) throw error;
      return { record: existing, created: false };
    }
  }

  private async getAny(userId: string, key: string): Promise<ArtifactRecord | null> {
    const [doc] = await this.query<Record<string, unknown>>(userId, `SELECT * FROM c WHERE c.userId = @userId AND c.id = @id AND c.docType = 'artifact'`, [{ name: '@id', value: artifactId(key) }]);
    return doc ? toRecord(doc) : null;
  }

  async get(userId: string, key: string, now: Date): Promise<ArtifactRecord | null> {
    const [doc] = await this.query<Record<string, unknown>>(userId, `SELECT * FROM c WHERE c.userId = @userId AND c.id = @id AND c.docType = 'artifact' AND ${LIVE}`, [
      { name: '@id', value: artifactId(key) },
      nowParam(now),
    ]);
    return doc ? toRecord(doc) : null;
  }

  async list(viewer: Viewer, filter: ArtifactFilter, limit: number, now: Date, cursor?: string): Promise<{ items: ArtifactRecord[]; nextCursor: string | null }> {
    const page = async (owner: string, scoped: boolean) => {
      const params: SqlParameter[] = [nowParam(now)];
      const param = (value: unknown) => {
        const name = `@p${params.length}`;
        params.push({ name, value: value as SqlParameter['value'] });
        return name;
      };
      const where = ['c.userId = @userId', "c.docType = 'artifact'", LIVE, ...(scoped ? [visibleTo(viewer, param)] : [])];
      const add = (sql: (p: string) => string, value: string) => where.push(sql(param(value)));
      if (filter.type) add((p) => `c.type = ${p}`, filter.type);
      if (filter.source) add((p) => `c.source = ${p}`, filter.source);
      for (const tag of filter.tags ?? []) add((p) => `ARRAY_CONTAINS(c.tags, ${p})`, tag);
      if (filter.scope === 'user') where.push(USER_SCOPE);
      else if (filter.scope) add((p) => `c.scope = ${p}`, filter.scope);
      if (filter.from) add((p) => `c.createdAt >= ${p}`, new Date(filter.from).toISOString());
      if (filter.to) add((p) => `c.createdAt <= ${p}`, new Date(filter.to).toISOString());
      if (cursor) add((p) => `c.sortKey < ${p}`, decodeCursor(cursor));
      // Inline contents are not needed for a listing: leave them out of the response.
      return this.query<Record<string, unknown> & { sortKey: string }>(owner, `SELECT TOP ${limit + 1} * FROM c WHERE ${where.join(' AND ')} ORDER BY c.sortKey DESC`, params);
    };
    const [own, global] = await Promise.all([
      filter.scope === 'global' ? [] : page(viewer.userId, true),
      filter.scope === undefined || filter.scope === 'global' ? page(GLOBAL_OWNER, false) : [],
    ]);
    const docs = mergeNewestFirst(own, global).slice(0, limit + 1);
    const items = docs.slice(0, limit);
    return {
      items: items.map((d) => toRecord({ ...d, storage: (d.storage as { kind: string }).kind === 'inline' ? { kind: 'inline', content: '' } : d.storage })),
      nextCursor: docs.length > limit ? encodeCursor(items.at(-1)!.sortKey) : null,
    };
  }

  async delete(userId: string, key: string): Promise<ArtifactRecord | null> {
    const existing = await this.getAny(userId, key);
    if (!existing) return null;
    try {
      await this.container.item(artifactId(key), userId).delete();
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      return null;
    }
    return existing;
  }

  async search(viewer: Viewer, terms: readonly string[], limit: number, now: Date): Promise<ArtifactRecord[]> {
    if (terms.length === 0) return [];
    const page = (owner: string, scoped: boolean) => {
      const params: SqlParameter[] = [...terms.map((t, i) => ({ name: `@t${i}`, value: t.toLowerCase() })), nowParam(now)];
      const param = (value: unknown) => {
        const name = `@p${params.length}`;
        params.push({ name, value: value as SqlParameter['value'] });
        return name;
      };
      const matches = terms.map((_, i) => `CONTAINS(LOWER(c.description), @t${i}) OR (c.storage.kind = 'inline' AND CONTAINS(LOWER(c.storage.content), @t${i}))`);
      const visible = scoped ? ` AND ${visibleTo(viewer, param)}` : '';
      return this.query<Record<string, unknown> & { sortKey: string }>(
        owner,
        `SELECT TOP ${limit} * FROM c WHERE c.userId = @userId AND c.docType = 'artifact' AND ${LIVE}${visible} AND (${matches.join(' OR ')}) ORDER BY c.sortKey DESC`,
        params,
      );
    };
    const [own, global] = await Promise.all([page(viewer.userId, true), page(GLOBAL_OWNER, false)]);
    return mergeNewestFirst(own, global).slice(0, limit).map(toRecord);
  }

  async expire(userId: string, now: Date, options: { key?: string; limit?: number } = {}): Promise<number> {
    const due = await this.query<{ id: string; storage: ArtifactRecord['storage'] }>(
      userId,
      `SELECT TOP ${Math.max(1, Math.floor(options.limit ?? 1000))} c.id, c.storage FROM c
       WHERE c.userId = @userId AND c.docType = 'artifact' AND IS_STRING(c.expiresAt) AND c.expiresAt <= @now${options.key ? ' AND c.id = @id' : ''}
       ORDER BY c.expiresAt`,
      [nowParam(now), ...(options.key ? [{ name: '@id', value: artifactId(options.key) }] : [])],
    );
    let removed = 0;
    for (const doc of due) {
      // No atomic batch here: the queue entry first (idempotent), then the artifact. A crash between leaves an expired,
      // invisible artifact that the next run removes; its queued blob is held back until then.
      if (doc.storage.kind === 'blob') {
        const entry: BlobDeletionDoc = { id: blobDeletionId(doc.storage.blobName), userId, docType: 'blob_deletion', blobName: doc.storage.blobName, queuedAt: now.toISOString() };
        try {
          await this.container.items.create(entry);
        } catch (error) {
          if (statusOf(error) !== 409) throw error;
        }
      }
      try {
        await this.container.item(doc.id, userId).delete();
        removed++;
      } catch (error) {
        // Gone already: Cosmos's ttl or a concurrent sweep got there first.
        if (statusOf(error) !== 404) throw error;
      }
    }
    return removed;
  }

  async pendingBlobDeletions(userId: string, limit: number): Promise<string[]> {
    const queued = await this.query<{ blobName: string }>(
      userId,
      `SELECT TOP ${Math.max(1, Math.floor(limit))} c.blobName FROM c WHERE c.userId = @userId AND c.docType = 'blob_deletion' ORDER BY c.queuedAt`,
      [],
    );
    if (queued.length === 0) return [];
    const names = queued.map((q) => q.blobName);
    const referenced = await this.query<{ blobName: string }>(
      userId,
      `SELECT c.storage.blobName FROM c WHERE c.userId = @userId AND c.docType = 'artifact' AND c.storage.kind = 'blob' AND ARRAY_CONTAINS(@names, c.storage.blobName)`,
      [{ name: '@names', value: names }],
    );
    const held = new Set(referenced.map((r) => r.blobName));
    return names.filter((n) => !held.has(n));
  }

  async blobDeletionsDone(userId: string, blobNames: readonly string[]): Promise<void> {
    for (const name of blobNames) {
      try {
        await this.container.item(blobDeletionId(name), userId).delete();
      } catch (error) {
        if (statusOf(error) !== 404) throw error;
      }
    }
  }

  async putSnapshot(snapshot: SnapshotRecord): Promise<void> {
    try {
      await this.container.items.create({ ...snapshot, id: snapshotId(snapshot.snapshotId), docType: 'snapshot' });
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
  }

  async getSnapshot(userId: string, id: string): Promise<SnapshotRecord | null> {
    const [doc] = await this.query<SnapshotRecord>(userId, 'SELECT c.userId, c.snapshotId, c.keys, c.agentId, c.createdAt, c.globalKeys FROM c WHERE c.userId = @userId AND c.id = @id', [
      { name: '@id', value: snapshotId(id) },
    ]);
    if (!doc) return null;
    const { agentId, globalKeys, ...rest } = doc;
    return { ...rest, ...(agentId !== undefined && { agentId }), ...(globalKeys !== undefined && { globalKeys }) };
  }
}
