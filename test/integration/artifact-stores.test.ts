import { describe, expect, it } from 'vitest';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { ARTIFACT_BLOB_SWEEP_GRACE_SECONDS, HOUR_SECONDS } from '../../shared/domain/retention.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { artifact, describeArtifactStoreContract } from './artifact-store-contract.js';

describeArtifactStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { store: new PostgresArtifactStore(db), close: () => db.close() };
});

describe('postgres artifacts: rows from before TTLs', () => {
  it('reads a row without expires_at or expiresAt as permanent, and the sweep leaves it', async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const legacy: Record<string, unknown> = { ...artifact('u', 'old'), storage: { kind: 'inline' } };
    delete legacy.expiresAt;
    const createdAt = '2026-01-05T10:00:00.000Z';
    await db.query(
      `INSERT INTO artifacts (user_id, key, sort_key, type, source, tags, session_id, agent_id, created_at, doc, content)
       VALUES ('u', 'old', $1, 'tool_output', NULL, '{}', NULL, NULL, $2, $3, 'content of old')`,
      [`${createdAt}|old`, createdAt, JSON.stringify(legacy)],
    );
    const store = new PostgresArtifactStore(db);
    const far = new Date('2999-01-01T00:00:00.000Z');
    expect(await store.get('u', 'old', far)).toEqual(artifact('u', 'old'));
    expect(await store.expire('u', far)).toBe(0);
    await db.close();
  });
});

const openFakeDatabase = useCosmosFake();

describeArtifactStoreContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { store: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), close: async () => database.client.dispose() };
});

describe('cosmos artifacts: native TTL', () => {
  // The wire fake does not execute TTL: what is checked is the per-item `ttl` the adapter writes.
  it('stamps an expiring item with its ttl (a blob-backed one with the sweep grace on top), a permanent one with none', async () => {
    const database = await openFakeDatabase();
    const container = database.container(COSMOS_CONTAINERS.artifacts.name);
    const store = new CosmosArtifactStore(container);
    const createdAt = '2026-01-05T10:00:00.000Z';
    const in2h = '2026-01-05T12:00:00.000Z';
    await store.putIfAbsent(artifact('u', 'inline', { createdAt, expiresAt: in2h }));
    await store.putIfAbsent(artifact('u', 'blob', { createdAt, expiresAt: in2h, storage: { kind: 'blob', blobName: 'u/blob/h~1' } }));
    await store.putIfAbsent(artifact('u', 'forever', { createdAt }));
    const ttlOf = async (key: string) => ((await container.item(`artifact:${key}`, 'u').read<{ ttl?: number }>()).resource ?? { ttl: -999 }).ttl;
    expect(await ttlOf('inline')).toBe(2 * HOUR_SECONDS);
    expect(await ttlOf('blob')).toBe(2 * HOUR_SECONDS + ARTIFACT_BLOB_SWEEP_GRACE_SECONDS);
    expect(await ttlOf('forever')).toBeUndefined();
    // The ttl is storage detail: readers never see it.
    expect(await store.get('u', 'inline', new Date(createdAt))).toEqual(artifact('u', 'inline', { createdAt, expiresAt: in2h }));
    await database.client.dispose();
  });

  it('reads an artifact written before TTLs existed (no expiresAt) as permanent', async () => {
    const database = await openFakeDatabase();
    const container = database.container(COSMOS_CONTAINERS.artifacts.name);
    const legacy: Record<string, unknown> = { ...artifact('u', 'old'), id: 'artifact:old', docType: 'artifact', sortKey: '2026-01-05T10:00:00.000Z|old' };
    delete legacy.expiresAt;
    await container.items.create(legacy);
    const store = new CosmosArtifactStore(container);
    expect(await store.get('u', 'old', new Date('2999-01-01T00:00:00.000Z'))).toEqual(artifact('u', 'old'));
    expect(await store.expire('u', new Date('2999-01-01T00:00:00.000Z'))).toBe(0);
    await database.client.dispose();
  });
});
