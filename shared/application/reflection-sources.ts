import type { MemoryEvent } from '../contracts/events.js';
import type { InsightDocument } from '../contracts/insights.js';
import type { Deps } from './ports.js';

/**
 * The sessions a reflection derives text from, checked after its writes (README "Forget": the reflection race). A
 * reflection reads a session's turns or insights, calls a model, then writes what it derived (an aggregate insight, a
 * profile). A forget of that session that purges, scans and clears its tombstone in between would leave the derived
 * text with nothing that remembers the session was forgotten. So the reflection notes each source session's origin
 * (the first event of its stream) when it reads, and reads it again after its last write: a session whose stream
 * still starts with that event is purged after that read, so after the writes, and its forget deletes what they
 * derived (the insights that name it, the profile built from them); a session whose stream is gone, or starts anew
 * (forgotten, then written again), was forgotten meanwhile, and the reflection erases what it derived itself. The
 * same holds for insights a step read and writes back (a status change): written after their purge, they would be
 * their forgotten session's text again.
 */
export type SourceOrigins = ReadonlyMap<string, string | null>;

const originOf = (first: MemoryEvent | undefined): string | null => (first ? `${first.metadata.seq}@${first.metadata.recordedAt}` : null);

/** The origins of streams already read whole. */
export const originsOfStreams = (streams: readonly { sessionId: string; events: readonly MemoryEvent[] }[]): SourceOrigins =>
  new Map(streams.map(({ sessionId, events }) => [sessionId, originOf(events[0])]));

/** Reads each session's origin (one event per session); null for a session without a stream. */
export async function readOrigins(deps: Pick<Deps, 'events'>, userId: string, sessionIds: Iterable<string>): Promise<SourceOrigins> {
  const ids = [...new Set(sessionIds)];
  const firsts = await Promise.all(ids.map((sessionId) => deps.events.read({ userId, sessionId }, 0, 1)));
  return new Map(ids.map((sessionId, i) => [sessionId, originOf(firsts[i]![0])]));
}

/**
 * After the writes: the sessions among `read` forgotten since (no stream then or now, or a stream that starts with
 * another event), and the insights among `written` that name one of them deleted (their text outlived the forget).
 */
export async function eraseInsightsOfForgotten(deps: Pick<Deps, 'events' | 'insights'>, userId: string, read: SourceOrigins, written: readonly InsightDocument[]): Promise<Set<string>> {
  const now = await readOrigins(deps, userId, read.keys());
  const forgotten = new Set([...read].filter(([sessionId, origin]) => origin === null || now.get(sessionId) !== origin).map(([sessionId]) => sessionId));
  if (forgotten.size > 0) await deps.insights.purge(userId, written.filter((i) => i.sourceSessionIds.some((s) => forgotten.has(s))).map((i) => i.id));
  return forgotten;
}
