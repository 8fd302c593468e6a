import { describe, expect, it } from 'vitest';
import { FactSource } from '../../../shared/contracts/facts.js';
import {
  ASKING_TURN_FACTOR,
  asksQuestion,
  candidatePool,
  DEFAULT_RANKING,
  NAMED_PERIOD_BOOST,
  NAMED_SPEAKER_BOOST,
  NEXT_TURN_WEIGHT,
  packFacts,
  RANKING_WEIGHTS,
  rankFacts,
  SOURCE_WEIGHTS,
  TURN_FULLTEXT_RRF_K,
  TURN_VECTOR_WEIGHT,
  type FactCandidates,
  type FactDraft,
  type RankedFact,
  type TurnCandidate,
  type WindowCandidate,
} from '../../../shared/domain/fact-ranking.js';
import { RRF_K } from '../../../shared/domain/ranking.js';

const ALL = new Set(FactSource.options);
const rrf = (rank: number, weight = 1) => weight / (RRF_K + rank);
/** A turn's score at a rank of the turns' full-text list: RRF at TURN_FULLTEXT_RRF_K, its first rank worth rrf(1). */
const text = (rank: number) => (TURN_FULLTEXT_RRF_K + 1) / (RRF_K + 1) / (TURN_FULLTEXT_RRF_K + rank);
const at = (day: number) => new Date(Date.UTC(2024, 4, day)).toISOString();

function turn(sessionId: string, seq: number, speaker = 'user', day = 1): TurnCandidate {
  const fact: FactDraft = { id: `turn:${sessionId}:${seq}`, source: 'turns', text: `${speaker}: turn ${seq}`, sessionId, turnIds: [`t${seq}`], seqRange: [seq, seq], timestamp: at(day) };
  return { fact, sessionId, seq, speaker };
}

function window(sessionId: string, from: number, to: number, day = 1): WindowCandidate {
  const fact: FactDraft = { id: `${sessionId}-w${from}`, source: 'interactions', text: `turns ${from} to ${to}`, sessionId, turnIds: [], seqRange: [from, to], timestamp: at(day) };
  return { fact, sessionId, seqRange: [from, to] };
}

const fact = (id: string, source: FactSource, day = 1): FactDraft => ({ id, source, text: id, turnIds: [], timestamp: at(day) });

const nothing: FactCandidates = { turns: [], interactions: [], artifacts: [], insights: [], sessionSummaries: [] };
const scores = (ranked: RankedFact[]) => Object.fromEntries(ranked.map((r) => [r.fact.id, r.score]));
const ids = (ranked: { fact: FactDraft }[] | { id: string }[]) => ranked.map((r) => ('fact' in r ? r.fact.id : r.id));

describe('rankFacts', () => {
  it('given two rankings of turns, fuses them with full text weighted above vectors', () => {
    // Turns apart, so that none inherits from the next.
    const [a, b, c] = [turn('s', 1), turn('s', 3), turn('s', 5)];
    const candidates: FactCandidates = {
      ...nothing,
      turns: [
        { ranking: 'fulltext', items: [a, b] },
        { ranking: 'vector', items: [c, a] },
      ],
    };

    const ranked = rankFacts(candidates, ALL);

    expect(ids(ranked)).toEqual(['turn:s:1', 'turn:s:3', 'turn:s:5']);
    expect(ranked[0]!.score).toBeCloseTo(text(1) + rrf(2, TURN_VECTOR_WEIGHT), 12);
    expect(ranked[1]!.score).toBeCloseTo(text(2), 12);
    expect(ranked[2]!.score).toBeCloseTo(rrf(1, TURN_VECTOR_WEIGHT), 12);
  });

  it("given the turns' vectors and the windows', weighs the turns' list TURN_VECTOR_WEIGHT and the windows' RANKING_WEIGHTS.vector", () => {
    const candidates: FactCandidates = {
      ...nothing,
      turns: [{ ranking: 'vector', items: [turn('s', 1)] }],
      interactions: [{ ranking: 'vector', items: [window('s', 5, 6)] }],
    };

    const ranked = scores(rankFacts(candidates, ALL));

    expect(TURN_VECTOR_WEIGHT).toBeGreaterThan(RANKING_WEIGHTS.vector);
    expect(ranked['turn:s:1']).toBeCloseTo(rrf(1, TURN_VECTOR_WEIGHT), 12);
    expect(ranked['s-w5']).toBeCloseTo(rrf(1, RANKING_WEIGHTS.vector), 12);
    // The window's turns have no list of their own: they are not ranked, it lends to none.
    expect(ranked['turn:s:5']).toBeUndefined();
  });

  it("given a turn the vectors rank first and the full text misses, ranks it with the full text's tenth", () => {
    const [first, ...rest] = Array.from({ length: 12 }, (_, i) => turn('text', 2 * i + 1));
    const candidates: FactCandidates = {
      ...nothing,
      turns: [
        { ranking: 'fulltext', items: [first!, ...rest] },
        { ranking: 'vector', items: [turn('vector', 1)] },
      ],
    };

    const ranked = ids(rankFacts(candidates, ALL));

    // The vector's first rank scores as the full text's tenth (text:19): 0.7 / 61 = (21 / 61) / 30.
    expect(rrf(1, TURN_VECTOR_WEIGHT)).toBeCloseTo(text(10), 12);
    expect(ranked.indexOf('turn:vector:1')).toBeGreaterThan(ranked.indexOf('turn:text:17'));
    expect(ranked.indexOf('turn:vector:1')).toBeLessThan(ranked.indexOf('turn:text:21'));
  });

  it("given the turns' full text, lets its ranks fall faster than RRF_K's, its first rank unchanged", () => {
    // The full text ranks one turn 31st and the vectors rank it 30th; it ranks another second.
    const [second, deep] = [turn('s', 1), turn('s', 100)];
    const others = Array.from({ length: 28 }, (_, i) => turn('other', 2 * i + 1));
    const vectorOthers = Array.from({ length: 29 }, (_, i) => turn('vector', 2 * i + 1));
    const candidates: FactCandidates = {
      ...nothing,
      turns: [
        { ranking: 'fulltext', items: [turn('lead', 1), second, ...others, deep] },
        { ranking: 'vector', items: [...vectorOthers, deep] },
      ],
    };

    const ranked = scores(rankFacts(candidates, ALL));

    expect(TURN_FULLTEXT_RRF_K).toBeLessThan(RRF_K);
    expect(ranked['turn:lead:1']).toBeCloseTo(rrf(1), 12);
    expect(ranked['turn:s:100']).toBeCloseTo(text(31) + rrf(30, TURN_VECTOR_WEIGHT), 12);
    // At RRF_K the deep turn would lead: rrf(31) + the vector's 30th rank > rrf(2).
    expect(rrf(31) + rrf(30, TURN_VECTOR_WEIGHT)).toBeGreaterThan(rrf(2));
    expect(ranked['turn:s:1']!).toBeGreaterThan(ranked['turn:s:100']!);
  });

  it('given a window ranked by full text, fuses it at RRF_K: only the turns\' full text falls faster', () => {
    const candidates: FactCandidates = { ...nothing, interactions: [{ ranking: 'fulltext', items: [window('s', 1, 2), window('s', 3, 4)] }] };

    const ranked = scores(rankFacts(candidates, ALL));

    expect(ranked['s-w3']).toBeCloseTo(rrf(2), 12);
  });

  it("given a window over some turns, adds the window's fused score to each of them", () => {
    const candidates: FactCandidates = {
      ...nothing,
      turns: [{ ranking: 'fulltext', items: [turn('s', 1), turn('s', 5), turn('other', 5)] }],
      interactions: [{ ranking: 'summaryVector', items: [window('s', 4, 6)] }],
    };

    const ranked = scores(rankFacts(candidates, ALL));

    const windowScore = rrf(1, RANKING_WEIGHTS.summaryVector);
    expect(ranked['s-w4']).toBeCloseTo(windowScore, 12);
    expect(ranked['turn:s:5']).toBeCloseTo(text(2) + windowScore, 12);
    expect(ranked['turn:s:1']).toBeCloseTo(text(1), 12);
    expect(ranked['turn:other:5']).toBeCloseTo(text(3), 12);
  });

  it('given windows but only turns asked for, lends their scores to the turns and returns no window', () => {
    const candidates: FactCandidates = {
      ...nothing,
      turns: [{ ranking: 'fulltext', items: [turn('s', 1), turn('s', 9)] }],
      interactions: [{ ranking: 'fulltext', items: [window('s', 8, 10)] }],
    };

    const ranked = rankFacts(candidates, new Set(['turns'] as const));

    expect(ids(ranked)).toEqual(['turn:s:9', 'turn:s:1']);
  });

  it("given a turn whose next turn matches too, adds part of the next turn's fused score to it, within its session only", () => {
    const candidates: FactCandidates = {
      ...nothing,
      turns: [
        { ranking: 'fulltext', items: [turn('s', 4), turn('s', 5), turn('other', 3)] },
        { ranking: 'vector', items: [turn('s', 5)] },
      ],
    };

    const ranked = scores(rankFacts(candidates, ALL));

    const fifth = text(2) + rrf(1, TURN_VECTOR_WEIGHT);
    expect(ranked['turn:s:4']).toBeCloseTo(text(1) + NEXT_TURN_WEIGHT * fifth, 12);
    expect(ranked['turn:s:5']).toBeCloseTo(fifth, 12);
    expect(ranked['turn:other:3']).toBeCloseTo(text(3), 12);
  });

  it("given a query naming one speaker, scores that speaker's turns higher and no one else's", () => {
    const candidates: FactCandidates = { ...nothing, turns: [{ ranking: 'fulltext', items: [turn('s', 1, 'Caroline'), turn('s', 3, 'Melanie')] }] };

    const ranked = scores(rankFacts(candidates, ALL, { namedSpeaker: 'Melanie' }));

    expect(ranked['turn:s:3']).toBeCloseTo(text(2) * (1 + NAMED_SPEAKER_BOOST), 12);
    expect(ranked['turn:s:1']).toBeCloseTo(text(1), 12);
    expect(ranked['turn:s:3']!).toBeGreaterThan(ranked['turn:s:1']!);
  });

  it('given a turn that ends by asking a question, scores it ASKING_TURN_FACTOR of what it would, so one that tells comes first', () => {
    const asking = { ...turn('s', 1), asks: true };
    const candidates: FactCandidates = { ...nothing, turns: [{ ranking: 'fulltext', items: [asking, turn('s', 5)] }] };

    const ranked = rankFacts(candidates, ALL);

    expect(scores(ranked)['turn:s:1']).toBeCloseTo(text(1) * ASKING_TURN_FACTOR, 12);
    expect(scores(ranked)['turn:s:5']).toBeCloseTo(text(2), 12);
    expect(ids(ranked)).toEqual(['turn:s:5', 'turn:s:1']);
  });

  it('given a query naming a period, scores the facts from that period higher, whatever their source', () => {
    const candidates: FactCandidates = {
      ...nothing,
      turns: [{ ranking: 'fulltext', items: [turn('s', 1, 'user', 1), turn('s', 3, 'user', 20)] }],
      insights: [{ ranking: 'fulltext', items: [fact('insight:i', 'insights', 21)] }],
    };

    const ranked = scores(rankFacts(candidates, ALL, { period: { from: at(15), to: at(25) } }));

    expect(ranked['turn:s:1']).toBeCloseTo(text(1), 12);
    expect(ranked['turn:s:3']).toBeCloseTo(text(2) * (1 + NAMED_PERIOD_BOOST), 12);
    expect(ranked['insight:i']).toBeCloseTo(rrf(1) * (1 + NAMED_PERIOD_BOOST), 12);
  });

  it('given a query naming a period, scores a turn that refers to it higher too, once, whenever the turn was said', () => {
    const referring = { ...turn('s', 2, 'user', 30), refers: { from: at(10), to: at(12) } };
    const elsewhere = { ...turn('s', 4, 'user', 30), refers: { from: at(1), to: at(3) } };
    const both = { ...turn('s', 6, 'user', 20), refers: { from: at(18), to: at(19) } };
    const candidates: FactCandidates = { ...nothing, turns: [{ ranking: 'fulltext', items: [referring, elsewhere, both] }] };

    const ranked = scores(rankFacts(candidates, ALL, { period: { from: at(11), to: at(20) } }));

    expect(ranked['turn:s:2']).toBeCloseTo(text(1) * (1 + NAMED_PERIOD_BOOST), 12);
    expect(ranked['turn:s:4']).toBeCloseTo(text(2), 12);
    expect(ranked['turn:s:6']).toBeCloseTo(text(3) * (1 + NAMED_PERIOD_BOOST), 12);
  });

  it('given insights and session summaries, puts them on the RRF scale with their source weight', () => {
    const candidates: FactCandidates = {
      ...nothing,
      insights: [
        { ranking: 'fulltext', items: [fact('insight:a', 'insights')] },
        { ranking: 'vector', items: [fact('insight:a', 'insights')] },
      ],
      sessionSummaries: [{ ranking: 'fulltext', items: [fact('summary:s', 'sessionSummaries')] }],
    };

    const ranked = scores(rankFacts(candidates, ALL));

    expect(ranked['insight:a']).toBeCloseTo(SOURCE_WEIGHTS.insights * (rrf(1) + rrf(1, RANKING_WEIGHTS.vector)), 12);
    expect(ranked['summary:s']).toBeCloseTo(rrf(1, SOURCE_WEIGHTS.sessionSummaries), 12);
  });

  it('given artifacts in word-match order, scores each by its rank on the RRF scale', () => {
    const candidates: FactCandidates = { ...nothing, artifacts: [fact('artifact:x', 'artifacts'), fact('artifact:y', 'artifacts')] };

    const ranked = rankFacts(candidates, ALL);

    expect(ranked.map((r) => [r.fact.id, r.score])).toEqual([
      ['artifact:x', rrf(1)],
      ['artifact:y', rrf(2)],
    ]);
  });

  it('given equal scores, keeps turns, interactions, artifacts, insights and summaries in that order', () => {
    const candidates: FactCandidates = {
      turns: [{ ranking: 'fulltext', items: [turn('s', 1)] }],
      interactions: [{ ranking: 'fulltext', items: [window('t', 1, 2)] }],
      artifacts: [fact('artifact:x', 'artifacts')],
      insights: [{ ranking: 'fulltext', items: [fact('insight:i', 'insights')] }],
      // Half weight twice: the same score as the others.
      sessionSummaries: [
        { ranking: 'fulltext', items: [fact('summary:s', 'sessionSummaries')] },
        { ranking: 'fulltext', items: [fact('summary:s', 'sessionSummaries')] },
      ],
    };

    const ranked = rankFacts(candidates, ALL);

    expect(new Set(ranked.map((r) => r.score)).size).toBe(1);
    expect(ids(ranked)).toEqual(['turn:s:1', 't-w1', 'artifact:x', 'insight:i', 'summary:s']);
  });

  it('given sources not asked for, returns none of their facts', () => {
    const candidates: FactCandidates = {
      turns: [{ ranking: 'fulltext', items: [turn('s', 1)] }],
      interactions: [{ ranking: 'fulltext', items: [window('s', 1, 2)] }],
      artifacts: [fact('artifact:x', 'artifacts')],
      insights: [{ ranking: 'fulltext', items: [fact('insight:i', 'insights')] }],
      sessionSummaries: [{ ranking: 'fulltext', items: [fact('summary:s', 'sessionSummaries')] }],
    };

    expect(ids(rankFacts(candidates, new Set(['insights', 'interactions'] as const)))).toEqual(['s-w1', 'insight:i']);
    expect(rankFacts(candidates, new Set(['artifacts'] as const)).map((r) => r.fact.source)).toEqual(['artifacts']);
  });

  it('given a policy with every part turned off, fuses the turns by plain weighted RRF: no lending, no boost, no factor', () => {
    const asking = { ...turn('s', 1, 'Melanie', 1), asks: true, refers: { from: at(20), to: at(21) } };
    const candidates: FactCandidates = {
      ...nothing,
      turns: [
        { ranking: 'fulltext', items: [asking, turn('s', 2, 'Melanie', 20)] },
        { ranking: 'vector', items: [turn('s', 2, 'Melanie', 20)] },
      ],
      interactions: [{ ranking: 'fulltext', items: [window('s', 1, 2)] }],
    };
    const hints = { namedSpeaker: 'Melanie', period: { from: at(20), to: at(21) } };
    const off = { ...DEFAULT_RANKING, turnVectorWeight: 0.35, turnFullTextK: RRF_K, windowToTurnWeight: 0, nextTurnWeight: 0, namedSpeakerBoost: 0, namedPeriodBoost: 0, askingTurnFactor: 1 };

    const ranked = scores(rankFacts(candidates, new Set(['turns'] as const), hints, off));

    expect(ranked['turn:s:1']).toBeCloseTo(rrf(1), 12);
    expect(ranked['turn:s:2']).toBeCloseTo(rrf(2) + rrf(1, 0.35), 12);
    // The default policy is what rankFacts applies when given none.
    expect(rankFacts(candidates, ALL, hints, DEFAULT_RANKING)).toEqual(rankFacts(candidates, ALL, hints));
    expect(DEFAULT_RANKING).toMatchObject({ turnVectorWeight: TURN_VECTOR_WEIGHT, turnFullTextK: TURN_FULLTEXT_RRF_K, nextTurnWeight: NEXT_TURN_WEIGHT, namedSpeakerBoost: NAMED_SPEAKER_BOOST });
  });
});

describe('asksQuestion', () => {
  it('given a text whose last character, trailing spaces aside, is a question mark, says it asks; otherwise not', () => {
    expect(asksQuestion('Melanie: Wow, that painting is awesome! What inspired you?')).toBe(true);
    expect(asksQuestion('Nate: Are you coming?  \n')).toBe(true);
    expect(asksQuestion('Joanna: What a day? It was great.')).toBe(false);
    expect(asksQuestion('Caroline: Look at this [shared a photo: a dog?]')).toBe(false);
    expect(asksQuestion('')).toBe(false);
  });
});

describe('packFacts', () => {
  const ranked = (...entries: [string, number, string?][]): RankedFact[] => entries.map(([id, score, text]) => ({ fact: { ...fact(id, 'turns'), text: text ?? id }, score }));

  it('given ranked facts, returns the best topK with scores normalised so the best is 1, and counts their tokens', () => {
    const result = packFacts(ranked(['a', 0.04], ['b', 0.03], ['c', 0.01]), { topK: 2, minScore: 0 });

    expect(ids(result.facts)).toEqual(['a', 'b']);
    expect(result.facts.map((f) => f.score)).toEqual([1, 0.75]);
    expect(result.facts.every((f) => f.tokens > 0)).toBe(true);
    expect(result.tokens).toBe(result.facts[0]!.tokens + result.facts[1]!.tokens);
  });

  it('given a minimum score, stops at the first fact below it', () => {
    const result = packFacts(ranked(['a', 0.04], ['b', 0.03], ['c', 0.01]), { topK: 10, minScore: 0.5 });

    expect(ids(result.facts)).toEqual(['a', 'b']);
  });

  it('given a token budget, skips a fact that would pass it and keeps smaller ones after it', () => {
    const long = 'a long fact that takes many more tokens than the budget leaves for it after the first';
    const result = packFacts(ranked(['a', 0.04, 'short one'], ['b', 0.03, long], ['c', 0.02, 'short two']), { topK: 10, minScore: 0, maxTokens: 8 });

    expect(ids(result.facts)).toEqual(['a', 'c']);
    expect(result.tokens).toBeLessThanOrEqual(8);
    expect(result.facts[1]!.score).toBe(0.5);
  });

  it('given nothing ranked, returns no facts and no tokens', () => {
    expect(packFacts([], { topK: 5, minScore: 0 })).toEqual({ facts: [], tokens: 0 });
  });
});

describe('candidatePool', () => {
  it('given a small topK, fetches 100 candidates a list; given a large one, three times topK', () => {
    expect(candidatePool(5)).toBe(100);
    expect(candidatePool(50)).toBe(150);
  });
});
