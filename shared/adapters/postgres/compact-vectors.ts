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
    const code = Math.round(values[i]! * scale);
    codes[offset + i] = code;
    norm += code * code;
  }
  return Math.sqrt(norm);
}

/**
 * Rows of int8 codes, `dims` columns, row-major in one contiguous array (a scan reads memory in order), with each row's
 * codes' norm. A row of another size, or a zero vector, has norm 0 and is never ranked.
 */
export class Int8Matrix {
  private codes = new Int8Array(0);
  private norms = new Float32Array(0);
  private count = 0;

  constructor(readonly dims: number) {}

  /** Bytes held: the codes and the norms, including the room reserved for rows not yet added. */
  get byteLength(): number {
    return this.codes.byteLength + this.norms.byteLength;
  }

  /** Makes room for `rows` rows in all, so a load of many rows grows the arrays once. */
  reserve(rows: number): void {
    if (rows <= this.norms.length) return;
    const codes = new Int8Array(rows * this.dims);
    codes.set(this.codes.subarray(0, this.count * this.dims));
    const norms = new Float32Array(rows);
    norms.set(this.norms.subarray(0, this.count));
    this.codes = codes;
    this.norms = norms;
  }

  /** Adds one row and returns its index. */
  add(values: ArrayLike<number>): number {
    const row = this.count;
    if (row >= this.norms.length) this.reserve(Math.max(64, Math.ceil(row * 1.5)));
    this.norms[row] = values.length === this.dims ? quantise(values, this.codes, row * this.dims) : 0;
    this.count++;
    return row;
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
    const q = Float32Array.from(query);
    let qNorm = 0;
    for (let i = 0; i < q.length; i++) qNorm += q[i]! * q[i]!;
    qNorm = Math.sqrt(qNorm) || 1;
    const best = new BoundedHeap(k);
    for (let row = 0; row < this.count; row++) {
      const norm = this.norms[row]!;
      if (norm === 0 || !accept(row)) continue;
      best.offer(row, this.dot(row, q) / (norm * qNorm));
    }
    return best.sorted();
  }

  /** Row `row`'s codes times `q`; four sums, which the JIT runs side by side. */
  private dot(row: number, q: Float32Array): number {
    const codes = this.codes;
    const dims = this.dims;
    const offset = row * dims;
    let s0 = 0;
    let s1 = 0;
    let s2 = 0;
    let s3 = 0;
    let i = 0;
    for (; i + 3 < dims; i += 4) {
      s0 += codes[offset + i]! * q[i]!;
      s1 += codes[offset + i + 1]! * q[i + 1]!;
      s2 += codes[offset + i + 2]! * q[i + 2]!;
      s3 += codes[offset + i + 3]! * q[i + 3]!;
    }
    for (; i < dims; i++) s0 += codes[offset + i]! * q[i]!;
    return s0 + s1 + s2 + s3;
  }
}

/** The `size` highest-scored rows seen, as a min-heap: most rows are turned away by one comparison with the root. */
class BoundedHeap {
  private readonly rows: number[] = [];
  private readonly scores: number[] = [];

  constructor(private readonly size: number) {}

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
