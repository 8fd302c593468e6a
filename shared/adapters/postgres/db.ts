import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { copyBinary, createPglite, type PgliteOptions } from './pglite.js';
import { openPgliteThread } from './pglite-thread.js';
import { PriorityGate } from './priority-gate.js';

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters. */
  exec(sql: string): Promise<void>;
}

/** The little the adapters need from PostgreSQL, served by PGlite in-process or by a real server. */
export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /**
   * PGlite only: the rows of `select` (one statement, its values inlined: COPY takes no parameters) in PostgreSQL's
   * binary COPY format (copy-binary.ts), which PGlite writes to a byte array in this process.
   */
  copyBinary?(select: string): Promise<Uint8Array>;
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface OpenPgliteOptions extends PgliteOptions {
  /**
   * Runs PGlite on a thread of its own (pglite-thread.ts) instead of the calling one (PGLITE_THREAD): the service's thread
   * then only sends statements and reads their rows, while Postgres runs beside it.
   */
  ownThread?: boolean;
}

/** PGlite with pgvector and btree_gin (pglite.ts), on this thread or on its own. */
export async function openPglite(dataDir: string | undefined, options: OpenPgliteOptions = {}): Promise<Db> {
  if (options.ownThread) return openPgliteThread(dataDir, options);
  const { pglite, statements } = await createPglite(dataDir, options);
  // A transaction's statements run on its connection, which is PGlite's one: prepared statements serve it too.
  const wrap = (q: Pick<PGlite, 'exec'>): Queryable => ({
    query: <T>(sql: string, params?: unknown[]) => statements.query<T>(sql, params),
    exec: async (sql) => void (await q.exec(sql)),
  });
  // Requests' operations go before the background's (priority-gate.ts); inside a transaction, statements are its own.
  const gate = new PriorityGate();
  const outer = wrap(pglite);
  return {
    kind: 'pglite',
    query: (sql, params) => gate.run(() => outer.query(sql, params)),
    exec: (sql) => gate.run(() => outer.exec(sql)),
    copyBinary: (select) => gate.run(() => copyBinary(pglite, select)),
    transaction: (fn) => gate.run(() => pglite.transaction((tx) => fn(wrap(tx)))),
    close: () => pglite.close(),
  };
}

/** Any PostgreSQL 15+ with pgvector. */
export async function openPostgres(connectionString: string): Promise<Db> {
  const pool = new pg.Pool({ connectionString, max: 10 });
  const wrap = (q: pg.Pool | pg.PoolClient): Queryable => ({
    query: async <T>(sql: string, params?: unknown[]) => (await q.query(sql, params)).rows as T[],
    exec: async (sql) => void (await q.query(sql)),
  });
  return {
    kind: 'postgres',
    ...wrap(pool),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await fn(wrap(client));
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
