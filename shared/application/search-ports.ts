import type { Retriever } from '../contracts/facts.js';
import type { Period } from '../domain/time-expressions.js';

/** One turn as the search index holds it: the text that is matched, and its provenance. */
export interface IndexedTurn {
  userId: string;
  sessionId: string;
  seq: number;
  turnId: string;
  agentId?: string;
  /** Who said it: the turn's name, else its role. */
  speaker: string;
  /** `speaker: content`, what a fact shows. */
  text: string;
  /** What full text matches: the turn with the turns before it. */
  matchText: string;
  timestamp: string;
  /** The period the turn's text refers to, resolved against its timestamp (time-expressions.ts `periodReferredTo`). */
  refers?: Period;
  embeddingModel: string;
  vector: number[];
}

export interface SearchFilters {
  sessionId?: string;
  agentId?: string;
  from?: string;
  to?: string;
}

export interface SearchQuery {
  userId: string;
  text: string;
  /** The query embedding, with the model that made it: only vectors of the same model are compared. */
  vector?: { model: string; values: number[] };
  limit: number;
  filters: SearchFilters;
  /**
   * One object shared by the lists of one search (fact search sets it): an index that keeps a copy of the rows may
   * bring it up to date once per search rather than once per list (search snapshots).
   */
  search?: object;
}

/**
 * A ranked turn: what ranking reads, and what its fact shows (`shown`). An index that ranks without reading the rows
 * (search snapshots) leaves `shown` out; `SearchIndex.show` reads it for the facts returned only.
 */
export interface TurnHit {
  kind: 'turn';
  sessionId: string;
  seq: number;
  agentId?: string;
  speaker: string;
  timestamp: string;
  /** The period the turn refers to (IndexedTurn.refers), when it names one. */
  refers?: Period;
  /** The turn's text ends by asking a question (fact-ranking.ts `asksQuestion`); absent when it does not. */
  asks?: true;
  shown?: TurnShown;
}
export interface TurnShown {
  turnId: string;
  text: string;
}

/** A ranked interaction, as TurnHit: what ranking reads, and what its fact shows (`shown`, read later when left out). */
export interface WindowHit {
  kind: 'interaction';
  id: string;
  sessionId: string;
  seqRange: [number, number];
  agentIds: string[];
  timestamp: string;
  shown?: WindowShown;
}
export interface WindowShown {
  turnIds: string[];
  summary: string;
}

/** Ranked candidate lists, best first, one per retriever and granularity; the use case fuses them. */
export interface SearchIndex {
  indexTurns(turns: readonly IndexedTurn[]): Promise<void>;
  /**
   * The vectors indexed with a session's turns (`IndexedTurn.vector`) by seq, those of `model` only: what a window
   * decided after its turns reads instead of embedding them again, as float32 (how both stores keep them: half the
   * memory of numbers while a window's projection waits for its statements). A turn not indexed is left out.
   */
  turnVectors(key: { userId: string; sessionId: string }, seqs: readonly number[], model: string): Promise<Map<number, Float32Array>>;
  /** Everyone who speaks in the user's indexed turns (`IndexedTurn.speaker`), each once. */
  speakers(userId: string): Promise<string[]>;
  turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]>;
  interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]>;
  /**
   * The hits given with what their facts show (`shown`), in the same order; a hit whose row is gone meanwhile is left
   * out. One read per table at most, of the hits without `shown` only.
   */
  show(userId: string, hits: { turns: readonly TurnHit[]; interactions: readonly WindowHit[] }): Promise<{ turns: TurnHit[]; interactions: WindowHit[] }>;
}

/** One insight found by fact search (only `pending` and `processed` insights: superseded and merged ones are skipped). */
export interface InsightHit {
  kind: 'insight';
  id: string;
  type: 'session' | 'aggregate';
  /** The session it came from (an aggregate: the first of `sourceSessionIds`). */
  sessionId: string;
  sourceSessionIds: string[];
  category: string;
  text: string;
  /** The insight's `createdAt`: when the turns it was drawn from ended. */
  timestamp: string;
  /** A session insight: its session's turns, `[1, last turn seq]`, when the session document is there. */
  seqRange?: [number, number];
}

/** One ended session's summary found by fact search. */
export interface SessionSummaryHit {
  kind: 'sessionSummary';
  sessionId: string;
  summary: string;
  keyTopics: string[];
  agentIds: string[];
  /** The session's turns: `[1, last turn seq]` (seqs start at 1; after the final prune the last interaction ends at the last turn). */
  seqRange?: [number, number];
  /** The session's first turn. */
  startedAt: string;
  endedAt: string;
}

/**
 * Ranked candidate lists over insights and over session summaries, one per retriever, best first. Filters: the
 * session (an aggregate insight matches each of its sessions), the agent (an insight: an agent that took part in one of
 * its sessions; a summary: in its session) and the time range (an insight's `createdAt`, a session's `startedAt`).
 */
export interface InsightSearch {
  /** One list per retriever, in the order given: asked together, so what the lists share (their sessions) is read once. */
  search(query: SearchQuery, retrievers: readonly Retriever[]): Promise<InsightHit[][]>;
}
export interface SessionSummarySearch {
  searchSummaries(query: SearchQuery, retriever: Retriever): Promise<SessionSummaryHit[]>;
}
