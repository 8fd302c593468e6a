/**
 * PostgreSQL's binary COPY format (`COPY (SELECT …) TO … WITH (FORMAT binary)`), read in place: a header (the
 * signature, a flags word, a header extension), then per row a 16-bit field count and per field a 32-bit length (-1
 * for NULL) and that many bytes, each in its type's binary form (its `send` function), then a trailer (-1). The
 * search snapshots load their rows so (search-snapshot.ts): PGlite writes a vector or a tsvector in binary in a
 * fraction of the time its text takes, and reading the bytes costs less than parsing the text.
 */
export class CopyRows {
  private readonly bytes: Buffer;
  private readonly view: DataView;
  private at: number;
  /** The current row's fields: where each starts and its length (-1: NULL). */
  private starts: number[] = [];
  private lengths: number[] = [];
  private rows: number | undefined;
  private lastRowAt = 0;

  constructor(data: Uint8Array) {
    this.bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    if (data.byteLength < HEADER_BYTES || !this.bytes.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new Error('Not PostgreSQL binary COPY data: no signature');
    const flags = this.view.getInt32(SIGNATURE.length);
    if (flags & WITH_OIDS) throw new Error('Binary COPY data with OIDs is not read');
    this.at = HEADER_BYTES + this.view.getInt32(SIGNATURE.length + 4);
  }

  /** The rows in all (read once, without moving). */
  count(): number {
    if (this.rows === undefined) {
      let rows = 0;
      for (let at = this.at; ; rows++) {
        const fields = this.view.getInt16(at);
        if (fields === -1) break;
        this.lastRowAt = at;
        at += 2;
        for (let f = 0; f < fields; f++) at += 4 + Math.max(this.view.getInt32(at), 0);
      }
      this.rows = rows;
    }
    return this.rows;
  }

  /** An int8 field of the last row, read without moving (a chunk's last revision); null when NULL or there are no rows. */
  lastInt8(field: number): number | null {
    if (this.count() === 0) return null;
    let at = this.lastRowAt + 2;
    if (field >= this.view.getInt16(this.lastRowAt)) throw new Error(`Binary COPY row has no field ${field}`);
    for (let f = 0; f < field; f++) at += 4 + Math.max(this.view.getInt32(at), 0);
    return this.view.getInt32(at) === -1 ? null : this.int64(at + 4);
  }

  /** Moves to the next row; false after the last one. */
  next(): boolean {
    if (this.at + 2 > this.view.byteLength) throw new Error('Binary COPY data ends without its trailer');
    const fields = this.view.getInt16(this.at);
    this.at += 2;
    if (fields === -1) return false;
    if (fields !== this.starts.length) {
      this.starts = new Array<number>(fields);
      this.lengths = new Array<number>(fields);
    }
    for (let f = 0; f < fields; f++) {
      const length = this.view.getInt32(this.at);
      this.at += 4;
      this.starts[f] = this.at;
      this.lengths[f] = length;
      if (length > 0) this.at += length;
    }
    if (this.at > this.view.byteLength) throw new Error('Binary COPY data ends within a row');
    return true;
  }

  /** The field's bytes (a view, valid as long as the data), in its type's binary form; null for NULL. */
  binary(field: number): Buffer | null {
    const length = this.length(field);
    return length === -1 ? null : this.bytes.subarray(this.starts[field]!, this.starts[field]! + length);
  }

  /** text, varchar, name: UTF-8. */
  text(field: number): string | null {
    const length = this.length(field);
    return length === -1 ? null : this.bytes.toString('utf8', this.starts[field]!, this.starts[field]! + length);
  }

  int4(field: number): number | null {
    return this.length(field) === -1 ? null : this.view.getInt32(this.starts[field]!);
  }

  /** int8 as a number: exact up to 2^53 (revisions, counts). */
  int8(field: number): number | null {
    return this.length(field) === -1 ? null : this.int64(this.starts[field]!);
  }

  /** timestamptz (microseconds since 2000-01-01 UTC) as milliseconds since 1970, to the millisecond below, as a Date holds it. */
  timestamptz(field: number): number | null {
    return this.length(field) === -1 ? null : POSTGRES_EPOCH_MS + Math.floor(this.int64(this.starts[field]!) / 1000);
  }

  /** pgvector's vector (`vector_send`: dimensions and a reserved word as 16-bit integers, then big-endian float4s). */
  vector(field: number): Float32Array | null {
    const length = this.length(field);
    if (length === -1) return null;
    const start = this.starts[field]!;
    const dimensions = this.view.getUint16(start);
    if (length !== 4 + 4 * dimensions) throw new Error(`A vector of ${dimensions} dimensions in ${length} bytes`);
    const out = new Float32Array(dimensions);
    for (let i = 0; i < dimensions; i++) out[i] = this.view.getFloat32(start + 4 + 4 * i);
    return out;
  }

  /** jsonb: a version byte (1), then the JSON text. */
  jsonb(field: number): unknown {
    const length = this.length(field);
    if (length === -1) return null;
    const start = this.starts[field]!;
    if (this.bytes[start] !== 1) throw new Error(`Unknown jsonb binary version ${this.bytes[start]}`);
    return JSON.parse(this.bytes.toString('utf8', start + 1, start + length)) as unknown;
  }

  private length(field: number): number {
    const length = this.lengths[field];
    if (length === undefined) throw new Error(`Binary COPY row has no field ${field}`);
    return length;
  }

  private int64(at: number): number {
    return this.view.getInt32(at) * 2 ** 32 + this.view.getUint32(at + 4);
  }
}

/**
 * Calls `term` with each lexeme of a tsvector's binary form (`tsvectorsend`: a 32-bit count, then per lexeme its
 * UTF-8 bytes ended by a NUL, a 16-bit count of positions and the positions, 16 bits each), as its bytes in place
 * (`tsv[start]` up to `tsv[end]`), and how often it occurs: its positions, or once without any (as bm25Sql counts).
 */
export function forEachLexeme(tsv: Buffer, term: (bytes: Buffer, start: number, end: number, tf: number) => void): void {
  if (tsv.length < 4) throw new Error('A tsvector in binary is at least 4 bytes');
  const lexemes = tsv.readInt32BE(0);
  let at = 4;
  for (let i = 0; i < lexemes; i++) {
    // Found by a loop rather than tsv.indexOf: a call into the runtime cost more than the few bytes of a lexeme.
    let end = at;
    while (end < tsv.length && tsv[end] !== 0) end++;
    if (end + 3 > tsv.length) throw new Error('A tsvector in binary ends within a lexeme');
    const positions = (tsv[end + 1]! << 8) | tsv[end + 2]!;
    term(tsv, at, end, Math.max(positions, 1));
    at = end + 3 + 2 * positions;
  }
}

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
/** The signature, the flags and the header extension's length. */
const HEADER_BYTES = SIGNATURE.length + 8;
/** Flags' bit 16: each row starts with its OID. */
const WITH_OIDS = 1 << 16;
/** 2000-01-01T00:00:00Z, PostgreSQL's epoch. */
const POSTGRES_EPOCH_MS = Date.UTC(2000, 0, 1);
