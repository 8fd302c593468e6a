import { FactSource, type FactSearchBody, type FactSearchResult, type Retriever } from '../contracts/facts.js';
import { candidatePool, packFacts, rankFacts, type FactDraft, type RankedList, type Ranking, type TurnCandidate, type WindowCandidate } from '../domain/fact-ranking.js';
import { namedParticipant, withoutParticipantNames } from '../domain/participants.js';
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
 */
export async function searchFacts(deps: SearchDeps, userId: string, body: FactSearchBody, viewer?: Viewer): Promise<FactSearchResult> {
  const reader: Viewer = viewer ?? { userId, ...(body.agentId && { agentId: body.agentId }), ...(body.sessionId && { sessionId: body.sessionId }) };
  const topK = body.topK ?? deps.memory.topKFacts;
  const sources = new Set(body.sources ?? FactSource.options);
  const retrievers: Retriever[] = body.retrievers ?? ['fulltext', 'vector'];
  // Participants' names say whose turns to favour (the named-speaker boost), not what to match: as words they match
  // turns that address or follow that person. The conversation sources are searched without them.
  const speakers = await deps.search.speakers(userId);
  const text = withoutParticipantNames(body.query, speakers);
  const vector = retrievers.includes('vector') ? (await deps.embedder.embed([text]))[0] : undefined;
  const query: SearchQuery = {
    userId,
    text,
    ...(vector && { vector: { model: deps.embedder.model, values: vector } }),
    limit: candidatePool(topK),
    filters: { ...(body.sessionId && { sessionId: body.sessionId }), ...(body.agentId && { agentId: body.agentId }), ...(body.from && { from: body.from }), ...(body.to && { to: body.to }) },
  };

  const windowRankings: Ranking[] = [...retrievers, ...(retrievers.includes('vector') ? (['summaryVector'] as const) : [])];
  const detail = deps.detail;
  const searches = Promise.all([
    sources.has('turns') ? Promise.all(retrievers.map((r) => deps.search.turns(query, r))) : Promise.resolve([] as TurnHit[][]),
    sources.has('turns') || sources.has('interactions') ? Promise.all(windowRankings.map((r) => deps.search.interactions(query, r))) : Promise.resolve([] as WindowHit[][]),
    sources.has('artifacts') && detail && retrievers.includes('fulltext') ? searchMemories({ detail }, reader, body.query, query.limit) : Promise.resolve([] as MemoryHit[]),
    insightAndSummaryLists(deps, query, retrievers, sources),
  ]);
  // Parsed while the searches run: the date parser is the costly part of reading a query.
  const period = periodNamedIn(body.query, deps.clock.now());
  const [turnLists, windowLists, artifacts, { insights, summaries }] = await searches;

  const lists = <H, C>(found: readonly H[][], rankings: readonly Ranking[], candidate: (hit: H) => C): RankedList<C>[] =>
    found.map((hits, i) => ({ ranking: rankings[i]!, items: hits.map(candidate) }));
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
    { namedSpeaker: namedParticipant(body.query, speakers), period },
  );
  return packFacts(ranked, { topK, minScore: body.minScore ?? 0, maxTokens: body.maxTokens });
}

/**
 * Insights and session summaries: one ranked list per retriever from each store, best first. The stores apply the
 * filters and skip superseded and merged insights.
 */
async function insightAndSummaryLists(
  deps: SearchDeps,
  query: SearchQuery,
  retrievers: readonly Retriever[],
  sources: ReadonlySet<FactSource>,
): Promise<{ insights: InsightHit[][]; summaries: SessionSummaryHit[][] }> {
  const { insights, directory } = deps;
  const [insightLists, summaryLists] = await Promise.all([
    sources.has('insights') && insights ? Promise.all(retrievers.map((r) => insights.search(query, r))) : Promise.resolve([] as InsightHit[][]),
    sources.has('sessionSummaries') && directory ? Promise.all(retrievers.map((r) => directory.searchSummaries(query, r))) : Promise.resolve([] as SessionSummaryHit[][]),
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

const turnFact = (t: TurnHit): FactDraft => ({
  id: `turn:${t.sessionId}:${t.seq}`,
  source: 'turns',
  text: t.text,
  sessionId: t.sessionId,
  ...(t.agentId && { agentId: t.agentId }),
  turnIds: [t.turnId],
  seqRange: [t.seq, t.seq],
  timestamp: t.timestamp,
});

const turnCandidate = (t: TurnHit): TurnCandidate => ({ fact: turnFact(t), sessionId: t.sessionId, seq: t.seq, speaker: t.speaker });

const windowFact = (w: WindowHit): FactDraft => ({
  id: w.id,
  source: 'interactions',
  text: w.summary,
  sessionId: w.sessionId,
  ...(w.agentIds.length === 1 && { agentId: w.agentIds[0]! }),
  turnIds: w.turnIds,
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
