import { createHash } from 'node:crypto';

/** A short stable hash of the parts, for ids derived from content. */
export function contentHash(...parts: readonly string[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 20);
}

/**
 * The id of an insight: its source (session, or the sorted sessions of an aggregate), category and normalised text.
 * Re-running a reflection after a crash rewrites the same documents instead of adding copies.
 */
export function insightId(userId: string, sourceSessionIds: readonly string[], category: string, text: string): string {
  const normalised = text.toLowerCase().replace(/\s+/g, ' ').trim();
  return `ins-${contentHash(userId, [...sourceSessionIds].sort().join(','), category, normalised)}`;
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length || a.length === 0) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

export interface MergeCandidate {
  id: string;
  category: string;
  createdAt: string;
  confidence: number;
  vector: readonly number[];
  embeddingModel: string;
}

/**
 * Near-duplicates: within one category and one embedding model, an insight whose similarity to an earlier-kept one is
 * at least `threshold` is merged into it. The newest (then most confident) insight of a group is kept, so the wording
 * that survives is the latest. Returns `merged id → kept id`. Order-independent: candidates are sorted first.
 */
export function nearDuplicates(candidates: readonly MergeCandidate[], threshold: number): Map<string, string> {
  const ordered = [...candidates].sort((a, b) => b.createdAt.localeCompare(a.createdAt) || b.confidence - a.confidence || a.id.localeCompare(b.id));
  const kept: MergeCandidate[] = [];
  const merged = new Map<string, string>();
  for (const c of ordered) {
    const into = kept.find((k) => k.category === c.category && k.embeddingModel === c.embeddingModel && cosine(k.vector, c.vector) >= threshold);
    if (into) merged.set(c.id, into.id);
    else kept.push(c);
  }
  return merged;
}
