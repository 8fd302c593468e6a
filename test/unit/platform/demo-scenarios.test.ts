import { describe, expect, it } from 'vitest';
import type { ContextResponse, Fact } from '../../../shared/client/index.js';
import { answeringFact, budgetConversation, compression, dialogue, type Recall } from '../../../shared/platform/demo/scenarios.js';

// The demo's checks decide pass or fail from the API's answers: here they are given answers that must fail them.

const turns = dialogue('s1', [
  ['My dog is called Biscuit.', 'Biscuit is a lovely name.'],
  ['We fly to Lisbon in May.', 'Enjoy Lisbon.'],
]);
const seqs = new Map(turns.map((t, i) => [t.turnId, i + 1]));
const recall: Recall = { query: "What is my dog's name?", needle: 'Biscuit', sessionId: 's1' };
const fact = (over: Partial<Fact>): Fact => ({ id: 'f', source: 'turns', text: 'user: My dog is called Biscuit.', score: 1, sessionId: 's1', turnIds: ['s1-u1'], timestamp: '2026-01-01T00:00:00.000Z', tokens: 8, ...over });

describe('answeringFact', () => {
  it('given a fact that says the needle and names a turn that said it, then it is found with its rank', () => {
    const found = answeringFact([fact({ id: 'other', text: 'user: We fly to Lisbon in May.', turnIds: ['s1-u2'] }), fact({})], recall, turns, (id) => seqs.get(id));
    expect(found).toMatchObject({ rank: 2, turnId: 's1-u1' });
  });

  it('given a session summary whose seq range covers the turn, then its provenance holds', () => {
    expect(answeringFact([fact({ source: 'sessionSummaries', text: 'Biscuit and Lisbon.', turnIds: [], seqRange: [1, 4] })], recall, turns, (id) => seqs.get(id))).toMatchObject({ rank: 1 });
  });

  it('given the needle with the wrong provenance (another session, a turn that did not say it, a range that misses it), then nothing is found', () => {
    const wrong = [
      fact({ sessionId: 's2' }),
      fact({ turnIds: ['s1-u2'] }),
      fact({ source: 'sessionSummaries', turnIds: [], seqRange: [3, 4] }),
      fact({ text: 'user: My dog.' }),
    ];
    expect(answeringFact(wrong, recall, turns, (id) => seqs.get(id))).toBeUndefined();
  });
});

describe('compression', () => {
  const conversation = budgetConversation('b', 6); // 12 turns, seqs 1-12
  const seqOf = new Map(conversation.map((t, i) => [t.turnId, i + 1]));
  const context = (coversThroughSeq: number, verbatimFrom: number): ContextResponse => ({
    userId: 'u',
    sessionId: 'b',
    text: '',
    tokens: 100,
    summaryCoversThroughSeq: coversThroughSeq,
    memoryRefs: [],
    sections: {
      profile: null,
      recentSessions: [],
      summary: coversThroughSeq > 0 ? 'summary' : '',
      turns: conversation.slice(verbatimFrom - 1).map((t) => ({ seq: seqOf.get(t.turnId)!, turnId: t.turnId, role: t.role, content: t.content, timestamp: '2026-01-01T00:00:00.000Z' })),
    },
  });

  it('given a summary through turn 10 and turns 8-12 verbatim, then 7 are summarised, 5 verbatim, none missing, the last verbatim', () => {
    expect(compression(context(10, 8), conversation, seqOf, 5)).toMatchObject({ covered: 10, summarised: 7, verbatim: 5, missing: [], lastVerbatim: true, contextTokens: 100 });
  });

  it('given a gap between the summary and the verbatim turns, then the turns in it are missing', () => {
    expect(compression(context(6, 9), conversation, seqOf, 3).missing).toEqual(['b-u4', 'b-a4']);
  });

  it('given the last turn left out of the verbatim turns, then the last turns are not verbatim and it is missing', () => {
    const full = context(10, 8);
    const cut = { ...full, sections: { ...full.sections, turns: full.sections.turns.slice(0, -1) } };
    expect(compression(cut, conversation, seqOf, 3)).toMatchObject({ lastVerbatim: false, missing: ['b-a6'] });
  });
});
