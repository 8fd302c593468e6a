import { describe, expect, it } from 'vitest';
import { openPglite } from '../../shared/adapters/postgres/db.js';
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

