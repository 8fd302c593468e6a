import { FactSource, type FactSearchBody, type FactSearchResult, type Retriever } from '../contracts/facts.js';
import { candidatePool, DEFAULT_RANKING, packFacts, rankFacts, type FactDraft, type PackLimits, type RankedFact, type RankedList, type Ranking, type RankingPolicy, type TurnCandidate, type WindowCandidate } from '../domain/fact-ranking.js';
import { namedParticipant, withoutParticipantNames } from '../domain/participants.js';
import { meanDirection } from '../domain/ranking.js';
import { answerStatement } from '../domain/statements.js';
import { periodNamedIn } from '../domain/time-expressions.js';
import type { Deps } from './ports.js';
import type { InsightHit, SearchQuery, SessionSummaryHit, TurnHit, WindowHit } from './search-ports.js';
import type { Viewer } from '../domain/scopes.js';
import { searchMemories, type ArtifactDeps, type MemoryHit } from './artifacts.js';

type SearchDeps = Pick<Deps, 'search' | 'embedder' | 'memory' | 'clock'> & Partial<Pick<ArtifactDeps, 'detail'>> & Partial<Pick<Deps, 'insights' | 'directory'>>;

/**
 * Hybrid fact search: full-text (BM25) and vector rankings over single turns and k-turn interactions, and over
 * artifacts, insights and session summaries (all sources unless `sources` says otherwise). This gathers the ranked
 * lists from the stores and reads the query's hints (a named participant, a named period); how they are fused,
 * boosted and cut by topK, minScore and the token budget is domain policy (shared/domain/fact-ranking.ts). Facts carry
 * provenance (session, turn ids, seq range, time).
 *
 * Artifacts are scoped: only those `viewer` may see are searched (by default the request's agent and session, without
 * handoff grants; the HTTP route passes viewerFor's). The request's sessionId and agentId still filter them by
 * provenance, as they filter every other source.
 *
 * `policy` weighs the ranking's parts: DEFAULT_RANKING, other than in the evaluation's ablations.
 */
export async function searchFacts(deps: SearchDeps, userId: string, body: FactSearchBody, viewer?: Viewer, policy: Readonly<RankingPolicy> = DEFAULT_RANKING): Promise<FactSearchResult> {
  const reader: Viewer = viewer ?? { userId, ...(body.agentId && { agentId: body.agentId }), ...(body.sessionId && { sessionId: body.sessionId }) };
  const topK = body.topK ?? deps.memory.topKFacts;
  const sources = new Set(body.sources ?? FactSource.options);
  const retrievers: Retriever[] = body.retrievers ?? ['fulltext', 'vector'];
  // Participants' names say whose turns to favour (the named-speaker boost), not what to match: as words they match
  // turns that address or follow that person. The conversation sources are searched without them.
  const speakers = await deps.search.speakers(userId);
  const named = namedParticipant(body.query, speakers);
  const text = policy.namesOutOfQuery ? withoutParticipantNames(body.query, speakers) : body.query;
  const query: SearchQuery = {
    userId,
    text,
    limit: candidatePool(topK),
    search: {},
    filters: { ...(body.sessionId && { sessionId: body.sessionId }), ...(body.agentId && { agentId: body.agentId }), ...(body.from && { from: body.from }), ...(body.to && { to: body.to }) },
  };
  // The query's vector is computed while the full-text lists, which need none, run: an embedding (a model thread's
  // inference, a hosted endpoint's round trip) took as long as a search's ranking or longer. Only a source with vector
  // lists asks for it (artifacts have none).
  const withVector: Promise<SearchQuery> = retrievers.includes('vector') && [...sources].some((s) => s !== 'artifacts')
    ? queryVector(deps, text, policy.answerStatement ? answerStatement(body.query, speakers) : text).then((vector) => (vector ? { ...query, vector: { model: deps.embedder.model, values: vector } } : query))
    : Promise.resolve(query);
  // Awaited by the vector lists; should none run (a source's store absent), a failed embedding is still handled.
  withVector.catch(() => undefined);
  const queryFor = async (ranking: Ranking) => (ranking === 'fulltext' ? query : withVector);

  const windowRankings: Ranking[] = [...retrievers, ...(retrievers.includes('vector') ? (['summaryVector'] as const) : [])];
  const detail = deps.detail;
  const searches = Promise.all([
    sources.has('turns') ? Promise.all(retrievers.map(async (r) => deps.search.turns(await queryFor(r), r))) : Promise.resolve([] as TurnHit[][]),
    sources.has('turns') || sources.has('interactions')
      ? Promise.all(windowRankings.map(async (r) => deps.search.interactions(await queryFor(r), r)))
      : Promise.resolve([] as WindowHit[][]),
    sources.has('artifacts') && detail && retrievers.includes('fulltext') ? searchMemories({ detail }, reader, body.query, query.limit) : Promise.resolve([] as MemoryHit[]),
    insightAndSummaryLists(deps, queryFor, retrievers, sources),
  ]);
  // Parsed while the searches run: the date parser is the costly part of reading a query. Relative dates ("last week")
  // are the asker's, so read from now (reading them from the user's latest turn measured worse: README, Fact search).
  const period = periodNamedIn(body.query, deps.clock.now());
  const [rankedTurns, rankedWindows, artifacts, { insights, summaries }] = await searches;
  // A hit ranked without what it shows (a vector list on Cosmos, search snapshots) takes it from another list's hit of
  // the same row, if one has it: only the rest is read, below.
  const turnLists = withShown(rankedTurns, turnFactId);
  const windowLists = withShown(rankedWindows, (h) => h.id);

  const lists = <H, C>(found: readonly H[][], rankings: readonly Ranking[], candidate: (hit: H) => C): RankedList<C>[] =>
    found.map((hits, i) => ({ ranking: rankings[i]!, items: hits.map(candidate) }));
  // Hits ranked without what their facts show (search snapshots): read below, for the facts returned only.
  const unshown = new Map<string, TurnHit | WindowHit>();
  for (const hits of [...turnLists, ...windowLists]) for (const h of hits) if (!h.shown) unshown.set(h.kind === 'turn' ? turnFactId(h) : h.id, h);
  const ranked = rankFacts(
    {
      turns: lists(turnLists, retrievers, turnCandidate),
      interactions: lists(windowLists, windowRankings, windowCandidate),
      // The artifact search applies the viewer, not the query's filters: applied here.
      artifacts: artifacts.filter((a) => matchesFilters(a, query.filters)).map(artifactFact),
      insights: lists(insights, retrievers, insightFact),
      sessionSummaries: lists(summaries, retrievers, sessionSummaryFact),
    },
    sources,
    { namedSpeaker: named, period },
    policy,
  );
  const limits = { topK, minScore: body.minScore ?? 0, maxTokens: body.maxTokens };
  if (unshown.size === 0) return packFacts(ranked, limits);
  return packShown(deps, userId, ranked, unshown, limits);
}

/**
 * The query's vector: the mean of the query's own (without participants' names) and that of the statement that would
 * answer it (statements.ts `answerStatement`: "What activities does Melanie partake in?" → "I partake in
 * activities"), embedded in one call. The encoder places the statement nearer the turns that state it; the query's own
 * vector is kept beside it, as a rewrite by rules can be wrong. A query that is no question embeds once. LoCoMo, vector
 * ranking alone: R@10 0.615 → 0.664, R@25 0.770 → 0.802 (README, Fact search).
 */
async function queryVector(deps: SearchDeps, text: string, statement: string): Promise<number[] | undefined> {
  if (statement === text) return (await deps.embedder.embed([text]))[0];
  const [own, stated] = await deps.embedder.embed([text, statement]);
  return own && stated ? meanDirection([own, stated]) : own;
}

/**
 * packFacts over facts some of whose hits were ranked without what they show (search snapshots). What they show is
 * read for the best `topK` facts, then, only while the answer is not full (the token budget skipped some, or rows were
 * deleted meanwhile), for twice as many more each time: a search reads back the rows it returns and hardly any others,
 * in few statements. Packing stops within the facts read, so the answer is packFacts's over all of them (less any row
 * deleted meanwhile).
 */
async function packShown(
  deps: SearchDeps,
  userId: string,
  ranked: readonly RankedFact[],
  unshown: ReadonlyMap<string, TurnHit | WindowHit>,
  limits: PackLimits,
): Promise<FactSearchResult> {
  const shown: RankedFact[] = [];
  let result = packFacts([], limits);
  for (let from = 0, size = Math.max(limits.topK, 1); from < ranked.length; from += size, size *= 2) {
    const next = ranked.slice(from, from + size);
    const hits = next.flatMap(({ fact }) => unshown.get(fact.id) ?? []);
    const read = await deps.search.show(userId, {
      turns: hits.filter((h): h is TurnHit => h.kind === 'turn'),
      interactions: hits.filter((h): h is WindowHit => h.kind === 'interaction'),
    });
    const facts = new Map<string, FactDraft>([...read.turns.map(turnFact), ...read.interactions.map(windowFact)].map((f) => [f.id, f]));
    for (const r of next) {
      if (!unshown.has(r.fact.id)) shown.push(r);
      else {
        const fact = facts.get(r.fact.id);
        if (fact) shown.push({ fact, score: r.score });
      }
    }
    result = packFacts(shown, limits);
    // Full, or the rest score below minScore (packFacts normalises by the best fact, as here).
    if (result.facts.length >= limits.topK || next[next.length - 1]!.score / (shown[0]?.score ?? 1) < limits.minScore) break;
  }
  return result;
}

function withShown<H extends TurnHit | WindowHit>(lists: readonly H[][], idOf: (hit: H) => string): H[][] {
  const shown = new Map<string, H['shown']>();
  for (const hits of lists) for (const h of hits) if (h.shown) shown.set(idOf(h), h.shown);
  if (shown.size === 0) return [...lists];
  return lists.map((hits) => hits.map((h) => (h.shown || !shown.has(idOf(h)) ? h : { ...h, shown: shown.get(idOf(h)) })));
}

/**
 * Insights and session summaries: one ranked list per retriever from each store, best first. The summaries' full-text
 * list starts at once; the insights' lists wait for the query's vector together (one call: on Cosmos DB both share
 * the reads that follow them). The stores apply the filters and skip superseded and merged insights.
 */
async function insightAndSummaryLists(
  deps: SearchDeps,
  queryFor: (ranking: Retriever) => Promise<SearchQuery>,
  retrievers: readonly Retriever[],
  sources: ReadonlySet<FactSource>,
): Promise<{ insights: InsightHit[][]; summaries: SessionSummaryHit[][] }> {
  const { insights, directory } = deps;
  const [insightLists, summaryLists] = await Promise.all([
    sources.has('insights') && insights ? queryFor('vector').then((q) => insights.search(q, retrievers)) : Promise.resolve([] as InsightHit[][]),
    sources.has('sessionSummaries') && directory ? Promise.all(retrievers.map(async (r) => directory.searchSummaries(await queryFor(r), r))) : Promise.resolve([] as SessionSummaryHit[][]),
  ]);
  return { insights: insightLists, summaries: summaryLists };
}

function matchesFilters(a: MemoryHit, f: SearchQuery['filters']): boolean {
  return (!f.sessionId || a.sessionId === f.sessionId) && (!f.agentId || a.agentId === f.agentId) && (!f.from || a.createdAt >= new Date(f.from).toISOString()) && (!f.to || a.createdAt <= new Date(f.to).toISOString());
}

const artifactFact = (a: MemoryHit): FactDraft => ({
  id: `artifact:${a.key}`,
  source: 'artifacts',
  text: a.description,
  ...(a.sessionId && { sessionId: a.sessionId }),
  ...(a.agentId && { agentId: a.agentId }),
  turnIds: a.turnId ? [a.turnId] : [],
  memoryKey: a.key,
  timestamp: a.createdAt,
});

const turnFactId = (t: TurnHit) => `turn:${t.sessionId}:${t.seq}`;

/** A hit's fact; before what it shows is read (`shown`), its text is empty and its turn ids unknown. */
const turnFact = (t: TurnHit): FactDraft => ({
  id: turnFactId(t),
  source: 'turns',
  text: t.shown?.text ?? '',
  sessionId: t.sessionId,
  ...(t.agentId && { agentId: t.agentId }),
  turnIds: t.shown ? [t.shown.turnId] : [],
  seqRange: [t.seq, t.seq],
  timestamp: t.timestamp,
});

const turnCandidate = (t: TurnHit): TurnCandidate => ({ fact: turnFact(t), sessionId: t.sessionId, seq: t.seq, speaker: t.speaker, refers: t.refers, asks: t.asks });

const windowFact = (w: WindowHit): FactDraft => ({
  id: w.id,
  source: 'interactions',
  text: w.shown?.summary ?? '',
  sessionId: w.sessionId,
  ...(w.agentIds.length === 1 && { agentId: w.agentIds[0]! }),
  turnIds: w.shown?.turnIds ?? [],
  seqRange: w.seqRange,
  timestamp: w.timestamp,
});

const windowCandidate = (w: WindowHit): WindowCandidate => ({ fact: windowFact(w), sessionId: w.sessionId, seqRange: w.seqRange });

/**
 * An insight: its session, and that session's seq range when it comes from one session; an aggregate insight names
 * every session it was drawn from and has no seq range. Insights record no turns (`turnIds: []`) and no agent.
 */
const insightFact = (h: InsightHit): FactDraft => ({
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
const sessionSummaryFact = (h: SessionSummaryHit): FactDraft => ({
  id: `summary:${h.sessionId}`,
  source: 'sessionSummaries',
  text: h.summary,
  sessionId: h.sessionId,
  ...(h.agentIds.length === 1 && { agentId: h.agentIds[0]! }),
  turnIds: [],
  ...(h.seqRange && { seqRange: h.seqRange }),
  timestamp: h.startedAt,
});
