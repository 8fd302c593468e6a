/** Exact cosine and the exact re-rank the snapshots ask of PostgreSQL (`ORDER BY vector <=> query`), for tests and benches. */
import { cosine } from '../../shared/domain/reflection.js';

export { cosine };

/** The `limit` candidates nearest the query by exact cosine, best first (ties keep the candidates' order). */
export function rerank<T>(candidates: readonly T[], vectorOf: (candidate: T) => ArrayLike<number>, query: ArrayLike<number>, limit: number): T[] {
  return candidates
    .map((candidate, order) => ({ candidate, order, score: cosine(vectorOf(candidate), query) }))
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, limit)
    .map((s) => s.candidate);
}
