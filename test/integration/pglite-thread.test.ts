import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { inBackground } from '../../shared/adapters/postgres/priority-gate.js';
import { vectorsParam } from '../../shared/adapters/postgres/vector-params.js';

/** PGlite on its own thread (PGLITE_THREAD=own) behaves as on the service's: the store contract runs on it too (postgres-stores.test.ts). */
describe('PGlite on its own thread', () => {
  const opened: Db[] = [];
  const open = async (ownThread: boolean) => {
    const db = await openPglite(undefined, { ownThread });
    opened.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close().catch(() => undefined)));
  });

  it("keeps PostgreSQL's error fields, so the adapters still tell a unique violation or a raised code", async () => {
    const db = await open(true);
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)');
    await db.query('INSERT INTO t VALUES ($1)', [1]);
    const error = await db.query('INSERT INTO t VALUES ($1)', [1]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: '23505', constraint: 't_pkey' });
    const raised = await db.query(`DO $$ BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = 'P0042'; END $$`).catch((e: unknown) => e);
    expect(raised).toMatchObject({ code: 'P0042', message: 'refused' });
  }, 60_000);

  it('commits a transaction that returns, rolls back one that throws, and serves other operations after each', async () => {
    const db = await open(true);
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)');
    const kept = await db.transaction(async (tx) => {
      await tx.query('INSERT INTO t VALUES (1)');
      return (await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM t'))[0]!.n;
    });
    expect(kept).toBe(1);
    const refused = await db
      .transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (2)');
        throw new Error('changed my mind');
      })
      .catch((e: unknown) => (e as Error).message);
    expect(refused).toBe('changed my mind');
    // A statement that fails inside: the transaction ends, its error is the caller's.
    const failed = await db.transaction((tx) => tx.query('INSERT INTO t VALUES (1)')).catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: '23505' });
    expect(await db.query('SELECT id FROM t ORDER BY id')).toEqual([{ id: 1 }]);
  }, 60_000);

  it('sends vectors in binary and reads the same rows and COPY bytes as PGlite on this thread', async () => {
    const read = async (db: Db) => {
      await db.exec('CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE v (id int, at timestamptz, doc jsonb, e vector(3))');
      const { values, offsets, sizes } = vectorsParam([
        [0.1, -2.5, 3],
        [1e-7, 0, 42.125],
      ]);
      await db.query(
        `INSERT INTO v SELECT i, '2026-11-29T10:00:00Z', jsonb_build_object('i', i), ($1::float4[])[o + 1 : o + s]::vector FROM unnest($2::int[], $3::int[], $4::int[]) AS k(i, o, s)`,
        [values, [1, 2], offsets, sizes],
      );
      return { rows: await db.query('SELECT id, at, doc, e::text AS e FROM v ORDER BY id'), copy: await db.copyBinary!('SELECT id, at, e FROM v ORDER BY id') };
    };
    const own = await read(await open(true));
    const here = await read(await open(false));
    expect(own.rows).toEqual(here.rows);
    expect(own.rows[0]).toMatchObject({ id: 1, at: new Date('2026-11-29T10:00:00Z'), doc: { i: 1 }, e: '[0.1,-2.5,3]' });
    expect(Buffer.from(own.copy).equals(Buffer.from(here.copy))).toBe(true);
  }, 60_000);

  it("serves a request's operation before background operations queued earlier", async () => {
    const db = await open(true);
    const done: string[] = [];
    const slow = 'SELECT count(*) FROM generate_series(1, 300000)';
    const background = inBackground(() => Array.from({ length: 12 }, (_, i) => db.query(slow).then(() => done.push(`background ${i}`))));
    const request = db.query(slow).then(() => done.push('request'));
    await Promise.all([...background, request]);
    // First come, first served would answer it last; it goes right after the operation running when it arrived.
    expect(done.indexOf('request')).toBeLessThan(3);
  }, 60_000);

  it('refuses operations once closed', async () => {
    const db = await open(true);
    await db.close();
    await expect(db.query('SELECT 1')).rejects.toThrow(/exited/);
  }, 60_000);

  it('does not keep the process alive while no operation is in flight', async () => {
    const script = [
      `const { openPglite } = await import(${JSON.stringify(new URL('../../shared/adapters/postgres/db.ts', import.meta.url).href)});`,
      'const db = await openPglite(undefined, { ownThread: true });',
      "console.log(JSON.stringify(await db.query('SELECT 41 + 1 AS n')));",
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
      timeout: 50_000,
    });
    expect(stdout.trim()).toBe('[{"n":42}]');
  }, 60_000);
});
