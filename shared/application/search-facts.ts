import { FactSource, type Fact, type FactSearchBody, type FactSearchResult, type Retriever } from '../contracts/facts.js';
import { reciprocalRankFusion } from '../domain/ranking.js';
import { namedParticipant, withoutParticipantNames } from '../domain/participants.js';
import { isWithin, periodNamedIn } from '../domain/time-expressions.js';
import { countTokens } from '../domain/tokens.js';
import type { Deps } from './ports.js';
import type { InsightHit, SearchQuery, SessionSummaryHit, TurnHit, WindowHit } from './search-ports.js';
import { searchMemories, type ArtifactDeps, type MemoryHit } from './artifacts.js';

type SearchDeps = Pick<Deps, 'search' | 'embedder' | 'memory' | 'clock'> & Partial<Pick<ArtifactDeps, 'detail'>> & Partial<Pick<Deps, 'insights' | 'directory'>>;

/**
 * How much a window's fused score lends to each of its turns: a turn in a matching stretch of conversation is more
 * likely relevant. Full weight measured slightly better on LoCoMo than half (R@10 +0.004, R@25 +0.002 in-memory).
 */
const WINDOW_TO_TURN_WEIGHT = 1;
/**
 * Weight of each ranking in the fusion. Full text leads: on LoCoMo turn retrieval BM25 alone beats the offline
 * sentence encoder alone by a wide margin (see README, Fact search), and an equal vote lets weak vector ranks dilute it.
 */
const RETRIEVER_WEIGHTS: Record<Retriever | 'summaryVector', number> = { fulltext: 1, vector: 0.35, summaryVector: 0.35 };
/**
 * A query that names exactly one participant ("what does Melanie do to relax?") is mostly about what that participant
 * said, so their turns score this much higher. On LoCoMo this lifted R@10 by about 0.03 (README, Fact search).
 */
const NAMED_SPEAKER_BOOST = 0.3;
/**
 * A query that names a period ("last May", "in July 2023") is about what happened then: facts from that period score
 * this much higher. A boost, not a filter (`from`/`to` filter), since a parse can be wrong. LoCoMo: R@10 +0.01.
 */
const NAMED_PERIOD_BOOST = 1;
/** Candidates fetched per ranked list before fusion. */
const POOL = 100;
/**
 * Weight of the insight and session-summary rankings, times RETRIEVER_WEIGHTS, on the same RRF scale as turns and
 * windows. An insight is one distilled statement about the user, as precise as a turn: full weight. A session summary
 * covers a whole session and matches many questions loosely: half weight, so it does not crowd out the turns and
 * windows that state the fact (the agent's `search_session_summaries` tool ranks summaries alone). Not yet measured.
 */
const SOURCE_WEIGHTS = { insights: 1, sessionSummaries: 0.5 } as const;

const turnKey = (sessionId: string, seq: number) => `${sessionId}#${seq}`;

/**
 * Hybrid fact search: full-text (BM25) and vector rankings over single turns and k-turn interactions, fused with
 * reciprocal rank fusion. Turn facts also inherit part of their window's fused rank. Artifacts, insights and session
 * summaries join as further ranked lists on the same scale (all sources unless `sources` says otherwise). Facts carry
 * provenance (session, turn ids, seq range, time) and are cut by topK, minScore and a token budget.
 */
export async function searchFacts(deps: SearchDeps, userId: string, body: FactSearchBody): Promise<FactSearchResult> {
  const topK = body.topK ?? deps.memory.topKFacts;
  const sources = new Set(body.sources ?? FactSource.options);
  const retrievers: Retriever[] = body.retrievers ?? ['fulltext', 'vector'];
  // Participants' names say whose turns to favour (NAMED_SPEAKER_BOOST), not what to match: as words they match turns
  // that address or follow that person. The conversation sources are searched without them.
  const speakers = await deps.search.speakers(userId);
  const text = withoutParticipantNames(body.query, speakers);
  const vector = retrievers.includes('vector') ? (await deps.embedder.embed([text]))[0] : undefined;
  const query: SearchQuery = {
    userId,
    text,
    ...(vector && { vector: { model: deps.embedder.model, values: vector } }),
    limit: Math.max(POOL, topK * 3),
    filters: { ...(body.sessionId && { sessionId: body.sessionId }), ...(body.agentId && { agentId: body.agentId }), ...(body.from && { from: body.from }), ...(body.to && { to: body.to }) },
  };

  const windowRetrievers: (Retriever | 'summaryVector')[] = [...retrievers, ...(retrievers.includes('vector') ? (['summaryVector'] as const) : [])];
  const detail = deps.detail;
  const searches = Promise.all([
    sources.has('turns') ? Promise.all(retrievers.map((r) => deps.search.turns(query, r))) : Promise.resolve([] as TurnHit[][]),
    sources.has('turns') || sources.has('interactions') ? Promise.all(windowRetrievers.map((r) => deps.search.interactions(query, r))) : Promise.resolve([] as WindowHit[][]),
    sources.has('artifacts') && detail && retrievers.includes('fulltext') ? searchMemories({ detail }, userId, body.query, query.limit) : Promise.resolve([] as MemoryHit[]),
    insightAndSummaryFacts(deps, query, retrievers, sources),
  ]);
  // Parsed while the searches run: the date parser is the costly part of reading a query.
  const period = periodNamedIn(body.query, deps.clock.now());
  const [turnLists, windowLists, artifacts, distilled] = await searches;

  const windows = reciprocalRankFusion(windowLists.map((items, i) => ({ items, weight: RETRIEVER_WEIGHTS[windowRetrievers[i]!] })), (w: WindowHit) => w.id);
  const facts: { fact: Omit<Fact, 'score' | 'tokens'>; score: number }[] = [];
  if (sources.has('turns')) {
    const turns = reciprocalRankFusion(turnLists.map((items, i) => ({ items, weight: RETRIEVER_WEIGHTS[retrievers[i]!] })), (t: TurnHit) => turnKey(t.sessionId, t.seq));
    const windowScoreByTurn = new Map<string, number>();
    for (const { item, score } of windows) {
      for (let seq = item.seqRange[0]; seq <= item.seqRange[1]; seq++) windowScoreByTurn.set(turnKey(item.sessionId, seq), score);
    }
    const named = namedParticipant(body.query, speakers);
    for (const { item, score } of turns) {
      const boost = WINDOW_TO_TURN_WEIGHT * (windowScoreByTurn.get(turnKey(item.sessionId, item.seq)) ?? 0);
      facts.push({ fact: turnFact(item), score: (score + boost) * (item.speaker === named ? 1 + NAMED_SPEAKER_BOOST : 1) });
    }
  }
  if (sources.has('interactions')) {
    for (const { item, score } of windows) facts.push({ fact: windowFact(item), score });
  }
  // Artifacts are ranked by word match; the same RRF scale puts them among the conversation facts.
  artifacts.filter((a) => matchesFilters(a, query.filters)).forEach((item, index) => facts.push({ fact: artifactFact(item), score: 1 / (60 + index + 1) }));
  facts.push(...distilled);
  if (period) for (const f of facts) if (isWithin(period, f.fact.timestamp)) f.score *= 1 + NAMED_PERIOD_BOOST;
  facts.sort((a, b) => b.score - a.score);
  return pack(facts, topK, body.minScore ?? 0, body.maxTokens);
}

function pack(ranked: readonly { fact: Omit<Fact, 'score' | 'tokens'>; score: number }[], topK: number, minScore: number, maxTokens: number | undefined): FactSearchResult {
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

function matchesFilters(a: MemoryHit, f: SearchQuery['filters']): boolean {
  return (!f.sessionId || a.sessionId === f.sessionId) && (!f.agentId || a.agentId === f.agentId) && (!f.from || a.createdAt >= new Date(f.from).toISOString()) && (!f.to || a.createdAt <= new Date(f.to).toISOString());
}

const artifactFact = (a: MemoryHit): Omit<Fact, 'score' | 'tokens'> => ({
  id: `artifact:${a.key}`,
  source: 'artifacts',
  text: a.description,
  ...(a.sessionId && { sessionId: a.sessionId }),
  ...(a.agentId && { agentId: a.agentId }),
  turnIds: a.turnId ? [a.turnId] : [],
  memoryKey: a.key,
  timestamp: a.createdAt,
});

const turnFact = (t: TurnHit): Omit<Fact, 'score' | 'tokens'> => ({
  id: `turn:${t.sessionId}:${t.seq}`,
  source: 'turns',
  text: t.text,
  sessionId: t.sessionId,
  ...(t.agentId && { agentId: t.agentId }),
  turnIds: [t.turnId],
  seqRange: [t.seq, t.seq],
  timestamp: t.timestamp,
});

const windowFact = (w: WindowHit): Omit<Fact, 'score' | 'tokens'> => ({
  id: w.id,
  source: 'interactions',
  text: w.summary,
  sessionId: w.sessionId,
  ...(w.agentIds.length === 1 && { agentId: w.agentIds[0]! }),
  turnIds: w.turnIds,
  seqRange: w.seqRange,
  timestamp: w.timestamp,
});

/**
 * Insights and session summaries: one ranked list per retriever from each store, fused with reciprocal rank fusion
 * (RETRIEVER_WEIGHTS times the source's SOURCE_WEIGHTS), so their scores sit on the turns' and windows' scale. The
 * stores apply the filters and skip superseded and merged insights.
 */
async function insightAndSummaryFacts(
  deps: SearchDeps,
  query: SearchQuery,
  retrievers: readonly Retriever[],
  sources: ReadonlySet<FactSource>,
): Promise<{ fact: Omit<Fact, 'score' | 'tokens'>; score: number }[]> {
  const { insights, directory } = deps;
  const [insightLists, summaryLists] = await Promise.all([
    sources.has('insights') && insights ? Promise.all(retrievers.map((r) => insights.search(query, r))) : Promise.resolve([] as InsightHit[][]),
    sources.has('sessionSummaries') && directory ? Promise.all(retrievers.map((r) => directory.searchSummaries(query, r))) : Promise.resolve([] as SessionSummaryHit[][]),
  ]);
  const fuse = <T>(lists: readonly T[][], weight: number, key: (item: T) => string) =>
    reciprocalRankFusion(lists.map((items, i) => ({ items, weight: weight * RETRIEVER_WEIGHTS[retrievers[i]!] })), key);
  return [
    ...fuse(insightLists, SOURCE_WEIGHTS.insights, (h) => h.id).map(({ item, score }) => ({ fact: insightFact(item), score })),
    ...fuse(summaryLists, SOURCE_WEIGHTS.sessionSummaries, (h) => h.sessionId).map(({ item, score }) => ({ fact: sessionSummaryFact(item), score })),
  ];
}

/**
 * An insight: its session, and that session's seq range when it comes from one session; an aggregate insight names
 * every session it was drawn from and has no seq range. Insights record no turns (`turnIds: []`) and no agent.
 */
const insightFact = (h: InsightHit): Omit<Fact, 'score' | 'tokens'> => ({
  id: `insight:${h.id}`,
  source: 'insights',
  text: h.text,
  sessionId: h.sessionId,
  turnIds: [],
  ...(h.type === 'session' && h.seqRange && { seqRange: h.seqRange }),
  ...(h.type === 'aggregate' && { sessionIds: h.sourceSessionIds }),
  timestamp: h.timestamp,
});

/**
 * A session summary: the session's seq range and its first turn's time. `turnIds` stays empty rather than listing
 * every turn of the session, so a summary fact's size does not grow with the session.
 */
const sessionSummaryFact = (h: SessionSummaryHit): Omit<Fact, 'score' | 'tokens'> => ({
  id: `summary:${h.sessionId}`,
  source: 'sessionSummaries',
  text: h.summary,
  sessionId: h.sessionId,
  ...(h.agentIds.length === 1 && { agentId: h.agentIds[0]! }),
  turnIds: [],
  ...(h.seqRange && { seqRange: h.seqRange }),
  timestamp: h.startedAt,
});
