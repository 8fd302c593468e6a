/** Exact cosine and the exact re-rank the snapshots ask of PostgreSQL (`ORDER BY vector <=> query`), for tests and benches. */

/** Cosine similarity of two full-precision vectors (0 when either is zero or their sizes differ). */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

/** The `limit` candidates nearest the query by exact cosine, best first (ties keep the candidates' order). */
export function rerank<T>(candidates: readonly T[], vectorOf: (candidate: T) => ArrayLike<number>, query: ArrayLike<number>, limit: number): T[] {
  return candidates
    .map((candidate, order) => ({ candidate, order, score: cosine(vectorOf(candidate), query) }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((s) => s.candidate);
}
