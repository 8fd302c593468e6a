import { describe, expect, it } from 'vitest';
import type { SearchIndex, SearchQuery } from '../../../shared/application/search-ports.js';
import { searchFacts } from '../../../shared/application/search-facts.js';

const MODEL = 'test-model';

describe('fact search', () => {
  it('runs the full-text lists while the query is embedded, and the vector lists with its vector', async () => {
    const calls: string[] = [];
    let embedded!: (vectors: number[][]) => void;
    const embedder = {
      model: MODEL,
      dimensions: 2,
      embed: (texts: readonly string[]) => {
        calls.push(`embed ${texts.length}`);
        return new Promise<number[][]>((resolve) => (embedded = resolve));
      },
    };
    const list = (kind: string) => async (query: SearchQuery, ranking: string) => {
      calls.push(`${kind} ${ranking}${query.vector ? ' with the vector' : ''}`);
      return [];
    };
    const search: SearchIndex = {
      indexTurns: async () => undefined,
      turnVectors: async () => new Map(),
      speakers: async () => [],
      turns: list('turns'),
      interactions: list('interactions'),
      show: async (_userId, hits) => ({ turns: [...hits.turns], interactions: [...hits.interactions] }),
    };
    const searching = searchFacts(
      { search, embedder, memory: { kTurnBuffer: 10, nActiveTurns: 10, numRecentSessions: 3, topKFacts: 5 }, clock: { now: () => new Date('2026-01-01T00:00:00Z') } },
      'u',
      { query: 'painting at the lake', mode: 'search', sources: ['turns', 'interactions'] },
    );
    await new Promise((resolve) => setImmediate(resolve));
    // Before the vector: the embedding asked for, and both full-text lists under way.
    expect(calls.sort()).toEqual(['embed 1', 'interactions fulltext', 'turns fulltext']);
    embedded([[1, 0]]);
    expect(await searching).toMatchObject({ facts: [] });
    expect(calls.slice(3).sort()).toEqual(['interactions summaryVector with the vector', 'interactions vector with the vector', 'turns vector with the vector']);
  });
});
