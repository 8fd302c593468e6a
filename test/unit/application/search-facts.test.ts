import { describe, expect, it } from 'vitest';
import type { Deps } from '../../../shared/application/ports.js';
import type { SearchIndex, SearchQuery } from '../../../shared/application/search-ports.js';
import { searchFacts } from '../../../shared/application/search-facts.js';
import { DEFAULT_RANKING } from '../../../shared/domain/fact-ranking.js';

const MODEL = 'test-model';

describe('fact search', () => {
  it("runs the full-text lists while the query is embedded (the insights' with their vector list), and the vector lists with its vector, all of one search", async () => {
    const calls: string[] = [];
    const searches = new Set<object | undefined>();
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
      searches.add(query.search);
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
    const insights = { search: async (query: SearchQuery, rankings: string[]) => Promise.all(rankings.map((r) => list('insights')(query, r))) } as unknown as Deps['insights'];
    const directory = { searchSummaries: list('summaries') } as unknown as Deps['directory'];
    const searching = searchFacts(
      { search, embedder, insights, directory, memory: { kTurnBuffer: 10, nActiveTurns: 10, numRecentSessions: 3, topKFacts: 5 }, clock: { now: () => new Date('2026-01-01T00:00:00Z') } },
      'u',
      { query: 'painting at the lake', mode: 'search', sources: ['turns', 'interactions', 'insights', 'sessionSummaries'] },
    );
    await new Promise((resolve) => setImmediate(resolve));
    // Before the vector: the embedding asked for, and the full-text lists under way but the insights' (which go with
    // the insights' vector list, in one call).
    expect(calls.sort()).toEqual(['embed 1', 'interactions fulltext', 'summaries fulltext', 'turns fulltext']);
    embedded([[1, 0]]);
    expect(await searching).toMatchObject({ facts: [] });
    expect(calls.slice(4).sort()).toEqual([
      'insights fulltext with the vector',
      'insights vector with the vector',
      'interactions summaryVector with the vector',
      'interactions vector with the vector',
      'summaries vector with the vector',
      'turns vector with the vector',
    ]);
    // Every list carries the one search it belongs to (an index may bring its copy of the rows up to date once a search).
    expect(searches.size).toBe(1);
    expect([...searches][0]).toBeTypeOf('object');
  });

  it('embeds the query only for sources ranked by vector, and a failed embedding fails only a search that awaits it', async () => {
    let embeds = 0;
    const embedder = {
      model: MODEL,
      dimensions: 2,
      embed: async () => {
        embeds++;
        throw new Error('the encoder failed');
      },
    };
    const search: SearchIndex = {
      indexTurns: async () => undefined,
      turnVectors: async () => new Map(),
      speakers: async () => [],
      turns: async () => [],
      interactions: async () => [],
      show: async (_userId, hits) => ({ turns: [...hits.turns], interactions: [...hits.interactions] }),
    };
    const deps = { search, embedder, memory: { kTurnBuffer: 10, nActiveTurns: 10, numRecentSessions: 3, topKFacts: 5 }, clock: { now: () => new Date('2026-01-01T00:00:00Z') } };
    // Artifacts have no vector list: nothing embedded.
    expect(await searchFacts(deps, 'u', { query: 'zeppelin', mode: 'search', sources: ['artifacts'] })).toMatchObject({ facts: [] });
    expect(embeds).toBe(0);
    // Insights without their store: the embedding is asked for and awaited by no list; its failure is not left unhandled.
    expect(await searchFacts(deps, 'u', { query: 'zeppelin', mode: 'search', sources: ['insights'] })).toMatchObject({ facts: [] });
    expect(embeds).toBe(1);
    await expect(searchFacts(deps, 'u', { query: 'zeppelin', mode: 'search', sources: ['turns'] })).rejects.toThrow('the encoder failed');
  });

  it("by default matches the query without the participants' names and embeds it with the statement that answers it; a policy can turn either off", async () => {
    const embedded: string[][] = [];
    const matched: string[] = [];
    const embedder = {
      model: MODEL,
      dimensions: 2,
      embed: async (texts: readonly string[]) => {
        embedded.push([...texts]);
        return texts.map(() => [1, 0]);
      },
    };
    const search: SearchIndex = {
      indexTurns: async () => undefined,
      turnVectors: async () => new Map(),
      speakers: async () => ['Melanie', 'Caroline'],
      turns: async (query) => (matched.push(query.text), []),
      interactions: async () => [],
      show: async (_userId, hits) => ({ turns: [...hits.turns], interactions: [...hits.interactions] }),
    };
    const deps = { search, embedder, memory: { kTurnBuffer: 10, nActiveTurns: 10, numRecentSessions: 3, topKFacts: 5 }, clock: { now: () => new Date('2026-01-01T00:00:00Z') } };
    const body = { query: 'What activities does Melanie partake in?', mode: 'search' as const, sources: ['turns' as const], retrievers: ['fulltext' as const, 'vector' as const] };

    await searchFacts(deps, 'u', body);
    await searchFacts(deps, 'u', body, undefined, { ...DEFAULT_RANKING, answerStatement: false, namesOutOfQuery: false });

    expect(embedded).toEqual([['What activities does partake in?', 'I partake in activities'], ['What activities does Melanie partake in?']]);
    // Each search's two turn lists, full text and vector.
    expect(matched).toEqual(['What activities does partake in?', 'What activities does partake in?', 'What activities does Melanie partake in?', 'What activities does Melanie partake in?']);
  });
});
