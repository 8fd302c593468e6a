/** PostgreSQL's type OID of `float4[]` (built in, the same in every database). */
export const FLOAT4_ARRAY_OID = 1021;
/** `bytea`'s type OID (vectorCodes). */
export const BYTEA_OID = 17;

/**
 * Vectors as statement parameters: all of them in one `float4[]` in PostgreSQL's binary array format, with each
 * vector's offset and size, which the statement slices out with `vectorAt`. A vector written as text costs PGlite about
 * 2 µs a dimension to parse (1 ms for 512 dimensions, more than the rest of a turn's row; its WASM `strtof` works in
 * software long doubles); in binary each element is 4 bytes copied. pgvector stores float4, and a float64 rounds to
 * the same float4 whether PostgreSQL parses its shortest decimal text or `writeFloatBE` rounds it here (unless it lies
 * exactly halfway between two float4s), so the stored vectors are the ones the text gave. node-postgres sends a Buffer in binary as it is; PGlite does with the serializer of
 * `openPglite`.
 */
export function vectorsParam(vectors: readonly (readonly number[])[]): { values: Buffer; offsets: number[]; sizes: number[] } {
  const count = vectors.reduce((n, v) => n + v.length, 0);
  // Header: dimensions (1), has-nulls flag (0), element type (float4, OID 700), then the one dimension's length and lower bound.
  const values = Buffer.alloc(20 + 8 * count);
  values.writeInt32BE(1, 0);
  values.writeInt32BE(0, 4);
  values.writeInt32BE(700, 8);
  values.writeInt32BE(count, 12);
  values.writeInt32BE(1, 16);
  const offsets: number[] = [];
  let at = 20;
  let offset = 0;
  for (const vector of vectors) {
    offsets.push(offset);
    offset += vector.length;
    for (const x of vector) {
      values.writeInt32BE(4, at);
      values.writeFloatBE(x, at + 4);
      at += 8;
    }
  }
  return { values, offsets, sizes: vectors.map((v) => v.length) };
}

/** The SQL that slices one vector out of a vectorsParam: `values`, `offset` and `size` are its three parameters' expressions. */
export const vectorAt = (values: string, offset: string, size: string) => `(${values}::float4[])[${offset} + 1 : ${offset} + ${size}]::vector`;

/** One vector as a parameter (a query's): `asVector` casts its placeholder, so PGlite does not parse it as text. */
export const vectorParam = (vector: readonly number[]): Buffer => vectorsParam([vector]).values;
/**
 * The cast is a subquery, evaluated once a statement: in a generic plan (a prepared statement's, pglite.ts) a cast of a
 * parameter is not folded into a constant but evaluated for every row compared with it (a search's re-rank of 125
 * turns took 1.5 ms instead of 2.0: README, Fact search).
 */
export const asVector = (placeholder: string) => `(SELECT ${placeholder}::float4[]::vector)`;
