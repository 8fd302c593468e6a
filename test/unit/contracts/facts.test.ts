import { describe, expect, it } from 'vitest';
import { Fact, FactSearchBody, FactSource, RETRIEVE_USER_FACTS_TOOL } from '../../../shared/contracts/facts.js';

describe('RETRIEVE_USER_FACTS_TOOL', () => {
  it('offers only arguments the search body accepts, and a call with them is a valid search body', () => {
    const properties = Object.keys(RETRIEVE_USER_FACTS_TOOL.function.parameters.properties);
    expect(properties.every((p) => p in FactSearchBody.shape)).toBe(true);
    expect(FactSearchBody.safeParse({ query: 'Where does the user live?', topK: 3, mode: 'agent' }).success).toBe(true);
  });
});

describe('FactSource and Fact', () => {
  const base = { score: 0.8, turnIds: [], timestamp: '2026-01-05T10:00:00.000Z', tokens: 12 };

  it('offers insights and session summaries besides turns, interactions and artifacts', () => {
    expect(FactSource.options).toEqual(['turns', 'interactions', 'artifacts', 'insights', 'sessionSummaries']);
    expect(FactSearchBody.parse({ query: 'q', sources: ['insights', 'sessionSummaries'] }).sources).toEqual(['insights', 'sessionSummaries']);
    expect(FactSearchBody.safeParse({ query: 'q', sources: ['summaries'] }).success).toBe(false);
    expect(FactSearchBody.safeParse({ query: 'q', sources: [] }).success).toBe(false);
    // No sources: the use case searches all of them.
    expect(FactSearchBody.parse({ query: 'q' }).sources).toBeUndefined();
  });

  it('accepts an insight fact with its session seq range and no turn ids, and an aggregate insight with its sessions', () => {
    expect(Fact.safeParse({ ...base, id: 'insight:ins-1', source: 'insights', text: 'Plans to retire at 60.', sessionId: 's1', seqRange: [1, 12] }).success).toBe(true);
    const aggregate = { ...base, id: 'insight:ins-2', source: 'insights', text: 'Asks about fees.', sessionId: 's1', sessionIds: ['s1', 's2'] };
    expect(Fact.parse(aggregate)).toEqual(aggregate);
    expect(Fact.safeParse({ ...aggregate, sessionIds: ['not an id!'] }).success).toBe(false);
  });

  it('accepts a session summary fact with the session seq range', () => {
    expect(Fact.safeParse({ ...base, id: 'summary:s1', source: 'sessionSummaries', text: 'Talked about retirement.', sessionId: 's1', seqRange: [1, 12] }).success).toBe(true);
    expect(Fact.safeParse({ ...base, id: 'summary:s1', source: 'summaries', text: 'x' }).success).toBe(false);
  });
});
