import type { Container, SqlParameter } from '@azure/cosmos';
import { ArtifactRecord } from '../../contracts/artifacts.js';
import { artifactSortKey, decodeCursor, encodeCursor, type ArtifactFilter, type ArtifactStore, type SnapshotRecord } from '../../application/artifact-ports.js';

/** The status of a Cosmos SDK error (ErrorResponse carries it as `code`). */
const statusOf = (error: unknown) => (typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'number' ? error.code : undefined);

/** Cosmos ids cannot hold '/', '\\', '?' or '#'; keys and snapshot ids never do (Id alphabet). */
const artifactId = (key: string) => `artifact:${key}`;
const snapshotId = (id: string) => `snapshot:${id}`;

interface ArtifactDoc extends ArtifactRecord {
  id: string;
  docType: 'artifact';
  sortKey: string;
}

const SYSTEM = new Set(['id', 'docType', 'sortKey', '_rid', '_self', '_etag', '_attachments', '_ts']);
const toRecord = (doc: Record<string, unknown>): ArtifactRecord => ArtifactRecord.parse(Object.fromEntries(Object.entries(doc).filter(([k]) => !SYSTEM.has(k))));

/**
 * Artifacts in the `artifacts` container (partition `/userId`): one document per artifact, and snapshots as
 * `docType: 'snapshot'` documents beside them. Queries filter on userId in SQL as well as by partition key.
 */
export class CosmosArtifactStore implements ArtifactStore {
  constructor(private readonly container: Container) {}

  private async query<T>(userId: string, sql: string, parameters: SqlParameter[]): Promise<T[]> {
    const { resources } = await this.container.items.query<T>({ query: sql, parameters: [{ name: '@userId', value: userId }, ...parameters] }, { partitionKey: userId }).fetchAll();
    return resources;
  }

  async putIfAbsent(record: ArtifactRecord): Promise<{ record: ArtifactRecord; created: boolean }> {
    const doc: ArtifactDoc = { ...record, id: artifactId(record.key), docType: 'artifact', sortKey: artifactSortKey(record) };
    try {
      await this.container.items.create(doc);
      return { record, created: true };
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      const existing = await this.get(record.userId, record.key);
      if (!existing) throw error;
      return { record: existing, created: false };
    }
  }

  async get(userId: string, key: string): Promise<ArtifactRecord | null> {
    const [doc] = await this.query<Record<string, unknown>>(userId, `SELECT * FROM c WHERE c.userId = @userId AND c.id = @id`, [{ name: '@id', value: artifactId(key) }]);
    return doc ? toRecord(doc) : null;
  }

  async list(userId: string, filter: ArtifactFilter, limit: number, cursor?: string): Promise<{ items: ArtifactRecord[]; nextCursor: string | null }> {
    const where = ['c.userId = @userId', "c.docType = 'artifact'"];
    const params: SqlParameter[] = [];
    const add = (sql: (p: string) => string, value: string) => {
      const name = `@p${params.length}`;
      params.push({ name, value });
      where.push(sql(name));
    };
    if (filter.type) add((p) => `c.type = ${p}`, filter.type);
    if (filter.source) add((p) => `c.source = ${p}`, filter.source);
    for (const tag of filter.tags ?? []) add((p) => `ARRAY_CONTAINS(c.tags, ${p})`, tag);
    if (filter.sessionId) add((p) => `c.sessionId = ${p}`, filter.sessionId);
    if (filter.agentId) add((p) => `c.agentId = ${p}`, filter.agentId);
    if (filter.from) add((p) => `c.createdAt >= ${p}`, new Date(filter.from).toISOString());
    if (filter.to) add((p) => `c.createdAt <= ${p}`, new Date(filter.to).toISOString());
    if (cursor) add((p) => `c.sortKey < ${p}`, decodeCursor(cursor));
    // Inline contents are not needed for a listing: leave them out of the response.
    const docs = await this.query<Record<string, unknown> & { sortKey: string }>(
      userId,
      `SELECT TOP ${limit + 1} * FROM c WHERE ${where.join(' AND ')} ORDER BY c.sortKey DESC`,
      params,
    );
    const page = docs.slice(0, limit);
    return {
      items: page.map((d) => toRecord({ ...d, storage: (d.storage as { kind: string }).kind === 'inline' ? { kind: 'inline', content: '' } : d.storage })),
      nextCursor: docs.length > limit ? encodeCursor(page.at(-1)!.sortKey) : null,
    };
  }

  async delete(userId: string, key: string): Promise<ArtifactRecord | null> {
    const existing = await this.get(userId, key);
    if (!existing) return null;
    try {
      await this.container.item(artifactId(key), userId).delete();
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
      return null;
    }
    return existing;
  }

  async search(userId: string, terms: readonly string[], limit: number): Promise<ArtifactRecord[]> {
    if (terms.length === 0) return [];
    const params = terms.map((t, i) => ({ name: `@t${i}`, value: t.toLowerCase() }));
    const matches = params.map((p) => `CONTAINS(LOWER(c.description), ${p.name}) OR (c.storage.kind = 'inline' AND CONTAINS(LOWER(c.storage.content), ${p.name}))`);
    const docs = await this.query<Record<string, unknown>>(
      userId,
      `SELECT TOP ${limit} * FROM c WHERE c.userId = @userId AND c.docType = 'artifact' AND (${matches.join(' OR ')}) ORDER BY c.sortKey DESC`,
      params,
    );
    return docs.map(toRecord);
  }

  async putSnapshot(snapshot: SnapshotRecord): Promise<void> {
    try {
      await this.container.items.create({ ...snapshot, id: snapshotId(snapshot.snapshotId), docType: 'snapshot' });
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
  }

  async getSnapshot(userId: string, id: string): Promise<SnapshotRecord | null> {
    const [doc] = await this.query<SnapshotRecord>(userId, 'SELECT c.userId, c.snapshotId, c.keys, c.agentId, c.createdAt FROM c WHERE c.userId = @userId AND c.id = @id', [
      { name: '@id', value: snapshotId(id) },
    ]);
    if (!doc) return null;
    const { agentId, ...rest } = doc;
    return { ...rest, ...(agentId !== undefined && { agentId }) };
  }
}
