import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';

/**
 * PGlite on a data folder keeps its files' sizes in memory (pglite-file-sizes.ts). PostgreSQL reads a relation's
 * length from them at every scan: a size too small hides rows, one too large reads past the end of the file and fails.
 * So every step that grows, shrinks or replaces a file is followed by a full scan, and the data folder is opened again.
 */
describe('PGlite on a data folder, its file sizes kept in memory', () => {
  const folders: string[] = [];
  const opened: Db[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close().catch(() => undefined)));
    for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  });
  const open = async (dataDir: string, ownThread: boolean) => {
    const db = await openPglite(dataDir, { ownThread });
    opened.push(db);
    // Scans read the table's own pages: an index would answer a count without them.
    await db.exec('SET enable_indexscan = off; SET enable_indexonlyscan = off; SET enable_bitmapscan = off');
    return db;
  };
  const scan = async (db: Db) => (await db.query<{ rows: number; total: number }>('SELECT count(*)::int AS rows, coalesce(sum(id), 0)::int AS total FROM t'))[0];
  const sum = (from: number, to: number) => ((from + to) * (to - from + 1)) / 2;
  const insert = (db: Db, from: number, to: number) => db.exec(`INSERT INTO t SELECT i, repeat('x', 500) FROM generate_series(${from}, ${to}) AS i`);

  it.each([false, true])('scans every row as the table grows, shrinks and is replaced, and after a reopen (own thread: %s)', async (ownThread) => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'pglite-sizes-'));
    folders.push(dataDir);
    let db = await open(dataDir, ownThread);
    await db.exec('CREATE TABLE t (id int PRIMARY KEY, pad text)');
    await insert(db, 1, 3000);
    expect(await scan(db)).toEqual({ rows: 3000, total: sum(1, 3000) });

    // VACUUM truncates the emptied pages at the table's end; the rows written after extend it again.
    await db.exec('DELETE FROM t WHERE id > 100');
    await db.exec('VACUUM t');
    expect(await scan(db)).toEqual({ rows: 100, total: sum(1, 100) });
    await insert(db, 101, 2000);
    expect(await scan(db)).toEqual({ rows: 2000, total: sum(1, 2000) });

    // TRUNCATE and VACUUM FULL write the table to new files.
    await db.exec('TRUNCATE t');
    await insert(db, 1, 500);
    await db.exec('VACUUM FULL t');
    await insert(db, 501, 1500);
    expect(await scan(db)).toEqual({ rows: 1500, total: sum(1, 1500) });
    await db.exec('CHECKPOINT');
    await db.close();
    opened.pop();

    db = await open(dataDir, ownThread);
    expect(await scan(db)).toEqual({ rows: 1500, total: sum(1, 1500) });
    await insert(db, 1501, 2500);
    expect(await scan(db)).toEqual({ rows: 2500, total: sum(1, 2500) });
  }, 120_000);
});
