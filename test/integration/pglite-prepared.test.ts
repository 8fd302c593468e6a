import { afterEach, describe, expect, it } from 'vitest';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { vectorsParam } from '../../shared/adapters/postgres/vector-params.js';

/** PGlite's statements run by name (PreparedStatements in pglite.ts): prepared once per SQL text, answered as before. */
describe('PGlite statements, prepared once per text', () => {
  const opened: Db[] = [];
  const open = async (ownThread = false) => {
    const db = await openPglite(undefined, { ownThread });
    opened.push(db);
    return db;
  };
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((db) => db.close().catch(() => undefined)));
  });
  const prepared = (db: Db) => db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements ORDER BY prepare_time');

  it.each([false, true])('prepares a text once and runs it again by name, with new parameters each time (own thread: %s)', async (ownThread) => {
    const db = await open(ownThread);
    await db.exec('CREATE TABLE t (id int PRIMARY KEY, doc jsonb, at timestamptz)');
    const insert = 'INSERT INTO t VALUES ($1, $2, $3)';
    await db.query(insert, [1, { a: 'x' }, new Date(Date.UTC(2025, 0, 1))]);
    await db.query(insert, [2, null, null]);
    expect(await db.query('SELECT * FROM t ORDER BY id')).toEqual([
      { id: 1, doc: { a: 'x' }, at: new Date(Date.UTC(2025, 0, 1)) },
      { id: 2, doc: null, at: null },
    ]);
    const texts = (await prepared(db)).map((p) => p.statement);
    expect(texts.filter((t) => t === insert)).toHaveLength(1);
    expect(texts).toContain('SELECT * FROM t ORDER BY id');
  }, 60_000);

  it('sends a vector parameter in binary, as query did', async () => {
    const db = await open();
    await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
    const { values } = vectorsParam([[0.5, -2, 3]]);
    const [row] = await db.query<{ v: string }>('SELECT ($1::float4[])::vector::text AS v', [values]);
    expect(row!.v).toBe('[0.5,-2,3]');
  }, 60_000);

  it('keeps the error of a statement that fails to parse or to run, and serves the next one', async () => {
    const db = await open();
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)');
    await expect(db.query('SELEC 1')).rejects.toMatchObject({ code: '42601' });
    await db.query('INSERT INTO t VALUES ($1)', [1]);
    await expect(db.query('INSERT INTO t VALUES ($1)', [1])).rejects.toMatchObject({ code: '23505', constraint: 't_pkey' });
    await expect(db.query('INSERT INTO t VALUES ($1)', ['one'])).rejects.toMatchObject({ code: '22P02' });
    expect(await db.query('SELECT id FROM t')).toEqual([{ id: 1 }]);
    expect((await prepared(db)).map((p) => p.statement)).not.toContain('SELEC 1');
  }, 60_000);

  it('prepares a statement again when its table changed its rows since, outside a transaction', async () => {
    const db = await open();
    await db.exec('CREATE TABLE t (id int)');
    await db.query('INSERT INTO t VALUES ($1)', [1]);
    const all = 'SELECT * FROM t';
    expect(await db.query(all)).toEqual([{ id: 1 }]);
    await db.exec("ALTER TABLE t ADD COLUMN name text DEFAULT 'n'");
    expect(await db.query(all)).toEqual([{ id: 1, name: 'n' }]);
    // In a transaction the failed statement has failed the transaction: the error is the caller's.
    await db.exec('ALTER TABLE t DROP COLUMN name');
    await expect(db.transaction((tx) => tx.query(all))).rejects.toMatchObject({ code: '0A000' });
    expect(await db.query(all)).toEqual([{ id: 1 }]);
  }, 60_000);

  it("runs a transaction's statements prepared, and a rollback undoes their writes", async () => {
    const db = await open();
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)');
    const insert = 'INSERT INTO t VALUES ($1)';
    await db.transaction(async (tx) => {
      await tx.query(insert, [1]);
      await tx.query(insert, [2]);
    });
    await expect(
      db.transaction(async (tx) => {
        await tx.query(insert, [3]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await db.query('SELECT id FROM t ORDER BY id')).toEqual([{ id: 1 }, { id: 2 }]);
    expect((await prepared(db)).filter((p) => p.statement === insert)).toHaveLength(1);
  }, 60_000);

  it('keeps at most 256 statements prepared, closing the least recently used', async () => {
    const db = await open();
    const first = 'SELECT 0 AS n';
    await db.query(first);
    for (let n = 1; n <= 300; n++) {
      await db.query(`SELECT ${n} AS n`);
      if (n % 100 === 0) await db.query(first); // used again: kept
    }
    const texts = (await prepared(db)).map((p) => p.statement);
    expect(texts.length).toBeLessThanOrEqual(256);
    expect(texts).toContain(first);
    expect(texts).toContain('SELECT 300 AS n');
    expect(texts).not.toContain('SELECT 1 AS n');
    expect(await db.query('SELECT 1 AS n')).toEqual([{ n: 1 }]);
  }, 60_000);
});
