import { describe, expect, it } from 'vitest';
import { usedFacts } from '../../../shared/application/retrieval-agent.js';
import type { Fact } from '../../../shared/contracts/facts.js';

const fact = (id: string, source: Fact['source'] = 'turns'): Fact => ({ id, source, text: id, score: 1, turnIds: [], timestamp: '2026-01-05T10:00:00.000Z', tokens: 1 });

describe('usedFacts', () => {
  it('given facts the answer cites, then they come first in citation order, then the others one call at a time', () => {
    const interactions = [fact('turn:s1:1'), fact('turn:s1:2'), fact('turn:s1:3')];
    const insights = [fact('insight:a', 'insights'), fact('insight:b', 'insights')];
    const summaries = [fact('summary:s1', 'sessionSummaries')];
    const answer = '- Retires at 60 [insight:b]\n- Said so in March [turn:s1:3] and again [insight:b]';
    expect(usedFacts([interactions, insights, summaries], answer).map((f) => f.id)).toEqual(['insight:b', 'turn:s1:3', 'turn:s1:1', 'insight:a', 'summary:s1', 'turn:s1:2']);
  });

  it('given no citations, then one tool’s results do not crowd out the others, and a fact found twice appears once', () => {
    const first = [fact('turn:s1:1'), fact('turn:s1:2'), fact('turn:s1:3')];
    const second = [fact('insight:a', 'insights')];
    const again = [fact('turn:s1:2'), fact('summary:s1', 'sessionSummaries')];
    expect(usedFacts([first, second, again], 'No stored facts answer this. [unknown:id]').map((f) => f.id)).toEqual(['turn:s1:1', 'insight:a', 'turn:s1:2', 'summary:s1', 'turn:s1:3']);
    expect(usedFacts([], 'nothing')).toEqual([]);
  });
});
