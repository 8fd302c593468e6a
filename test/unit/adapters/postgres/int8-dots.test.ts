import { readFileSync } from 'node:fs';
import wabt from 'wabt';
import { describe, expect, it } from 'vitest';
import { DOTS_WASM, Int8Matrix } from '../../../../shared/adapters/postgres/compact-vectors.js';
import { rng } from '../../../support/random.js';
import { cosine } from '../../../support/vectors.js';

describe('the SIMD scan of compact vectors (int8-dots.wat)', () => {
  it('the bytes the matrices instantiate are int8-dots.wat assembled', async () => {
    const source = readFileSync(new URL('../../../../shared/adapters/postgres/int8-dots.wat', import.meta.url), 'utf8');
    const module = (await wabt()).parseWat('int8-dots.wat', source);
    try {
      expect(Buffer.from(module.toBinary({}).buffer).toString('base64')).toBe(DOTS_WASM);
    } finally {
      module.destroy();
    }
  });

  it.each([3, 20, 1536])('ranks %i-dimension rows (padded to the SIMD step) by the cosine of their codes', (dims) => {
    const random = rng(dims);
    const rows = Array.from({ length: 3_000 }, () => Array.from({ length: dims }, () => random() - 0.5));
    const matrix = new Int8Matrix(dims);
    for (const row of rows) matrix.add(row);
    const query = Array.from({ length: dims }, () => random() - 0.5);
    const ranked = matrix.nearest(query, 50, () => true);
    // The codes' cosine is within a step of the exact one: the best 50 by the codes are the exact best 50 but for
    // near-ties at the edge.
    const exact = rows.map((row, i) => ({ i, score: cosine(Float32Array.from(row), Float32Array.from(query)) })).sort((a, b) => b.score - a.score);
    expect(ranked).toHaveLength(50);
    expect(ranked[0]).toBe(exact[0]!.i);
    const exactTop = new Set(exact.slice(0, 55).map((e) => e.i));
    expect(ranked.filter((row) => exactTop.has(row)).length).toBeGreaterThanOrEqual(48);
  });

  it('keeps the largest sums within int32: every code and query component at its extreme scores a cosine of 1', () => {
    for (const dims of [512, 4096]) {
      const matrix = new Int8Matrix(dims);
      matrix.add(Array.from({ length: dims }, () => -1));
      matrix.add(Array.from({ length: dims }, () => 1));
      // The row equal to the query first (cosine 1); its opposite (cosine −1) last.
      expect(matrix.nearest(Array.from({ length: dims }, () => 1), 2, () => true)).toEqual([1, 0]);
    }
  });
});
