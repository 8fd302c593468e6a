import type { TurnHit, WindowHit } from '../../application/search-ports.js';

/** A turn's columns as the search statements select them (alias `t`), and the row they make. */
export const TURN_COLUMNS = 't.session_id, t.seq, t.turn_id, t.agent_id, t.speaker, t.text, t.occurred_at';
export type TurnRow = { session_id: string; seq: number; turn_id: string; agent_id: string | null; speaker: string; text: string; occurred_at: Date | string };

/**
 * An interaction's columns as the search statements select them (alias `i`), and the row they make: of its document
 * only what a hit shows (not its content, which can be long).
 */
export const WINDOW_COLUMNS = `i.id, i.session_id, jsonb_build_object('seqRange', i.doc->'seqRange', 'turnIds', i.doc->'turnIds', 'agentIds', i.doc->'agentIds', 'summary', i.doc->'summary', 'startedAt', i.doc->'startedAt') AS doc`;
export type WindowRow = { id: string; session_id: string; doc: { seqRange: [number, number]; turnIds: string[]; agentIds: string[]; summary: string; startedAt: string } };

export const turnHit = (r: TurnRow): TurnHit => ({
  kind: 'turn',
  sessionId: r.session_id,
  seq: r.seq,
  turnId: r.turn_id,
  ...(r.agent_id && { agentId: r.agent_id }),
  speaker: r.speaker,
  text: r.text,
  timestamp: new Date(r.occurred_at).toISOString(),
});

export const windowHit = (r: WindowRow): WindowHit => ({
  kind: 'interaction',
  id: r.id,
  sessionId: r.session_id,
  seqRange: r.doc.seqRange,
  turnIds: r.doc.turnIds,
  agentIds: r.doc.agentIds,
  summary: r.doc.summary,
  timestamp: r.doc.startedAt,
});
