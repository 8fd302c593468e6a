import { describe, expect, it } from 'vitest';
import { Int8Matrix, quantise, rerankPool } from '../../../../shared/adapters/postgres/compact-vectors.js';
import { rng } from '../../../support/random.js';
import { cosine, rerank } from '../../../support/vectors.js';

const DIMS = 512;

/** Deterministic vectors: a Gaussian-ish component (sum of uniforms) per dimension, with a shared bias as text vectors have. */
function vectors(count: number, seed: number): Float32Array[] {
  const random = rng(seed);
  const bias = Float32Array.from({ length: DIMS }, () => (random() - 0.5) * 0.5);
  return Array.from({ length: count }, () => Float32Array.from({ length: DIMS }, (_, i) => random() + random() + random() - 1.5 + bias[i]!));
}

/** The exact top `k` rows by cosine, best first. */
const exactTop = (rows: Float32Array[], q: Float32Array, k: number) =>
  rows
    .map((v, row) => ({ row, score: cosine(v, q) }))
    .sort((a, b) => b.score - a.score)
    .slice(0, k)
    .map((e) => e.row);

function matrixOf(rows: Float32Array[]): Int8Matrix {
  const matrix = new Int8Matrix(DIMS);
  for (const v of rows) matrix.add(v);
  return matrix;
}

describe('compact vectors (int8 codes, one scale per vector)', () => {
  it('given a vector, when quantised, then its largest component is ±127 and each code is within half a step', () => {
    const v = Float32Array.from([0.5, -1, 0.25, 0, 0.126]);
    const codes = new Int8Array(5);
    const norm = quantise(v, codes, 0);
    expect([...codes]).toEqual([64, -127, 32, 0, 16]);
    expect(norm).toBeCloseTo(Math.hypot(64, 127, 32, 16), 9);
    // A zero vector has norm 0: never ranked.
    expect(quantise([0, 0, 0], new Int8Array(3), 0)).toBe(0);
  });

  it('given 5,000 random vectors, when ranked by the codes, then recall@100 against exact cosine is at least 0.98', () => {
    const rows = vectors(5_000, 1);
    const matrix = matrixOf(rows);
    expect(matrix.byteLength).toBeLessThanOrEqual(5_000 * 1.5 * (DIMS + 4));
    const queries = vectors(20, 2);
    let found = 0;
    for (const q of queries) {
      const exact = new Set(exactTop(rows, q, 100));
      found += matrix.nearest(q, 100, () => true).filter((row) => exact.has(row)).length;
    }
    expect(found / (100 * queries.length)).toBeGreaterThanOrEqual(0.98);
  });

  it('given the candidates of the codes, when re-ranked with full-precision vectors, then the top 100 is the exact ranking', () => {
    const rows = vectors(5_000, 3);
    const matrix = matrixOf(rows);
    for (const q of vectors(10, 4)) {
      // The pool the snapshots hand to PostgreSQL, which orders it by exact cosine (`<=>`) and keeps the first 100.
      const candidates = matrix.nearest(q, rerankPool(100), () => true);
      expect(candidates).toHaveLength(125);
      expect(rerank(candidates, (row) => rows[row]!, q, 100)).toEqual(exactTop(rows, q, 100));
    }
  });

  it('never ranks a row of another size or a zero vector, and ranks only the rows let through', () => {
    const matrix = new Int8Matrix(3);
    matrix.add([1, 0, 0]);
    matrix.add([1, 0]); // another model's size
    matrix.add([0, 0, 0]);
    matrix.add([0.9, 0.1, 0]);
    expect(matrix.nearest([1, 0, 0], 10, () => true)).toEqual([0, 3]);
    expect(matrix.nearest([1, 0, 0], 10, (row) => row !== 0)).toEqual([3]);
    expect(matrix.ranked(1)).toBe(false);
  });
});
