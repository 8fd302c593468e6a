import type { Retriever } from '../contracts/facts.js';

/** One turn as the search index holds it: the text that is matched, and its provenance. */
export interface IndexedTurn {
  userId: string;
  sessionId: string;
  seq: number;
  turnId: string;
  agentId?: string;
  /** `speaker: content`, what a fact shows. */
  text: string;
  /** What full text matches: the turn with the turn before it. */
  matchText: string;
  timestamp: string;
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
}

export interface TurnHit {
  kind: 'turn';
  sessionId: string;
  seq: number;
  turnId: string;
  agentId?: string;
  text: string;
  timestamp: string;
}

export interface WindowHit {
  kind: 'interaction';
  id: string;
  sessionId: string;
  seqRange: [number, number];
  turnIds: string[];
  agentIds: string[];
  summary: string;
  timestamp: string;
}

/** Ranked candidate lists, best first, one per retriever and granularity; the use case fuses them. */
export interface SearchIndex {
  indexTurns(turns: readonly IndexedTurn[]): Promise<void>;
  turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]>;
  interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]>;
}
