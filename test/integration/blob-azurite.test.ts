import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { azuriteConnectionString, ensureBlobContainer, openBlobStore, type AzureBlobStore } from '../../shared/adapters/blob/azure-blob.js';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import type { ArtifactStore, DetailMemory } from '../../shared/application/artifact-ports.js';
import { deleteExpired, deleteMemory, retrieveMemory, sha256, storeMemory } from '../../shared/application/artifacts.js';
import { applyRetention } from '../../shared/application/retention.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import { retentionPolicy } from '../../shared/domain/retention.js';
import { LOCAL_PRINCIPAL } from '../../shared/platform/auth.js';
import { startAzurite, type RunningAzurite } from '../../shared/platform/local-host/azurite.js';
import { useCosmosFake } from '../support/cosmos-fake.js';

let azurite: RunningAzurite;
let blobs: AzureBlobStore;
let db: Db;
let detail: DetailMemory;
let n = 0;
const deps = () => ({ detail, clock: { now: () => new Date('2026-01-05T10:00:00Z') }, ids: { newId: () => `id-${++n}` } });

beforeAll(async () => {
  azurite = await startAzurite({});
  blobs = openBlobStore({ container: `artifacts-${Date.now()}`, connectionString: azuriteConnectionString(azurite.blobEndpoint) });
  await ensureBlobContainer(blobs);
  db = await openPglite(undefined);
  await migrate(db);
  detail = { artifacts: new PostgresArtifactStore(db), blobs, limits: { offloadThresholdTokens: 500, inlineMaxBytes: 1024, maxBytes: 16 * 1024 * 1024 } };
}, 60_000);

afterAll(async () => {
  await db?.close();
  await azurite?.stop();
});

describe('Azure Blob adapter against Azurite', () => {
  it('puts, gets and deletes bytes; a missing blob is not_found, deleting it again is fine', async () => {
    const bytes = randomBytes(100_000);
    await blobs.put('u1/k1/h', bytes);
    expect((await blobs.get('u1/k1/h')).equals(bytes)).toBe(true);
    await blobs.delete('u1/k1/h');
    await expect(blobs.get('u1/k1/h')).rejects.toMatchObject({ code: 'not_found' });
    await expect(blobs.delete('u1/k1/h')).resolves.toBeUndefined();
  });
});

describe('detail memory with Blob Storage', () => {
  it('keeps small contents inline and puts larger ones in Blob Storage', async () => {
    const small = await storeMemory(deps(), LOCAL_PRINCIPAL, 'u2', { content: 'x'.repeat(1024), type: 'custom', tags: [] });
    const large = await storeMemory(deps(), LOCAL_PRINCIPAL, 'u2', { content: 'y'.repeat(1025), type: 'custom', tags: [] });
    expect(small.storage).toBe('inline');
    expect(large.storage).toBe('blob');
    expect((await retrieveMemory(deps(), { userId: 'u2' }, large.key, { transform: 'full' })).content).toBe('y'.repeat(1025));
  });

  it('round-trips a 10 MB artifact byte for byte', async () => {
    // Multi-byte characters and every line ending, so any re-encoding would show.
    const unit = `row ${'żółć 東京 🙂 '.repeat(3)}\t"quoted" \\ back\r\n`;
    const content = unit.repeat(Math.ceil((10 * 1024 * 1024) / Buffer.byteLength(unit)));
    const bytes = Buffer.from(content, 'utf8');
    expect(bytes.length).toBeGreaterThanOrEqual(10 * 1024 * 1024);

    const stored = await storeMemory(deps(), LOCAL_PRINCIPAL, 'u3', { content, type: 'file', tags: [] });
    expect(stored).toMatchObject({ storage: 'blob', bytes: bytes.length, contentHash: sha256(bytes) });

    const back = await retrieveMemory(deps(), { userId: 'u3' }, stored.key, { transform: 'full' });
    const backBytes = Buffer.from(back.content, 'utf8');
    expect(backBytes.length).toBe(bytes.length);
    expect(backBytes.equals(bytes)).toBe(true);

    await deleteMemory(deps(), LOCAL_PRINCIPAL, { userId: 'u3' }, stored.key);
    await expect(retrieveMemory(deps(), { userId: 'u3' }, stored.key, { transform: 'full' })).rejects.toMatchObject({ code: 'not_found' });
  }, 120_000);

  it('refuses a content over the maximum with payload_too_large before writing anything', async () => {
    const tight = { ...detail, limits: { ...detail.limits, maxBytes: 2048 } };
    await expect(storeMemory({ ...deps(), detail: tight }, LOCAL_PRINCIPAL, 'u4', { content: 'z'.repeat(2049), type: 'custom', tags: [] })).rejects.toMatchObject({ code: 'payload_too_large' });
    expect((await detail.artifacts.list({ userId: 'u4' }, {}, 10, new Date())).items).toEqual([]);
  });
});

const openFakeDatabase = useCosmosFake();

describe.each([
  ['postgres (PGlite)', async (): Promise<{ store: ArtifactStore; close?: () => void }> => ({ store: new PostgresArtifactStore(db) })],
  [
    'cosmos (wire fake)',
    async (): Promise<{ store: ArtifactStore; close?: () => void }> => {
      const database = await openFakeDatabase();
      return { store: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), close: () => database.client.dispose() };
    },
  ],
])('the TTL sweep with Blob Storage: %s', (_name, openStore) => {
  const T0 = new Date('2026-01-05T10:00:00.000Z');
  const later = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
  const big = (c: string) => c.repeat(2000);
  let sweepDetail: DetailMemory;
  let closeStore: (() => void) | undefined;
  const at = (now: Date) => ({ detail: sweepDetail, clock: { now: () => now }, ids: { newId: () => `id-${++n}` } });
  const blobExists = async (name: string) => (await blobs.container.getBlobClient(name).exists());
  const blobNameOf = async (userId: string, key: string, now: Date) => {
    const record = await sweepDetail.artifacts.get(userId, key, now);
    if (record?.storage.kind !== 'blob') throw new Error(`${key} is not blob-backed`);
    return record.storage.blobName;
  };

  beforeAll(async () => {
    const { store, close } = await openStore();
    sweepDetail = { ...detail, artifacts: store };
    closeStore = close;
  });
  afterAll(() => closeStore?.());

  it('deletes expired artifacts and their blobs, keeps the rest, and a rerun deletes nothing', async () => {
    const user = `sweep-${++n}`;
    const working = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: big('w'), type: 'custom', tags: [], ttlClass: 'working' });
    const session = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: big('s'), type: 'custom', tags: [], ttlClass: 'session' });
    const inline = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: 'small', type: 'custom', tags: [], ttlSeconds: 60 });
    const kept = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: big('k'), type: 'custom', tags: [] });
    const names = { working: await blobNameOf(user, working.key, T0), session: await blobNameOf(user, session.key, T0), kept: await blobNameOf(user, kept.key, T0) };
    expect(names.working).toMatch(/~\d+$/);
    expect(names.kept).not.toMatch(/~/);

    expect(await deleteExpired(sweepDetail, user, later(31 * 60))).toBe(2);
    expect(await blobExists(names.working)).toBe(false);
    expect(await blobExists(names.session)).toBe(true);
    expect(await blobExists(names.kept)).toBe(true);
    expect(await sweepDetail.artifacts.expire(user, later(31 * 60))).toBe(0);
    expect(await deleteExpired(sweepDetail, user, later(31 * 60))).toBe(0);

    expect(await deleteExpired(sweepDetail, user, later(3 * 3600))).toBe(1);
    expect(await blobExists(names.session)).toBe(false);
    expect(await blobExists(names.kept)).toBe(true);
    const left = (await sweepDetail.artifacts.list({ userId: user }, {}, 10, T0)).items.map((r) => r.key);
    expect(left).toEqual([kept.key]);
    expect(left).not.toContain(inline.key);
  });

  it('sweeps in batches until nothing expired is left', async () => {
    const user = `sweep-${++n}`;
    for (let i = 0; i < 130; i++) await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: `note ${i}`, type: 'custom', tags: [], ttlClass: 'working' });
    expect(await deleteExpired(sweepDetail, user, later(3600))).toBe(130);
    expect((await sweepDetail.artifacts.list({ userId: user }, {}, 10, T0)).items).toEqual([]);
  }, 60_000);

  it('a crash after the artifacts went leaves their blobs queued; the next run deletes them', async () => {
    const user = `sweep-${++n}`;
    const stored = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: big('c'), type: 'custom', tags: [], ttlClass: 'working' });
    const name = await blobNameOf(user, stored.key, T0);
    // The first run died right after removing the artifact: no row points at the blob, the queue still does.
    expect(await sweepDetail.artifacts.expire(user, later(3600))).toBe(1);
    expect(await blobExists(name)).toBe(true);
    expect(await deleteExpired(sweepDetail, user, later(3600))).toBe(0);
    expect(await blobExists(name)).toBe(false);
    expect(await sweepDetail.artifacts.pendingBlobDeletions(user, 10)).toEqual([]);
  });

  it('a crash after a blob was deleted, before its queue entry went, is finished by the next run', async () => {
    const user = `sweep-${++n}`;
    const stored = await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { content: big('d'), type: 'custom', tags: [], ttlClass: 'working' });
    const name = await blobNameOf(user, stored.key, T0);
    expect(await sweepDetail.artifacts.expire(user, later(3600))).toBe(1);
    await blobs.delete(name);
    expect(await sweepDetail.artifacts.pendingBlobDeletions(user, 10)).toEqual([name]);
    expect(await deleteExpired(sweepDetail, user, later(3600))).toBe(0);
    expect(await sweepDetail.artifacts.pendingBlobDeletions(user, 10)).toEqual([]);
  });

  it('storing under the key of an expired artifact sweeps it first: the new content stays readable, the old blob goes', async () => {
    const user = `sweep-${++n}`;
    const content = big('r');
    await storeMemory(at(T0), LOCAL_PRINCIPAL, user, { key: 'again', content, type: 'custom', tags: [], ttlClass: 'working' });
    const oldName = await blobNameOf(user, 'again', T0);
    const now = later(3600);
    await expect(retrieveMemory(at(now), { userId: user }, 'again', { transform: 'full' })).rejects.toMatchObject({ code: 'not_found' });
    const again = await storeMemory(at(now), LOCAL_PRINCIPAL, user, { key: 'again', content, type: 'custom', tags: [] });
    expect(again).toMatchObject({ key: 'again', createdAt: now.toISOString(), expiresAt: null });
    expect(await blobExists(oldName)).toBe(false);
    expect((await retrieveMemory(at(now), { userId: user }, 'again', { transform: 'full' })).content).toBe(content);
    // The nightly sweep afterwards leaves the new one alone.
    expect(await deleteExpired(sweepDetail, user, later(7200))).toBe(0);
    expect((await retrieveMemory(at(later(7200)), { userId: user }, 'again', { transform: 'full' })).content).toBe(content);
  });
});

describe('retention (the nightly and manual reflection step) sweeps detail memory', () => {
  it('deletes expired insights and expired artifacts with their blobs, reports both counts, and a rerun deletes nothing', async () => {
    const user = `retention-${++n}`;
    const T0 = new Date('2026-01-05T10:00:00.000Z');
    const now = new Date('2026-03-01T00:00:00.000Z');
    const deps0 = { detail, clock: { now: () => T0 }, ids: { newId: () => `id-${++n}` } };
    const gone = await storeMemory(deps0, LOCAL_PRINCIPAL, user, { content: 'b'.repeat(5000), type: 'custom', tags: [], ttlClass: 'episodic' });
    await storeMemory(deps0, LOCAL_PRINCIPAL, user, { content: 'inline, a week', type: 'custom', tags: [], ttlClass: 'episodic' });
    const kept = await storeMemory(deps0, LOCAL_PRINCIPAL, user, { content: 'permanent', type: 'custom', tags: [] });
    const record = await detail.artifacts.get(user, gone.key, T0);
    const blobName = record?.storage.kind === 'blob' ? record.storage.blobName : 'not a blob';
    const { insights } = postgresStores(db);
    await insights.upsert([
      {
        schemaVersion: SCHEMA_VERSION,
        id: 'old',
        userId: user,
        type: 'session',
        sessionId: 's1',
        sourceSessionIds: ['s1'],
        category: 'preference',
        text: 'superseded long ago',
        confidence: 0.9,
        importance: 'low',
        status: 'superseded',
        embeddingModel: 'test-model',
        insightVector: [0.1, 0.2, 0.3],
        createdAt: T0.toISOString(),
        updatedAt: T0.toISOString(),
      },
    ]);
    const deps = { insights, retention: retentionPolicy(30), detail };

    // Insight retention switched off: the artifacts' TTLs still apply.
    expect(await applyRetention({ ...deps, retention: retentionPolicy(0) }, user, now)).toEqual({ expired: 0, artifactsExpired: 2 });
    expect(await blobs.container.getBlobClient(blobName).exists()).toBe(false);
    expect(await applyRetention(deps, user, now)).toEqual({ expired: 1, artifactsExpired: 0 });
    expect(await applyRetention(deps, user, now)).toEqual({ expired: 0, artifactsExpired: 0 });
    expect((await detail.artifacts.list({ userId: user }, {}, 10, now)).items.map((r) => r.key)).toEqual([kept.key]);
  });
});
