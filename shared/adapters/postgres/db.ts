import { mkdirSync } from 'node:fs';
import type { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import { PriorityGate } from './priority-gate.js';
import { FLOAT4_ARRAY_OID } from './vector-params.js';

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

export interface PgliteOptions {
  /**
   * PostgreSQL's page cache inside PGlite's WASM memory (PGLITE_SHARED_BUFFERS_MB). The default, 128 MB, is most of
   * that memory, which never shrinks; a miss is a read through PGlite's file system (for a data folder, from the OS
   * page cache, outside the process).
   */
  sharedBuffersMb?: number;
}

/** PGlite with pgvector and btree_gin; data persists under `dataDir` (memory-only when it is undefined or `memory://`). */
export async function openPglite(dataDir: string | undefined, options: PgliteOptions = {}): Promise<Db> {
  if (dataDir && !dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  // Loaded only when used: the Azure deployment package leaves PGlite out (see .ci/stage-package.mjs).
  const [{ PGlite }, { vector }, { btree_gin }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('@electric-sql/pglite/contrib/btree_gin'),
  ]);
  const startParams = options.sharedBuffersMb === undefined ? undefined : [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.sharedBuffersMb}MB`];
  const db = await PGlite.create({ ...(dataDir && { dataDir }), extensions: { vector, btree_gin }, ...(startParams && { startParams }) });
  // A Buffer for float4[] (vectorsParam) goes as it is, in binary, as node-postgres sends it (PGlite sends any byte
  // array in binary, though its serializers are typed as strings); its own would write it as text. Other values keep it.
  const binary = { serializers: { [FLOAT4_ARRAY_OID]: (value: unknown) => (Buffer.isBuffer(value) ? value : db.serializers[FLOAT4_ARRAY_OID]!(value)) as string } };
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    query: async <T>(sql: string, params?: unknown[]) => (await q.query<T>(sql, params, binary)).rows,
    exec: async (sql) => void (await q.exec(sql)),
  });
  // Requests' operations go before the background's (priority-gate.ts); inside a transaction, statements are its own.
  const gate = new PriorityGate();
  const outer = wrap(db);
  return {
    kind: 'pglite',
    query: (sql, params) => gate.run(() => outer.query(sql, params)),
    exec: (sql) => gate.run(() => outer.exec(sql)),
    copyBinary: (select) =>
      gate.run(async () => {
        const { blob } = await db.query(`COPY (${select}) TO '/dev/blob' WITH (FORMAT binary)`);
        if (!blob) throw new Error('PGlite returned no blob for COPY TO /dev/blob');
        return new Uint8Array(await blob.arrayBuffer());
      }),
    transaction: (fn) => gate.run(() => db.transaction((tx) => fn(wrap(tx)))),
    close: () => db.close(),
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
