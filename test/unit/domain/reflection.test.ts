import { describe, expect, it } from 'vitest';
import { cosine, insightId, nearDuplicates, type MergeCandidate } from '../../../shared/domain/reflection.js';

const candidate = (id: string, vector: number[], overrides: Partial<MergeCandidate> = {}): MergeCandidate => ({
  id,
  category: 'financial_goals',
  createdAt: '2026-01-05T10:00:00.000Z',
  confidence: 0.8,
  vector,
  embeddingModel: 'm',
  ...overrides,
});

describe('insight ids', () => {
  it('given the same source, category and text (up to case and spacing), when derived twice, then they are equal', () => {
    expect(insightId('u', ['s1'], 'concern', 'Worried  about Costs')).toBe(insightId('u', ['s1'], 'concern', 'worried about costs'));
    expect(insightId('u', ['s2', 's1'], 'concern', 'x')).toBe(insightId('u', ['s1', 's2'], 'concern', 'x'));
  });

  it('given a different session, category or user, then the id differs', () => {
    const base = insightId('u', ['s1'], 'concern', 'x');
    expect(new Set([base, insightId('u', ['s2'], 'concern', 'x'), insightId('u', ['s1'], 'preference', 'x'), insightId('v', ['s1'], 'concern', 'x')]).size).toBe(4);
  });
});

describe('near-duplicate insights', () => {
  it('given two similar insights of one category, when merged, then the newer one is kept', () => {
    const merged = nearDuplicates([candidate('old', [1, 0.1]), candidate('new', [1, 0.12], { createdAt: '2026-01-06T10:00:00.000Z' })], 0.95);
    expect([...merged]).toEqual([['old', 'new']]);
  });

  it('given similar vectors in different categories or models, or below the threshold, then nothing is merged', () => {
    expect(nearDuplicates([candidate('a', [1, 0]), candidate('b', [1, 0], { category: 'concern' })], 0.9).size).toBe(0);
    expect(nearDuplicates([candidate('a', [1, 0]), candidate('b', [1, 0], { embeddingModel: 'other' })], 0.9).size).toBe(0);
    expect(nearDuplicates([candidate('a', [1, 0]), candidate('b', [0.6, 0.8])], 0.9).size).toBe(0);
  });

  it('is independent of the input order', () => {
    const items = [candidate('a', [1, 0]), candidate('b', [0.99, 0.05], { confidence: 0.9 }), candidate('c', [0, 1])];
    expect(nearDuplicates(items, 0.95)).toEqual(nearDuplicates([...items].reverse(), 0.95));
    expect([...nearDuplicates(items, 0.95)]).toEqual([['a', 'b']]);
  });

  it('cosine of orthogonal, equal and empty vectors', () => {
    expect(cosine([1, 0], [0, 1])).toBe(0);
    expect(cosine([2, 0], [1, 0])).toBeCloseTo(1);
    expect(cosine([], [])).toBe(0);
  });
});
