import { isTurn, SCHEMA_VERSION, type MemoryEvent, type TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { InteractionDocument } from '../contracts/interactions.js';
import { fullWindows, interactionId } from '../domain/chunking.js';
import { MemoryError } from '../domain/errors.js';
import { evolveSession, newSession } from '../domain/session.js';
import { renderTranscript } from '../domain/turns.js';
import type { Deps } from './ports.js';

type ProjectionDeps = Pick<Deps, 'events' | 'sessions' | 'interactions' | 'search' | 'chat' | 'embedder' | 'clock' | 'memory'>;

export interface ProjectionResult {
  projectedThroughSeq: number;
  chunkedThroughSeq: number;
  interactionsWritten: number;
}

const MAX_ATTEMPTS = 5;
/**
 * How many earlier turns of the session a turn's full text is matched with. On LoCoMo two beat one (R@10 +0.02 in
 * the in-memory study behind README's Fact search figures) and three gave nothing more.
 */
const MATCH_CONTEXT_TURNS = 2;

/**
 * Brings one session's projection up to date with its events: folds new events into the session document and turns
 * every full window of k turns into an interaction (metadata, embeddings) while extending the cumulative summary.
 * Idempotent: interactions have deterministic ids and the session document is written with optimistic concurrency,
 * so a repeated or concurrent run converges on the same state.
 */
export async function projectSession(deps: ProjectionDeps, key: SessionKey): Promise<ProjectionResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await projectOnce(deps, key);
    } catch (error) {
      if (!(error instanceof MemoryError && error.code === 'conflict') || attempt >= MAX_ATTEMPTS) throw error;
    }
  }
}

async function projectOnce(deps: ProjectionDeps, key: SessionKey): Promise<ProjectionResult> {
  const stored = await deps.sessions.get(key);
  const session = stored?.doc ?? newSession(key, deps.clock.now());
  // A few events earlier than needed: the turns before the first new one are the context it is indexed with.
  const fromSeq = Math.min(session.projectedThroughSeq, session.chunkedThroughSeq);
  const events = await deps.events.read(key, Math.max(0, fromSeq - MATCH_CONTEXT_TURNS));
  const result = { projectedThroughSeq: session.projectedThroughSeq, chunkedThroughSeq: session.chunkedThroughSeq, interactionsWritten: 0 };
  if (events.length === 0 || (stored && events.at(-1)!.metadata.seq <= session.projectedThroughSeq)) return result;

  const evolved = evolveSession(session, events);
  const pendingTurns = events.filter(isTurn).filter((t) => t.metadata.seq > session.chunkedThroughSeq);
  const windows = fullWindows(pendingTurns, deps.memory.kTurnBuffer);

  let cumulativeSummary = session.cumulativeSummary;
  const drafts: Omit<InteractionDocument, 'contentVector' | 'summaryVector'>[] = [];
  const now = deps.clock.now().toISOString();
  for (const window of windows) {
    const content = renderTranscript(window.turns);
    const metadata = await deps.chat.run('windowMetadata', { conversation: content, previousSummary: cumulativeSummary });
    cumulativeSummary = metadata.cumulativeSummary;
    drafts.push({
      schemaVersion: SCHEMA_VERSION,
      id: interactionId(key.sessionId, window.fromSeq),
      userId: key.userId,
      sessionId: key.sessionId,
      agentIds: unique(window.turns.flatMap((t) => (t.data.agentId ? [t.data.agentId] : []))),
      turnIds: window.turns.map((t) => t.data.turnId),
      seqRange: [window.fromSeq, window.toSeq],
      startedAt: window.turns[0]!.data.timestamp,
      endedAt: window.turns.at(-1)!.data.timestamp,
      content,
      summary: metadata.summary,
      topics: metadata.topics,
      entities: metadata.entities,
      embeddingModel: deps.embedder.model,
      createdAt: now,
    });
  }

  // Every newly projected turn becomes searchable on its own, without waiting for its window to fill.
  const allTurns = events.filter(isTurn);
  const newTurns = allTurns.filter((t) => t.metadata.seq > session.projectedThroughSeq);
  const turnTexts = newTurns.map(searchableText);
  // Full text matches a turn together with the turns it answers: replies ("yes, last Saturday") rarely repeat the
  // question's words. The vector embeds the turn alone (on LoCoMo, context made the offline encoder's vectors worse).
  const matchTexts = newTurns.map((t, i) => {
    const at = allTurns.indexOf(t);
    return [...allTurns.slice(Math.max(0, at - MATCH_CONTEXT_TURNS), at).map(searchableText), turnTexts[i]!].join('\n');
  });
  if (drafts.length + newTurns.length > 0) {
    // One embedding batch per run: window contents and summaries, then the turns.
    const vectors = await deps.embedder.embed([...drafts.flatMap((d) => [d.content, d.summary]), ...turnTexts]);
    await deps.interactions.upsert(drafts.map((d, i) => ({ ...d, contentVector: vectors[2 * i]!, summaryVector: vectors[2 * i + 1]! })));
    const offset = 2 * drafts.length;
    await deps.search.indexTurns(
      newTurns.map((t, i) => ({
        ...key,
        seq: t.metadata.seq,
        turnId: t.data.turnId,
        ...(t.data.agentId && { agentId: t.data.agentId }),
        speaker: speakerOf(t),
        text: turnTexts[i]!,
        matchText: matchTexts[i]!,
        timestamp: t.data.timestamp,
        embeddingModel: deps.embedder.model,
        vector: vectors[offset + i]!,
      })),
    );
  }

  const chunkedThroughSeq = windows.at(-1)?.toSeq ?? session.chunkedThroughSeq;
  await deps.sessions.put({ ...evolved, chunkedThroughSeq, cumulativeSummary, updatedAt: now }, stored?.version ?? null);
  return { projectedThroughSeq: evolved.projectedThroughSeq, chunkedThroughSeq, interactionsWritten: drafts.length };
}

/** The sessions a batch of change-feed events touches, each once, in first-seen order. */
export function touchedSessions(events: readonly MemoryEvent[]): SessionKey[] {
  const seen = new Map<string, SessionKey>();
  for (const e of events) seen.set(JSON.stringify([e.metadata.userId, e.metadata.sessionId]), { userId: e.metadata.userId, sessionId: e.metadata.sessionId });
  return [...seen.values()];
}

/** Projects every session a change-feed batch touched. Sessions are independent, so they run in parallel (bounded). */
export async function projectChanges(deps: ProjectionDeps, events: readonly MemoryEvent[], parallelism = 4): Promise<ProjectionResult[]> {
  const queue = touchedSessions(events);
  const results: ProjectionResult[] = [];
  const worker = async () => {
    for (let key = queue.shift(); key; key = queue.shift()) results.push(await projectSession(deps, key));
  };
  await Promise.all(Array.from({ length: Math.min(parallelism, queue.length) }, worker));
  return results;
}

const unique = <T>(items: readonly T[]): T[] => [...new Set(items)];

const speakerOf = (t: TurnAppended): string => t.data.name ?? t.data.role;

/** What search matches for a turn: the speaker and what was said. */
const searchableText = (t: TurnAppended): string => `${speakerOf(t)}: ${t.data.content}`;
