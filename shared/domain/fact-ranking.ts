import type { Fact, FactSearchResult, FactSource, Retriever } from '../contracts/facts.js';
import { reciprocalRankFusion, RRF_K } from './ranking.js';
import { isWithin, overlaps, type Period } from './time-expressions.js';
import { countTokens } from './tokens.js';

/**
 * How fact search ranks what the stores found: pure policy over ranked lists. The use case (search-facts.ts) gathers
 * one list per source, granularity and retriever; `rankFacts` fuses them with reciprocal rank fusion, applies the
 * query's hints as boosts, and `packFacts` cuts the result by topK, minScore and a token budget.
 */

/** A fact before ranking: everything but its score and its tokens. */
export type FactDraft = Omit<Fact, 'score' | 'tokens'>;

/** What ranked a list: a retriever, or (interactions only) the vector of their summaries. */
export type Ranking = Retriever | 'summaryVector';

/** One ranked list, best first, and the ranking that made it (its weight in the fusion). */
export interface RankedList<T> {
  ranking: Ranking;
  items: readonly T[];
}

/** A turn's fact, with what the policy reads: where the turn is (for its window's score) and who said it. */
export interface TurnCandidate {
  fact: FactDraft;
  sessionId: string;
  seq: number;
  speaker: string;
  /** The period the turn's text refers to ("last week", resolved when it was indexed). */
  refers?: Period | undefined;
  /** The turn ends by asking a question (asksQuestion). */
  asks?: boolean | undefined;
}

/** An interaction's fact, with the turns it covers (their window's score lends to them). */
export interface WindowCandidate {
  fact: FactDraft;
  sessionId: string;
  seqRange: readonly [number, number];
}

/** Everything a fact search found, one list per source, granularity and ranking. */
export interface FactCandidates {
  turns: readonly RankedList<TurnCandidate>[];
  /** Interactions: ranked as facts of their own (when asked for) and lending their score to their turns. */
  interactions: readonly RankedList<WindowCandidate>[];
  /** Artifacts, best word match first (one list: they are ranked by word match only). */
  artifacts: readonly FactDraft[];
  insights: readonly RankedList<FactDraft>[];
  sessionSummaries: readonly RankedList<FactDraft>[];
}

/** What the query itself says: whose turns it is about and which period. Boosts, not filters (a parse can be wrong). */
export interface QueryHints {
  /** The one participant the query names (participants.ts `namedParticipant`). */
  namedSpeaker?: string | undefined;
  /** The period the query names (time-expressions.ts `periodNamedIn`). */
  period?: Period | undefined;
}

export interface RankedFact {
  fact: FactDraft;
  score: number;
}

/** Candidates fetched per ranked list before fusion: at least this many, and three times the facts asked for. */
const POOL = 100;
export const candidatePool = (topK: number): number => Math.max(POOL, topK * 3);

/**
 * Weight of each ranking in the fusion. Full text leads: on LoCoMo turn retrieval BM25 alone beats the offline
 * sentence encoder alone by a wide margin (see README, Fact search), and an equal vote lets weak vector ranks dilute it.
 */
export const RANKING_WEIGHTS: Readonly<Record<Ranking, number>> = { fulltext: 1, vector: 0.35, summaryVector: 0.35 };
/**
 * The weight of the turns' vector list, twice RANKING_WEIGHTS.vector: its first rank scores as the turns' full text's
 * tenth (the windows' vector lists keep 0.35). A turn's vector ranks the turn alone, the one list that does not match
 * it through its context or its window, and the one that finds a turn sharing no word with the query. LoCoMo: R@10
 * 0.810 → 0.814, R@25 0.873 → 0.876, R@50 0.913 → 0.919; 0.5 and 1 gained too, 1.4 lost R@10 (README, Fact search).
 */
export const TURN_VECTOR_WEIGHT = 0.7;
/**
 * The RRF constant of the turns' full-text list, smaller than RRF_K: its score falls faster with rank. Its weight is
 * scaled by (k + 1) / (RRF_K + 1), so its first rank still scores what it did against the vectors, the windows and the
 * next turn, and only its lower ranks count less: the top of BM25 over a turn and its context is the most precise
 * ranking there is, its tail mostly turns that share a common word or only their context's. Rank-based, so every
 * store gives it (Cosmos DB's FullTextScore returns an order, no score). LoCoMo: R@10 0.797 → 0.810, R@25 equal, R@50
 * 0.909 → 0.913; k 10 and 30 gained at R@10 and R@50 too (README, Fact search).
 */
export const TURN_FULLTEXT_RRF_K = 20;
/**
 * How much a window's fused score lends to each of its turns: a turn in a matching stretch of conversation is more
 * likely relevant. Full weight measured slightly better on LoCoMo than half (R@10 +0.004, R@25 +0.002 in-memory).
 */
export const WINDOW_TO_TURN_WEIGHT = 1;
/**
 * How much of the next turn's fused score a turn inherits. A reply that matches the question often restates or reacts
 * to what the turn before it said ("A sunset! …"), so it points at that turn, much as a turn is matched together with
 * the two before it. LoCoMo: R@10 0.782 → 0.787, R@25 0.857 → 0.862 (README, Fact search); 0.2 and 0.3 measured alike.
 */
export const NEXT_TURN_WEIGHT = 0.25;
/**
 * A query that names exactly one participant ("what does Melanie do to relax?") is mostly about what that participant
 * said, so their turns score this much higher. On LoCoMo this lifted R@10 by about 0.03 (README, Fact search).
 */
export const NAMED_SPEAKER_BOOST = 0.3;
/**
 * A query that names a period ("last May", "in July 2023") is about what happened then: facts from that period score
 * this much higher, and so do turns that refer to it ("we moved there last May", said in June). A boost, not a filter
 * (`from`/`to` filter), since a parse can be wrong. LoCoMo: R@10 +0.01.
 */
export const NAMED_PERIOD_BOOST = 1;
/**
 * A turn that ends by asking a question ("…What inspired you?") scores this much of what it would: it hands the
 * conversation over rather than telling something, and what a later question looks for is mostly told. On LoCoMo's
 * dev set 12% of the turns that ask are evidence, against 28% of those that do not; R@10 / R@25 +0.004 / +0.008
 * (README, Fact search). A mild factor: a turn that asks may still say something ("I moved last week. Any tips?").
 */
export const ASKING_TURN_FACTOR = 0.9;
/**
 * Whether a turn's text ends by asking a question: its last character, trailing ASCII whitespace aside, is a question
 * mark. ASCII only, so the snapshots' SQL (`rtrim` of the same characters) reads every row the same way.
 */
export const asksQuestion = (text: string): boolean => /\?[ \t\n\r\f\v]*$/.test(text);
/**
 * Weight of the insight and session-summary rankings, times RANKING_WEIGHTS, on the same RRF scale as turns and
 * windows. An insight is one distilled statement about the user, as precise as a turn: full weight. A session summary
 * covers a whole session and matches many questions loosely: half weight, so it does not crowd out the turns and
 * windows that state the fact (the agent's `search_session_summaries` tool ranks summaries alone). Not yet measured.
 */
export const SOURCE_WEIGHTS = { insights: 1, sessionSummaries: 0.5 } as const;

/**
 * The parts of fact search that were each measured on LoCoMo and kept (the constants above; README, Fact search).
 * Searches take DEFAULT_RANKING; the evaluation turns each part off in turn and prints what it is worth on the data it
 * is given (`npm run eval:locomo`, ablations), so a gain can be checked on conversations other than the ones it was
 * measured on.
 */
export interface RankingPolicy {
  turnVectorWeight: number;
  turnFullTextK: number;
  windowToTurnWeight: number;
  nextTurnWeight: number;
  namedSpeakerBoost: number;
  namedPeriodBoost: number;
  askingTurnFactor: number;
  /** The query's vector is the mean of the query's own and of the statement that would answer it (search-facts.ts). */
  answerStatement: boolean;
  /** The participants' names are taken out of the text matched and embedded (search-facts.ts). */
  namesOutOfQuery: boolean;
}

export const DEFAULT_RANKING: Readonly<RankingPolicy> = {
  turnVectorWeight: TURN_VECTOR_WEIGHT,
  turnFullTextK: TURN_FULLTEXT_RRF_K,
  windowToTurnWeight: WINDOW_TO_TURN_WEIGHT,
  nextTurnWeight: NEXT_TURN_WEIGHT,
  namedSpeakerBoost: NAMED_SPEAKER_BOOST,
  namedPeriodBoost: NAMED_PERIOD_BOOST,
  askingTurnFactor: ASKING_TURN_FACTOR,
  answerStatement: true,
  namesOutOfQuery: true,
};

const turnKey = (sessionId: string, seq: number) => `${sessionId}#${seq}`;

/**
 * RRF of one granularity's lists, each weighted by its ranking (`weights`); its full-text list may fall faster
 * (`fullTextK`), its first rank scoring the same.
 */
const fuse = <T>(lists: readonly RankedList<T>[], key: (item: T) => string, weight = 1, fullTextK = RRF_K, weights = RANKING_WEIGHTS) =>
  reciprocalRankFusion(
    lists.map(({ ranking, items }) => {
      const k = ranking === 'fulltext' ? fullTextK : RRF_K;
      return { items, k, weight: (weight * weights[ranking] * (k + 1)) / (RRF_K + 1) };
    }),
    key,
  );

/**
 * Every fact of the sources asked for, best first. Each granularity's lists are fused with reciprocal rank fusion
 * (RANKING_WEIGHTS, the turns' vectors at TURN_VECTOR_WEIGHT and their full text falling faster with rank by
 * TURN_FULLTEXT_RRF_K; insights and session
 * summaries times SOURCE_WEIGHTS); a turn also inherits its window's fused
 * score (WINDOW_TO_TURN_WEIGHT) and part of the next turn's (NEXT_TURN_WEIGHT), and, said by the named speaker, scores
 * NAMED_SPEAKER_BOOST higher; a turn that ends by asking a question scores ASKING_TURN_FACTOR of that. Artifacts take the RRF score of their rank in their one list. Any fact from the named
 * period, and any turn that refers to a period overlapping it, then scores NAMED_PERIOD_BOOST higher. Interactions
 * lend their score to turns even when they are not asked for as facts. Equal scores keep this order: turns,
 * interactions, artifacts, insights, session summaries, each best first. `policy` says how much each of these counts.
 */
export function rankFacts(candidates: FactCandidates, sources: ReadonlySet<FactSource>, hints: QueryHints = {}, policy: Readonly<RankingPolicy> = DEFAULT_RANKING): RankedFact[] {
  const windows = fuse(candidates.interactions, (w) => w.fact.id);
  const facts: RankedFact[] = [];
  const { period } = hints;
  /** Turns that refer to the named period, whatever their own time. */
  const referring = new Set<RankedFact>();
  if (sources.has('turns')) {
    const windowScoreByTurn = new Map<string, number>();
    for (const { item, score } of windows) {
      for (let seq = item.seqRange[0]; seq <= item.seqRange[1]; seq++) windowScoreByTurn.set(turnKey(item.sessionId, seq), score);
    }
    const turnWeights = { ...RANKING_WEIGHTS, vector: policy.turnVectorWeight };
    const turns = fuse(candidates.turns, (t) => turnKey(t.sessionId, t.seq), 1, policy.turnFullTextK, turnWeights);
    const fusedByTurn = new Map(turns.map(({ item, score }) => [turnKey(item.sessionId, item.seq), score]));
    for (const { item, score } of turns) {
      const next = policy.nextTurnWeight * (fusedByTurn.get(turnKey(item.sessionId, item.seq + 1)) ?? 0);
      const boost = policy.windowToTurnWeight * (windowScoreByTurn.get(turnKey(item.sessionId, item.seq)) ?? 0);
      const speaker = item.speaker === hints.namedSpeaker ? 1 + policy.namedSpeakerBoost : 1;
      const fact = { fact: item.fact, score: (score + next + boost) * speaker * (item.asks ? policy.askingTurnFactor : 1) };
      facts.push(fact);
      if (period && item.refers && overlaps(period, item.refers)) referring.add(fact);
    }
  }
  if (sources.has('interactions')) for (const { item, score } of windows) facts.push({ fact: item.fact, score });
  // Ranked by word match alone; the same RRF scale puts them among the conversation facts.
  if (sources.has('artifacts')) candidates.artifacts.forEach((fact, index) => facts.push({ fact, score: 1 / (RRF_K + index + 1) }));
  if (sources.has('insights')) for (const { item, score } of fuse(candidates.insights, (f) => f.id, SOURCE_WEIGHTS.insights)) facts.push({ fact: item, score });
  if (sources.has('sessionSummaries')) for (const { item, score } of fuse(candidates.sessionSummaries, (f) => f.id, SOURCE_WEIGHTS.sessionSummaries)) facts.push({ fact: item, score });
  if (period) for (const f of facts) if (referring.has(f) || isWithin(period, f.fact.timestamp)) f.score *= 1 + policy.namedPeriodBoost;
  return facts.sort((a, b) => b.score - a.score);
}

/** How many facts an answer holds: at most `topK`, none below `minScore` (normalised, best = 1), within `maxTokens`. */
export interface PackLimits {
  topK: number;
  minScore: number;
  maxTokens?: number | undefined;
}

/**
 * The answer: the best facts in order, scores normalised so the best scores 1. The first fact below `minScore` ends
 * it (the rest score lower); a fact that would pass `maxTokens` is skipped and smaller ones after it may still fit.
 */
export function packFacts(ranked: readonly RankedFact[], { topK, minScore, maxTokens }: PackLimits): FactSearchResult {
  const best = ranked[0]?.score ?? 1;
  const facts: Fact[] = [];
  let tokens = 0;
  for (const { fact, score } of ranked) {
    if (facts.length >= topK) break;
    const normalised = score / best;
    if (normalised < minScore) break;
    const factTokens = countTokens(fact.text);
    if (maxTokens !== undefined && tokens + factTokens > maxTokens) continue;
    tokens += factTokens;
    facts.push({ ...fact, score: Number(normalised.toFixed(4)), tokens: factTokens });
  }
  return { facts, tokens };
}
