import { mkdirSync } from 'node:fs';
import type { PGlite, QueryOptions } from '@electric-sql/pglite';
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
 * PGlite with pgvector and btree_gin; data persists under `dataDir` (memory-only when it is undefined or `memory://`).
 * `queryOptions` go with every query: a Buffer for float4[] (vectorsParam) or bytea (vectorCodes) is sent as it is, in
 * binary, as node-postgres sends it (PGlite sends any byte array in binary, though its serializers are typed as
 * strings); its own serializers would write it as text. Other values keep them.
 */
export async function createPglite(dataDir: string | undefined, options: PgliteOptions = {}): Promise<{ pglite: PGlite; queryOptions: QueryOptions }> {
  if (dataDir && !dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true });
  // Loaded only when used: the Azure deployment package leaves PGlite out (see .ci/stage-package.mjs).
  const [{ PGlite }, { vector }, { btree_gin }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite-pgvector'),
    import('@electric-sql/pglite/contrib/btree_gin'),
  ]);
  const startParams = options.sharedBuffersMb === undefined ? undefined : [...PGlite.defaultStartParams, '-c', `shared_buffers=${options.sharedBuffersMb}MB`];
  const pglite = await PGlite.create({ ...(dataDir && { dataDir }), extensions: { vector, btree_gin }, ...(startParams && { startParams }) });
  const binary = (oid: number) => (value: unknown) => (Buffer.isBuffer(value) ? value : pglite.serializers[oid]!(value)) as string;
  const queryOptions = { serializers: { [FLOAT4_ARRAY_OID]: binary(FLOAT4_ARRAY_OID), [BYTEA_OID]: binary(BYTEA_OID) } };
  return { pglite, queryOptions };
}

/** The rows of `select` in PostgreSQL's binary COPY format, which PGlite writes to a byte array in this thread. */
export async function copyBinary(pglite: Pick<PGlite, 'query'>, select: string): Promise<Uint8Array> {
  const { blob } = await pglite.query(`COPY (${select}) TO '/dev/blob' WITH (FORMAT binary)`);
  if (!blob) throw new Error('PGlite returned no blob for COPY TO /dev/blob');
  return new Uint8Array(await blob.arrayBuffer());
}
