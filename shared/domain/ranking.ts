/** The usual RRF constant (Cormack et al., 2009): it damps the lead of the very first ranks. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion (Cormack et al., 2009): score = Σ weight / (k + rank), rank starting at 1; an item is keyed
 * by `key`, and keeps the first instance seen. A list may set its own `k` (a smaller one falls faster with rank).
 * Best first; equal scores keep the order in which items were first seen.
 */
export function reciprocalRankFusion<T>(lists: readonly { items: readonly T[]; weight?: number; k?: number }[], key: (item: T) => string, k = RRF_K): { item: T; score: number }[] {
  const fused = new Map<string, { item: T; score: number }>();
  for (const { items, weight = 1, k: listK = k } of lists) {
    items.forEach((item, index) => {
      const id = key(item);
      const entry = fused.get(id) ?? { item, score: 0 };
      entry.score += weight / (listK + index + 1);
      fused.set(id, entry);
    });
  }
  return [...fused.values()].sort((a, b) => b.score - a.score);
}

/** Okapi BM25 parameters (Robertson & Zaragoza), the usual defaults: term-frequency saturation k1 and length normalisation b. */
export const BM25 = { k1: 1.2, b: 0.75 } as const;

/** The unit vector along the sum of `vectors` (of unit vectors, their mean direction); the sum itself if it is zero. */
export function meanDirection(vectors: readonly ArrayLike<number>[]): number[] {
  const sum = new Array<number>(vectors[0]?.length ?? 0).fill(0);
  for (const v of vectors) for (let i = 0; i < sum.length; i++) sum[i] = sum[i]! + v[i]!;
  const norm = Math.hypot(...sum);
  return norm > 0 ? sum.map((x) => x / norm) : sum;
}
