import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { azuriteConnectionString, ensureBlobContainer, openBlobStore, type AzureBlobStore } from '../../shared/adapters/blob/azure-blob.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import type { DetailMemory } from '../../shared/application/artifact-ports.js';
import { deleteMemory, retrieveMemory, sha256, storeMemory } from '../../shared/application/artifacts.js';
import { startAzurite, type RunningAzurite } from '../../shared/platform/local-host/azurite.js';

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
    const small = await storeMemory(deps(), 'u2', { content: 'x'.repeat(1024), type: 'custom', tags: [] });
    const large = await storeMemory(deps(), 'u2', { content: 'y'.repeat(1025), type: 'custom', tags: [] });
    expect(small.storage).toBe('inline');
    expect(large.storage).toBe('blob');
    expect((await retrieveMemory(deps(), 'u2', large.key, { transform: 'full' })).content).toBe('y'.repeat(1025));
  });

  it('round-trips a 10 MB artifact byte for byte', async () => {
    // Multi-byte characters and every line ending, so any re-encoding would show.
    const unit = `row ${'żółć 東京 🙂 '.repeat(3)}\t"quoted" \\ back\r\n`;
    const content = unit.repeat(Math.ceil((10 * 1024 * 1024) / Buffer.byteLength(unit)));
    const bytes = Buffer.from(content, 'utf8');
    expect(bytes.length).toBeGreaterThanOrEqual(10 * 1024 * 1024);

    const stored = await storeMemory(deps(), 'u3', { content, type: 'file', tags: [] });
    expect(stored).toMatchObject({ storage: 'blob', bytes: bytes.length, contentHash: sha256(bytes) });

    const back = await retrieveMemory(deps(), 'u3', stored.key, { transform: 'full' });
    const backBytes = Buffer.from(back.content, 'utf8');
    expect(backBytes.length).toBe(bytes.length);
    expect(backBytes.equals(bytes)).toBe(true);

    await deleteMemory(deps(), 'u3', stored.key);
    await expect(retrieveMemory(deps(), 'u3', stored.key, { transform: 'full' })).rejects.toMatchObject({ code: 'not_found' });
  }, 120_000);

  it('refuses a content over the maximum with payload_too_large before writing anything', async () => {
    const tight = { ...detail, limits: { ...detail.limits, maxBytes: 2048 } };
    await expect(storeMemory({ ...deps(), detail: tight }, 'u4', { content: 'z'.repeat(2049), type: 'custom', tags: [] })).rejects.toMatchObject({ code: 'payload_too_large' });
    expect((await detail.artifacts.list('u4', {}, 10)).items).toEqual([]);
  });
});
