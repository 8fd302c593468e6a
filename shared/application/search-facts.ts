import type { Fact, FactSearchBody, FactSearchResult, Retriever } from '../contracts/facts.js';
import { reciprocalRankFusion } from '../domain/ranking.js';
import { countTokens } from '../domain/tokens.js';
import type { Deps } from './ports.js';
import type { SearchQuery, TurnHit, WindowHit } from './search-ports.js';
import { searchMemories, type ArtifactDeps, type MemoryHit } from './artifacts.js';

type SearchDeps = Pick<Deps, 'search' | 'embedder' | 'memory'> & Partial<Pick<ArtifactDeps, 'detail'>>;

/** How much a window's rank lends to each of its turns: a turn in a matching conversation stretch is more likely relevant. */
const WINDOW_TO_TURN_WEIGHT = 0.5;
/**
 * Weight of each ranking in the fusion. Full text leads: on LoCoMo turn retrieval BM25 alone beats the offline
 * sentence encoder alone by a wide margin (see README, Fact search), and an equal vote lets weak vector ranks dilute it.
 */
const RETRIEVER_WEIGHTS: Record<Retriever | 'summaryVector', number> = { fulltext: 1, vector: 0.35, summaryVector: 0.35 };
/** Candidates fetched per ranked list before fusion. */
const POOL = 100;

const turnKey = (sessionId: string, seq: number) => `${sessionId}#${seq}`;

/**
 * Hybrid fact search: full-text (BM25) and vector rankings over single turns and k-turn interactions, fused with
 * reciprocal rank fusion. Turn facts also inherit part of their window's fused rank. Facts carry provenance
 * (session, turn ids, seq range, time) and are cut by topK, minScore and a token budget.
 */
export async function searchFacts(deps: SearchDeps, userId: string, body: FactSearchBody): Promise<FactSearchResult> {
  const topK = body.topK ?? deps.memory.topKFacts;
  const sources = new Set(body.sources ?? ['turns', 'interactions', 'artifacts']);
  const retrievers: Retriever[] = body.retrievers ?? ['fulltext', 'vector'];
  const vector = retrievers.includes('vector') ? (await deps.embedder.embed([body.query]))[0] : undefined;
  const query: SearchQuery = {
    userId,
    text: body.query,
    ...(vector && { vector: { model: deps.embedder.model, values: vector } }),
    limit: Math.max(POOL, topK * 3),
    filters: { ...(body.sessionId && { sessionId: body.sessionId }), ...(body.agentId && { agentId: body.agentId }), ...(body.from && { from: body.from }), ...(body.to && { to: body.to }) },
  };

  const windowRetrievers: (Retriever | 'summaryVector')[] = [...retrievers, ...(retrievers.includes('vector') ? (['summaryVector'] as const) : [])];
  const detail = deps.detail;
  const [turnLists, windowLists, artifacts] = await Promise.all([
    sources.has('turns') ? Promise.all(retrievers.map((r) => deps.search.turns(query, r))) : Promise.resolve([] as TurnHit[][]),
    Promise.all(windowRetrievers.map((r) => deps.search.interactions(query, r))),
    sources.has('artifacts') && detail && retrievers.includes('fulltext') ? searchMemories({ detail }, userId, body.query, query.limit) : Promise.resolve([] as MemoryHit[]),
  ]);

  const windows = reciprocalRankFusion(windowLists.map((items, i) => ({ items, weight: RETRIEVER_WEIGHTS[windowRetrievers[i]!] })), (w: WindowHit) => w.id);
  const facts: { fact: Omit<Fact, 'score' | 'tokens'>; score: number }[] = [];
  if (sources.has('turns')) {
    const turns = reciprocalRankFusion(turnLists.map((items, i) => ({ items, weight: RETRIEVER_WEIGHTS[retrievers[i]!] })), (t: TurnHit) => turnKey(t.sessionId, t.seq));
    const windowScoreByTurn = new Map<string, number>();
    for (const { item, score } of windows) {
      for (let seq = item.seqRange[0]; seq <= item.seqRange[1]; seq++) windowScoreByTurn.set(turnKey(item.sessionId, seq), score);
    }
    for (const { item, score } of turns) {
      const boost = WINDOW_TO_TURN_WEIGHT * (windowScoreByTurn.get(turnKey(item.sessionId, item.seq)) ?? 0);
      facts.push({ fact: turnFact(item), score: score + boost });
    }
  }
  if (sources.has('interactions')) {
    for (const { item, score } of windows) facts.push({ fact: windowFact(item), score });
  }
  // Artifacts are ranked by word match; the same RRF scale puts them among the conversation facts.
  artifacts.filter((a) => matchesFilters(a, query.filters)).forEach((item, index) => facts.push({ fact: artifactFact(item), score: 1 / (60 + index + 1) }));
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
