import type { Db } from './db.js';

/**
 * Compact vectors for the in-process search snapshots (search-snapshot.ts): each vector is held as int8 codes with one
 * scale per vector (its largest component maps to ±127), a quarter of its float32 size. The snapshot ranks all of a
 * user's rows by the codes' cosine with the query, keeps the best `rerankPool(limit)` as candidates, and re-ranks
 * those by their exact cosine distance over the full-precision vectors, which PostgreSQL computes as it reads them: the
 * result is the exact ranking whenever the true top `limit` are among the candidates (measured on LoCoMo by
 * `npm run bench:vectors`).
 *
 * Cosine ignores a vector's length, so the per-vector scale need not be kept: the codes' own norm stands in for it.
 */

/**
 * Candidates re-ranked exactly per row returned: the codes' ranking only has to put the true top `limit` in its top
 * 1.25 × limit. On LoCoMo the codes' own top 100 already holds 99.8% of the exact top 100 (npm run bench:vectors); each
 * candidate costs the re-rank a row read, so the pool is kept small.
 */
const RERANK_FACTOR = 1.25;

/** How many candidates the compact ranking hands to the exact re-rank for a list of `limit` rows. */
export const rerankPool = (limit: number): number => Math.max(0, Math.ceil(limit * RERANK_FACTOR));

/**
 * Writes `values` as int8 codes into `codes` at `offset` and returns the codes' norm (0 for a zero vector: never
 * ranked). The largest absolute component becomes ±127 and the others round to the nearest step.
 */
export function quantise(values: ArrayLike<number>, codes: Int8Array, offset: number): number {
  let max = 0;
  for (let i = 0; i < values.length; i++) max = Math.max(max, Math.abs(values[i]!));
  if (max === 0 || !Number.isFinite(max)) {
    codes.fill(0, offset, offset + values.length);
    return 0;
  }
  const scale = 127 / max;
  let norm = 0;
  for (let i = 0; i < values.length; i++) {
    // Rounds as Math.round does, five times faster on varied values (they differ only at 0.5 - 2^-54: a code 1 higher).
    const code = Math.floor(values[i]! * scale + 0.5);
    codes[offset + i] = code;
    norm += code * code;
  }
  return Math.sqrt(norm);
}

/**
 * The int8 codes of `vectors`, all in one buffer laid out as vectorsParam lays out their floats (a vector's codes start
 * at its offset there, a byte a component), so a statement slices each out with the same offset and size (codesAt).
 * Each vector is quantised as pgvector stores it, in float4, so the codes are the ones a load of the stored vector
 * would give. PGlite stores them beside the vectors for the search snapshots, which then load a quarter of the bytes
 * and quantise nothing.
 */
export function vectorCodes(vectors: readonly (readonly number[])[]): Buffer {
  const codes = new Int8Array(vectors.reduce((n, v) => n + v.length, 0));
  let offset = 0;
  for (const vector of vectors) {
    quantise(Float32Array.from(vector), codes, offset);
    offset += vector.length;
  }
  return Buffer.from(codes.buffer, codes.byteOffset, codes.byteLength);
}

/** The codes to store with `vectors`: on PGlite, whose search snapshots load them; none on a server, which ranks in SQL. */
export const storedCodes = (db: Pick<Db, 'kind'>, vectors: readonly (readonly number[])[]): Buffer | null => (db.kind === 'pglite' ? vectorCodes(vectors) : null);

/** The SQL that slices one vector's codes out of a vectorCodes parameter, as vectorAt its floats. */
export const codesAt = (codes: string, offset: string, size: string) => `substring(${codes}::bytea FROM ${offset} + 1 FOR ${size})`;

/**
 * Rows of int8 codes, `dims` columns, row-major in one contiguous array (a scan reads memory in order), with each row's
 * codes' norm. A row of another size, or a zero vector, has norm 0 and is never ranked. A row takes `dims` rounded up
 * to the SIMD scan's step (16; the padding is zeros).
 */
export class Int8Matrix {
  private readonly stride: number;
  private codes = new Int8Array(0);
  private norms = new Float32Array(0);
  private count = 0;

  constructor(readonly dims: number) {
    this.stride = Math.max(SIMD_STEP, Math.ceil(dims / SIMD_STEP) * SIMD_STEP);
  }

  /** Bytes held: the codes and the norms, including the room reserved for rows not yet added. */
  get byteLength(): number {
    return this.codes.byteLength + this.norms.byteLength;
  }

  /**
   * Makes room for `rows` rows in all, and for half as many again as now at least: a load of many rows, chunk by
   * chunk, copies the codes a few times rather than once a chunk.
   */
  reserve(rows: number): void {
    if (rows > this.norms.length) this.resize(Math.max(rows, Math.ceil(this.norms.length * 1.5)));
  }

  /** Gives back the room reserved for rows not yet added (after a build; an update grows it again). */
  trim(): void {
    if (this.norms.length > this.count) this.resize(this.count);
  }

  /** Adds one row and returns its index. */
  add(values: ArrayLike<number>): number {
    const row = this.count;
    this.reserve(Math.max(64, row + 1));
    this.norms[row] = values.length === this.dims ? quantise(values, this.codes, row * this.stride) : 0;
    this.count++;
    return row;
  }

  /** Adds one row from its codes (quantise's, as vectorCodes stores them) and returns its index. */
  addCodes(codes: Int8Array): number {
    const row = this.count;
    this.reserve(Math.max(64, row + 1));
    let norm = 0;
    if (codes.length === this.dims) {
      this.codes.set(codes, row * this.stride);
      for (let i = 0; i < codes.length; i++) norm += codes[i]! * codes[i]!;
    }
    this.norms[row] = Math.sqrt(norm);
    this.count++;
    return row;
  }

  private resize(rows: number): void {
    const codes = new Int8Array(rows * this.stride);
    codes.set(this.codes.subarray(0, this.count * this.stride));
    const norms = new Float32Array(rows);
    norms.set(this.norms.subarray(0, this.count));
    this.codes = codes;
    this.norms = norms;
  }

  /** Whether the row can be ranked (a vector of this size, not zero). */
  ranked(row: number): boolean {
    return this.norms[row]! > 0;
  }

  /**
   * The `k` rows nearest `query` by the codes' cosine, best first, among the rows `accept` lets through (the query
   * must be `dims` long).
   */
  nearest(query: ArrayLike<number>, k: number, accept: (row: number) => boolean): number[] {
    const best = new BoundedHeap(k);
    const norms = this.norms;
    dotScanner().scan(this.codes, this.stride, this.count, query, (first, dots, queryNorm) => {
      for (let i = 0; i < dots.length; i++) {
        const norm = norms[first + i]!;
        if (norm === 0) continue;
        const score = dots[i]! / (norm * queryNorm);
        // Most rows fall short of the heap's least: only the others are put to the filters.
        if (best.admits(score) && accept(first + i)) best.offer(first + i, score);
      }
    });
    return best.sorted();
  }
}

/** int8-dots.wat assembled: `dots(query, codes, stride, rows, out)`, each row's int8 codes times an int16 query, in SIMD. */
export const DOTS_WASM =
  'AGFzbQEAAAABCQFgBX9/f39/AAIPAQNlbnYGbWVtb3J5AgABAwIBAAcIAQRkb3RzAAAKtAEBsQECAn8CeyAEIANBAnRqIQUCQANAIAQgBU8NAf0MAAAAAAAAAAAAAAAAAAAAACEHQQAhBgNAIAEgBmr9AAQAIQggByAI/YcBIAAgBkEBdGr9AAQA/boB/a4BIQcgByAI/YgBIAAgBkEBdGr9AAQQ/boB/a4BIQcgBkEQaiIGIAJJDQALIAQgB/0bACAH/RsBaiAH/RsCIAf9GwNqajYCACABIAJqIQEgBEEEaiEEDAALCws=';
/** Codes the scan reads per step of the SIMD loop: a row is padded to a multiple of it. */
const SIMD_STEP = 16;
/** Codes copied into the scanner's memory at a time: a block that stays in the CPU's cache while it is scanned. */
const BLOCK_BYTES = 1 << 20;
const PAGE = 65_536;
/** The part of the WebAssembly API used here: the project compiles without the DOM library, which declares it. */
declare const WebAssembly: {
  Memory: new (descriptor: { initial: number }) => { readonly buffer: ArrayBuffer; grow(pages: number): number };
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { readonly exports: Record<string, unknown> };
};

/**
 * The dot products of rows of int8 codes with a query, by the WebAssembly SIMD loop of int8-dots.wat: eight codes times
 * eight int16 query components an instruction, where JavaScript multiplies one pair at a time (about five times
 * faster for 100k rows of 512 codes, copies included). One instance serves every matrix: a block of rows is copied
 * into its memory (laid out as the query, the block's codes, their dot products) and scanned there, so the memory
 * stays the size of one block, never of a matrix, and the matrices stay ordinary typed arrays that the heap frees.
 */
class DotScanner {
  private readonly memory = new WebAssembly.Memory({ initial: 1 });
  private readonly dots: (query: number, codes: number, stride: number, rows: number, out: number) => void;

  constructor() {
    const module = new WebAssembly.Module(Buffer.from(DOTS_WASM, 'base64'));
    this.dots = new WebAssembly.Instance(module, { env: { memory: this.memory } }).exports.dots as DotScanner['dots'];
  }

  /**
   * Calls `block` with each block of the first `rows` rows of `codes` (`stride` codes a row): its first row, the rows'
   * dot products with `query` (as int16 components, scaled; valid until `block` returns) and the scaled query's norm.
   * Nothing for a zero query.
   */
  scan(codes: Int8Array, stride: number, rows: number, query: ArrayLike<number>, block: (first: number, dots: Int32Array, queryNorm: number) => void): void {
    const perBlock = Math.max(1, Math.floor(BLOCK_BYTES / stride));
    const codesAt = 2 * stride;
    const out = codesAt + perBlock * stride;
    const pages = Math.ceil((out + 4 * perBlock) / PAGE) - this.memory.buffer.byteLength / PAGE;
    if (pages > 0) this.memory.grow(pages);
    const queryNorm = this.setQuery(query, stride);
    if (queryNorm === 0) return;
    const copied = new Int8Array(this.memory.buffer, codesAt, perBlock * stride);
    for (let first = 0; first < rows; first += perBlock) {
      const n = Math.min(perBlock, rows - first);
      copied.set(codes.subarray(first * stride, (first + n) * stride));
      this.dots(0, codesAt, stride, n, out);
      block(first, new Int32Array(this.memory.buffer, out, n), queryNorm);
    }
  }

  /**
   * Writes the query as `stride` int16 components (zeros past its length), the largest as large as keeps a row's sum
   * within int32 (32,767 up to 512 dimensions), and returns their norm; 0 for a zero query.
   */
  private setQuery(query: ArrayLike<number>, stride: number): number {
    let max = 0;
    for (let i = 0; i < query.length; i++) max = Math.max(max, Math.abs(query[i]!));
    if (max === 0 || !Number.isFinite(max)) return 0;
    const scale = Math.min(32_767, Math.floor((2 ** 31 - 1) / (127 * stride))) / max;
    const components = new Int16Array(this.memory.buffer, 0, stride).fill(0);
    let norm = 0;
    for (let i = 0; i < query.length; i++) {
      const c = Math.round(query[i]! * scale);
      components[i] = c;
      norm += c * c;
    }
    return Math.sqrt(norm);
  }
}

let scanner: DotScanner | undefined;
const dotScanner = (): DotScanner => (scanner ??= new DotScanner());

/** The `size` highest-scored rows seen, as a min-heap: most rows are turned away by one comparison with the root. */
class BoundedHeap {
  private readonly rows: number[] = [];
  private readonly scores: number[] = [];

  constructor(private readonly size: number) {}

  /** Whether a row of this score would be kept (the heap is not full, or it beats the least kept). */
  admits(score: number): boolean {
    return this.rows.length < this.size || score > this.scores[0]!;
  }

  offer(row: number, score: number): void {
    if (this.size <= 0) return;
    if (this.rows.length < this.size) {
      this.rows.push(row);
      this.scores.push(score);
      this.up(this.rows.length - 1);
    } else if (score > this.scores[0]!) {
      this.rows[0] = row;
      this.scores[0] = score;
      this.down(0);
    }
  }

  /** Highest score first. */
  sorted(): number[] {
    return this.rows
      .map((row, i) => ({ row, score: this.scores[i]! }))
      .sort((a, b) => b.score - a.score)
      .map((e) => e.row);
  }

  private swap(i: number, j: number): void {
    [this.rows[i], this.rows[j]] = [this.rows[j]!, this.rows[i]!];
    [this.scores[i], this.scores[j]] = [this.scores[j]!, this.scores[i]!];
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.scores[parent]! <= this.scores[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < this.rows.length && this.scores[left]! < this.scores[least]!) least = left;
      if (right < this.rows.length && this.scores[right]! < this.scores[least]!) least = right;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
