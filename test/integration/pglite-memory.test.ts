import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { createRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';

describe('PGlite memory: its page cache is PGLITE_SHARED_BUFFERS_MB', () => {
  it('given no setting, then 32 MB; a malformed one stops the start naming it', () => {
    expect(loadSettings({}).PGLITE_SHARED_BUFFERS_MB).toBe(32);
    expect(loadSettings({ PGLITE_SHARED_BUFFERS_MB: '64' }).PGLITE_SHARED_BUFFERS_MB).toBe(64);
    expect(() => loadSettings({ PGLITE_SHARED_BUFFERS_MB: '0' })).toThrow(/PGLITE_SHARED_BUFFERS_MB/);
    expect(() => loadSettings({ PGLITE_SHARED_BUFFERS_MB: 'lots' })).toThrow(/PGLITE_SHARED_BUFFERS_MB/);
  });

  it('given a size, then PostgreSQL runs with that many shared buffers, and stores and reads as before', async () => {
    const db = await openPglite(undefined, { sharedBuffersMb: 16 });
    try {
      expect(await db.query<{ shared_buffers: string }>('SHOW shared_buffers')).toEqual([{ shared_buffers: '16MB' }]);
      await db.exec('CREATE TABLE t (n int)');
      await db.query('INSERT INTO t SELECT generate_series(1, 100000)');
      expect(await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).toEqual([{ n: 100000 }]);
    } finally {
      await db.close();
    }
  });
});

describe('PGlite vector indexes: PGLITE_VECTOR_INDEXES', () => {
  it('given hnsw (the default), the runtime keeps an HNSW index a vector column; given none, a restart drops them', async () => {
    expect(loadSettings({}).PGLITE_VECTOR_INDEXES).toBe('hnsw');
    expect(() => loadSettings({ PGLITE_VECTOR_INDEXES: 'ivf' })).toThrow(/PGLITE_VECTOR_INDEXES/);
    const dir = mkdtempSync(join(tmpdir(), 'vector-indexes-'));
    const indexes = async (mode: string) => {
      const runtime = await createRuntime(loadSettings({ MEMORY_DATA_DIR: dir, PGLITE_VECTOR_INDEXES: mode, LOG_LEVEL: 'warning' }));
      try {
        const { db } = runtime as Runtime & { db: Db };
        return (await db.query<{ table: string }>(`SELECT tablename AS table FROM pg_indexes WHERE indexname LIKE '%\\_hnsw\\_%' ORDER BY 1`)).map((r) => r.table);
      } finally {
        await runtime.close();
      }
    };
    try {
      expect(await indexes('hnsw')).toEqual(['interactions', 'interactions', 'memory_turns']);
      expect(await indexes('none')).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
