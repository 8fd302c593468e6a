import { describe, expect, it } from 'vitest';
import { reciprocalRankFusion } from '../../../shared/domain/ranking.js';

describe('reciprocalRankFusion', () => {
  it('given an item ranked well in two lists, puts it above items strong in only one', () => {
    const fused = reciprocalRankFusion([{ items: ['a', 'b', 'c'] }, { items: ['c', 'd', 'b'] }], (x) => x);
    expect(fused.map((f) => f.item)).toEqual(['c', 'b', 'a', 'd']);
    expect(fused[0]!.score).toBeCloseTo(1 / 63 + 1 / 61);
  });

  it('given weights, lets a trusted list dominate', () => {
    const fused = reciprocalRankFusion([{ items: ['a', 'b'], weight: 0.1 }, { items: ['b', 'a'], weight: 1 }], (x) => x);
    expect(fused.map((f) => f.item)).toEqual(['b', 'a']);
  });

  it("given a list with its own k, scores that list's ranks with it and the others with the default", () => {
    const fused = reciprocalRankFusion([{ items: ['a', 'b'], k: 10 }, { items: ['c', 'd'] }], (x) => x);
    expect(Object.fromEntries(fused.map((f) => [f.item, f.score]))).toEqual({ a: 1 / 11, b: 1 / 12, c: 1 / 61, d: 1 / 62 });
  });
});
