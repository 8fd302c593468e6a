import { mkdirSync } from 'node:fs';
import type { parse, PGlite, protocol, QueryOptions } from '@electric-sql/pglite';
import { cacheFileSizes, type NodeFs } from './pglite-file-sizes.js';
import { BYTEA_OID, FLOAT4_ARRAY_OID } from './vector-params.js';

export interface PgliteOptions {
  /**
   * PostgreSQL's page cache inside PGlite's WASM memory (PGLITE_SHARED_BUFFERS_MB). The default, 128 MB, is most of
   * that memory, which never shrinks; a miss is a read through PGlite's file system (for a data folder, from the OS
   * page cache, outside the process).
   */
  sharedBuffersMb?: number;
}

/**
 * PGlite with pgvector and btree_gin; data persists under `dataDir` (memory-only when it is undefined or `memory://`),
 * and its statements run prepared (PreparedStatements). Of their parameters, a Buffer for float4[] (vectorsParam) or
 * bytea (vectorCodes) is sent as it is, in binary, as node-postgres sends it (PGlite sends any byte array in binary,
 * though its serializers are typed as strings); PGlite's own serializers would write it as text. Other values keep them.
 */
export async function createPglite(dataDir: string | undefined, options: PgliteOptions = {}): Promise<{ pglite: PGlite; statements: PreparedStatements }> {
  const folder = dataDir && !dataDir.startsWith('memory://') ? dataDir : undefined;
  if (folder) mkdirSync(folder, { recursive: true });
  // Loaded only when used: the Azure deployment package leaves PGlite out (see .ci/stage-package.mjs).
  const [pgliteModule, { vector }, { btree_gin }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('@electric-sql/pglite/contrib/btree_gin'),
  ]);
  const { PGlite } = pgliteModule;
  const startParams = options.sharedBuffersMb === undefined ? undefined : [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.sharedBuffersMb}MB`];
  const pglite = await PGlite.create({ ...(dataDir && { dataDir }), extensions: { vector, btree_gin }, ...(startParams && { startParams }) });
  // A data folder is mounted with Emscripten's NODEFS (PGlite's typings leave the file systems out).
  if (folder) cacheFileSizes((pglite.Module.FS as unknown as { filesystems: { NODEFS: NodeFs } }).filesystems.NODEFS);
  const binary = (oid: number) => (value: unknown) => (Buffer.isBuffer(value) ? value : pglite.serializers[oid]!(value)) as string;
  const queryOptions = { serializers: { [FLOAT4_ARRAY_OID]: binary(FLOAT4_ARRAY_OID), [BYTEA_OID]: binary(BYTEA_OID) } };
  return { pglite, statements: new PreparedStatements(pglite, pgliteModule, queryOptions) };
}

/** Prepared statements kept at once; the least recently used one is closed to make room. */
const MAX_PREPARED = 256;
/** PostgreSQL's "cached plan must not change result type" (a table a statement returns rows of was altered). */
const FEATURE_NOT_SUPPORTED = '0A000';

/**
 * Statements run by name: each distinct SQL text is parsed, analysed and described once, as a named prepared
 * statement, and PostgreSQL's plan cache then reuses its plan (a generic one when it costs no more than planning each
 * time). PGlite's `query` parses, describes and plans every statement anew, in WebAssembly, which cost more than many
 * statements' execution: a search snapshot's revision check took 0.7–2.4 ms that way and 0.16–0.19 ms by name.
 *
 * Callers must run one operation at a time outside a transaction (the gate in db.ts, the queue in pglite-worker.ts):
 * like a transaction's own statements, these take only PGlite's statement lock.
 */
export class PreparedStatements {
  private readonly prepared = new Map<string, { name: string; types: number[] }>();
  private named = 0;

  constructor(
    private readonly pglite: PGlite,
    private readonly module: { protocol: typeof protocol; parse: typeof parse },
    private readonly options: QueryOptions,
  ) {}

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    try {
      return await this.run<T>(sql, params);
    } catch (error) {
      // A statement prepared before its table changed is prepared again, unless a transaction it was part of failed.
      if (!isCode(error, FEATURE_NOT_SUPPORTED) || !this.prepared.has(sql) || this.pglite.isInTransaction()) throw error;
      await this.pglite.runExclusive(() => this.close(sql));
      return this.run<T>(sql, params);
    }
  }

  private run<T>(sql: string, params: readonly unknown[]): Promise<T[]> {
    const { serialize } = this.module.protocol;
    return this.pglite.runExclusive(async () => {
      const statement = this.prepared.get(sql) ?? (await this.prepare(sql));
      // Most recently used last: the first is the one to close.
      this.prepared.delete(sql);
      this.prepared.set(sql, statement);
      const values = params.map((value, i) => {
        if (value === null || value === undefined) return null;
        const type = statement.types[i]!;
        const serializer = this.options.serializers?.[type] ?? this.pglite.serializers[type];
        return serializer ? serializer(value) : String(value);
      });
      const { messages } = await this.pglite.execProtocol(
        concat([serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]),
        { syncToFs: false },
      );
      if (!this.pglite.isInTransaction()) await this.pglite.syncToFs();
      return this.module.parse.parseResults(messages, this.pglite.parsers, this.options)[0]!.rows as T[];
    });
  }

  private async prepare(sql: string): Promise<{ name: string; types: number[] }> {
    const { serialize } = this.module.protocol;
    const oldest = this.prepared.size >= MAX_PREPARED ? this.prepared.keys().next().value : undefined;
    if (oldest !== undefined) await this.close(oldest);
    const name = `s${++this.named}`;
    const { messages } = await this.pglite.execProtocol(concat([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]), {
      syncToFs: false,
    });
    const statement = { name, types: this.module.parse.parseDescribeStatementResults(messages) };
    this.prepared.set(sql, statement);
    return statement;
  }

  /** Closes the statement prepared for `sql`; the caller holds PGlite's statement lock. */
  private async close(sql: string): Promise<void> {
    const statement = this.prepared.get(sql);
    if (!statement) return;
    this.prepared.delete(sql);
    const { serialize } = this.module.protocol;
    await this.pglite.execProtocol(concat([serialize.close({ type: 'S', name: statement.name }), serialize.sync()]), { syncToFs: false });
  }
}

function concat(messages: readonly Uint8Array[]): Uint8Array {
  const bytes = new Uint8Array(messages.reduce((n, m) => n + m.length, 0));
  let at = 0;
  for (const m of messages) {
    bytes.set(m, at);
    at += m.length;
  }
  return bytes;
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** The rows of `select` in PostgreSQL's binary COPY format, which PGlite writes to a byte array in this thread. */
export async function copyBinary(pglite: Pick<PGlite, 'query'>, select: string): Promise<Uint8Array> {
  const { blob } = await pglite.query(`COPY (${select}) TO '/dev/blob' WITH (FORMAT binary)`);
  if (!blob) throw new Error('PGlite returned no blob for COPY TO /dev/blob');
  return new Uint8Array(await blob.arrayBuffer());
}
