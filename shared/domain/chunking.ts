import type { TurnAppended } from '../contracts/events.js';

export interface TurnWindow {
  fromSeq: number;
  toSeq: number;
  turns: TurnAppended[];
}

/**
 * Splits the turns recorded after the last interaction (the `chunkedThroughSeq` checkpoint) into the turns of full
 * interactions of `k` turns each. A trailing partial run is left for later: it stays verbatim in the context until it fills up.
 */
export function fullWindows(turnsAfterCheckpoint: readonly TurnAppended[], k: number): TurnWindow[] {
  const windows: TurnWindow[] = [];
  for (let i = 0; i + k <= turnsAfterCheckpoint.length; i += k) {
    const turns = turnsAfterCheckpoint.slice(i, i + k);
    windows.push({ fromSeq: turns[0]!.metadata.seq, toSeq: turns[k - 1]!.metadata.seq, turns });
  }
  return windows;
}

/**
 * The turns a session summary (or a session's insight) stands for: seqs start at 1 and the final prune (before summary
 * and reflection) makes the last interaction end at the last turn. Undefined while no interaction exists.
 */
export const sessionSeqRange = (chunkedThroughSeq: number | null | undefined): [number, number] | undefined =>
  typeof chunkedThroughSeq === 'number' && chunkedThroughSeq >= 1 ? [1, chunkedThroughSeq] : undefined;

export const padSeq = (seq: number): string => String(seq).padStart(10, '0');

/** The same turns always give the same interaction id, so a re-delivered change never duplicates an interaction. */
export const interactionId = (sessionId: string, fromSeq: number): string => `${sessionId}:${padSeq(fromSeq)}`;
