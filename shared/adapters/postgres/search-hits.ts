import type { TurnHit, TurnShown, WindowHit } from '../../application/search-ports.js';
import { asksQuestion } from '../../domain/fact-ranking.js';
import type { Db } from './db.js';

/** A turn's columns as the search statements select them (alias `t`), and the row they make. */
export const TURN_COLUMNS = 't.session_id, t.seq, t.turn_id, t.agent_id, t.speaker, t.text, t.occurred_at, t.refers_from, t.refers_to';
export type TurnRow = {
  session_id: string;
  seq: number;
  turn_id: string;
  agent_id: string | null;
  speaker: string;
  text: string;
  occurred_at: Date | string;
  refers_from: Date | string | null;
  refers_to: Date | string | null;
};

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
  ...(r.agent_id && { agentId: r.agent_id }),
  speaker: r.speaker,
  timestamp: new Date(r.occurred_at).toISOString(),
  ...(r.refers_from && r.refers_to && { refers: { from: new Date(r.refers_from).toISOString(), to: new Date(r.refers_to).toISOString() } }),
  ...(asksQuestion(r.text) && { asks: true }),
  shown: { turnId: r.turn_id, text: r.text },
});

export const windowHit = (r: WindowRow): WindowHit => ({
  kind: 'interaction',
  id: r.id,
  sessionId: r.session_id,
  seqRange: r.doc.seqRange,
  agentIds: r.doc.agentIds,
  timestamp: r.doc.startedAt,
  shown: { turnIds: r.doc.turnIds, summary: r.doc.summary },
});

/**
 * SearchIndex.show over PostgreSQL: the hits without `shown` read it, one statement per table by primary key (only
 * the columns a fact shows: a turn's id and text, an interaction's turn ids and summary, and its start as written); a
 * hit whose row is gone is left out.
 */
export async function showHits(db: Db, userId: string, hits: { turns: readonly TurnHit[]; interactions: readonly WindowHit[] }): Promise<{ turns: TurnHit[]; interactions: WindowHit[] }> {
  const turnsToRead = hits.turns.filter((h) => !h.shown);
  const windowsToRead = hits.interactions.filter((h) => !h.shown);
  const [turnRows, windowRows] = await Promise.all([
    turnsToRead.length
      ? db.query<{ session_id: string; seq: number; turn_id: string; text: string }>(
          `SELECT t.session_id, t.seq, t.turn_id, t.text FROM unnest($2::text[], $3::int[]) AS k(session_id, seq)
           JOIN memory_turns t ON t.user_id = $1 AND t.session_id = k.session_id AND t.seq = k.seq`,
          [userId, turnsToRead.map((h) => h.sessionId), turnsToRead.map((h) => h.seq)],
        )
      : [],
    windowsToRead.length
      ? db.query<{ id: string; turn_ids: string[]; summary: string; started_at: string }>(
          `SELECT i.id, i.doc->'turnIds' AS turn_ids, i.doc->>'summary' AS summary, i.doc->>'startedAt' AS started_at FROM interactions i WHERE i.user_id = $1 AND i.id = ANY($2::text[])`,
          [userId, windowsToRead.map((h) => h.id)],
        )
      : [],
  ]);
  const turns = new Map(turnRows.map((r): [string, TurnShown] => [`${r.session_id}#${r.seq}`, { turnId: r.turn_id, text: r.text }]));
  const windows = new Map(windowRows.map((r) => [r.id, r]));
  return {
    turns: hits.turns.flatMap((h) => {
      const shown = h.shown ?? turns.get(`${h.sessionId}#${h.seq}`);
      return shown ? [{ ...h, shown }] : [];
    }),
    interactions: hits.interactions.flatMap((h) => {
      if (h.shown) return [h];
      const r = windows.get(h.id);
      // The time as the document has it (an index may rank by the instant alone).
      return r ? [{ ...h, timestamp: r.started_at, shown: { turnIds: r.turn_ids, summary: r.summary } }] : [];
    }),
  };
}
