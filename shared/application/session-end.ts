import { z } from 'zod';
import { eventKey, isTurn, SCHEMA_VERSION, type EventDraft, type MemoryEvent } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { InsightDocument } from '../contracts/insights.js';
import { ORCHESTRATIONS, sessionEndInstanceId } from '../contracts/operations.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { insightId } from '../domain/reflection.js';
import { decideAggregation, decideCompletion, decideEnd, decideReflection, decideSummary, newSession, sessionOf } from '../domain/session.js';
import { renderTranscript } from '../domain/turns.js';
import { refuseUnlessEventsKept, refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';
import type { ExtractedInsight } from './model-tasks.js';
import type { OrchestrationClient } from './operation-ports.js';
import type { Deps, ReflectionConfig } from './ports.js';
import { append, applyEvents, projectSession } from './project-session.js';
import { eraseInsightsOfForgotten, originsOfStreams } from './reflection-sources.js';

export type SessionEndDeps = Pick<Deps, 'events' | 'sessions' | 'interactions' | 'search' | 'insights' | 'directory' | 'chat' | 'embedder' | 'periods' | 'clock' | 'memory'> & {
  reflection: ReflectionConfig;
};

/** Each step's result, checked by the activity before it is handed back to the orchestration. */
export const FinalPruneResult = z.object({ chunkedThroughSeq: z.number().int().nonnegative(), interactionsWritten: z.number().int().nonnegative() });
export const SummaryResult = z.object({ summary: z.string(), keyTopics: z.array(z.string()), reused: z.boolean() });
export const ReflectionResult = z.object({ reflectionFlag: z.enum(['insight', 'no-insight']), insightIds: z.array(z.string()), dropped: z.number().int().nonnegative(), reused: z.boolean() });
export const AggregationResult = z.object({ aggregated: z.boolean(), sessionIds: z.array(z.string()), insightIds: z.array(z.string()) });
export const CompletionResult = z.object({ status: z.enum(['active', 'ending', 'completed']), reflectionStatus: z.enum(['pending', 'no-insight', 'processed']) });

/** The whole stream of a session and its fold: what a step decides from. */
async function stream(deps: Pick<Deps, 'events'>, key: SessionKey): Promise<{ events: MemoryEvent[]; state: SessionDocument }> {
  const events = await deps.events.read(key, 0);
  if (events.length === 0) throw notFound(`Session ${key.sessionId}`);
  return { events, state: sessionOf(key, events) };
}

/**
 * Appends what a step decided and applies it to the read models at once, so the steps and reads after it see it.
 * `recorded` is false when another writer recorded the same decision first (the caller then reports that one).
 */
async function record(deps: SessionEndDeps, key: SessionKey, drafts: readonly EventDraft[]): Promise<{ recorded: boolean; session: SessionDocument | null }> {
  const recorded = await append(deps, key, drafts);
  const { session } = await applyEvents(deps, key);
  return { recorded: recorded !== null, session };
}

/** What ending a session needs: the stores it reads and writes and, when present, the tombstones it checks. */
export type EndDeps = Pick<Deps, 'events' | 'sessions' | 'clock'> & { forgets?: ForgetStore };

/**
 * Records the end request (client, Service Bus or idle timeout) as an event; from then on the session takes no more
 * turns. Ending an ending or completed session records nothing (the event store keeps one end request per session).
 * Unknown sessions are `not_found`; while the user or the session is being forgotten, 409 `forget_in_progress` (so no
 * session end starts for a stream that is going).
 */
export async function requestSessionEnd(deps: EndDeps, key: SessionKey, reason: 'client' | 'idle'): Promise<{ recorded: boolean }> {
  const [stored, lastSeq] = await Promise.all([deps.sessions.get(key), deps.events.lastSeq(key)]);
  if (lastSeq === 0) throw notFound(`Session ${key.sessionId}`);
  await refuseWhileForgetting(deps, key);
  // The projection may lag behind the stream; the event's key makes a second end request a no-op either way.
  const recorded = await append(deps, key, decideEnd(stored?.doc ?? newSession(key, new Date(0)), reason));
  // Cosmos DB: a forget that began before the write landed purges it (the request enlists with it), or already did.
  if (recorded) await refuseUnlessEventsKept(deps, key, recorded.map((e) => ({ seq: e.metadata.seq, eventKey: eventKey(e) })));
  return { recorded: recorded !== null };
}

/**
 * Final prune: brings the projection up to date and summarises the trailing partial window (fewer than k turns) as
 * one last interaction, so every turn of the ended session is summarised and searchable. Idempotent: each window is
 * decided once (its event key).
 */
export async function finalPrune(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof FinalPruneResult>> {
  const { chunkedThroughSeq, interactionsWritten } = await projectSession(deps, key, { final: true });
  return { chunkedThroughSeq, interactionsWritten };
}

/** The session summary and key topics, recorded in a `SessionSummarised` event (the projection embeds it). Reused if recorded. */
export async function summariseSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof SummaryResult>> {
  const { events, state } = await stream(deps, key);
  if (state.summary !== undefined) return { summary: state.summary, keyTopics: state.keyTopics ?? [], reused: true };
  const turns = events.filter(isTurn);
  if (turns.length === 0) return { summary: '', keyTopics: [], reused: false };
  const result = await deps.chat.run('sessionSummary', { conversation: renderTranscript(turns) });
  if (!(await record(deps, key, decideSummary(state, result, deps.chat.model, deps.clock.now()))).recorded) return summariseSession(deps, key);
  return { ...result, reused: false };
}

/** Turns extracted insights into documents: below-threshold ones dropped, ids derived from source and content. */
async function insightDocuments(
  deps: SessionEndDeps,
  userId: string,
  sourceSessionIds: readonly string[],
  extracted: readonly ExtractedInsight[],
  type: InsightDocument['type'],
  createdAt: string,
): Promise<{ docs: InsightDocument[]; dropped: number }> {
  const kept = extracted.filter((i) => i.confidence >= deps.reflection.confidenceThreshold);
  const byId = new Map(kept.map((i) => [insightId(userId, sourceSessionIds, i.category, i.text), i]));
  const entries = [...byId];
  const vectors = entries.length > 0 ? await deps.embedder.embed(entries.map(([, i]) => i.text)) : [];
  const docs = entries.map(([id, i], n): InsightDocument => ({
    schemaVersion: SCHEMA_VERSION,
    id,
    userId,
    type,
    sessionId: sourceSessionIds[0]!,
    sourceSessionIds: [...sourceSessionIds],
    category: i.category,
    text: i.text,
    confidence: i.confidence,
    importance: i.importance,
    status: 'pending',
    embeddingModel: deps.embedder.model,
    insightVector: vectors[n]!,
    createdAt,
    updatedAt: createdAt,
  }));
  return { docs, dropped: extracted.length - kept.length };
}

/**
 * Session reflection: insights in the configured categories, or `no-insight`, recorded in a `SessionReflected` event.
 * If insights of this session exist without that event (an earlier attempt crashed in between), they are reused and
 * no model is called again.
 */
export async function reflectSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof ReflectionResult>> {
  const { events, state } = await stream(deps, key);
  if (state.reflectionStatus !== 'pending') return reflected(state.insightIds ?? [], 0, true);
  const existing = await deps.insights.list(key.userId, { type: 'session', sessionId: key.sessionId });
  let insightIds = existing.map((i) => i.id);
  let dropped = 0;
  if (existing.length === 0) {
    const userTurns = events.filter(isTurn).filter((t) => t.data.role === 'user');
    const extracted = userTurns.length === 0 ? { insights: [] } : await deps.chat.run('sessionInsights', { conversation: renderTranscript(userTurns), categories: deps.reflection.categories });
    const createdAt = state.lastTurnAt ?? deps.clock.now().toISOString();
    const made = await insightDocuments(deps, key.userId, [key.sessionId], extracted.insights, 'session', createdAt);
    await deps.insights.upsert(made.docs);
    insightIds = made.docs.map((d) => d.id);
    dropped = made.dropped;
  }
  if (!(await record(deps, key, decideReflection(state, insightIds, dropped, deps.chat.model))).recorded) return reflectSession(deps, key);
  return reflected(insightIds, dropped, existing.length > 0);
}

const reflected = (insightIds: string[], dropped: number, reused: boolean): z.infer<typeof ReflectionResult> => ({
  reflectionFlag: insightIds.length > 0 ? 'insight' : 'no-insight',
  insightIds,
  dropped,
  reused,
});

/**
 * No-insight aggregation: once `minSessionsForAggregation` completed sessions of the user reflected to `no-insight`,
 * their user turns are reflected on together (what no single session showed may show across them); each session then
 * records `SessionAggregated` and is `processed`. Idempotent: insight ids derive from the set of sessions.
 */
export async function aggregateNoInsightSessions(deps: SessionEndDeps, userId: string): Promise<z.infer<typeof AggregationResult>> {
  const sessions = await deps.directory.byReflectionStatus(userId, 'no-insight');
  if (sessions.length < deps.reflection.minSessionsForAggregation) return { aggregated: false, sessionIds: sessions.map((s) => s.sessionId), insightIds: [] };
  const streams = await Promise.all(sessions.map((s) => stream(deps, s)));
  const turns = streams.flatMap((s) => s.events.filter(isTurn)).filter((t) => t.data.role === 'user');
  const sessionIds = sessions.map((s) => s.sessionId);
  let docs: InsightDocument[] = [];
  if (turns.length > 0) {
    const extracted = await deps.chat.run('sessionInsights', { conversation: renderTranscript(turns), categories: deps.reflection.categories });
    const createdAt = turns.map((t) => t.data.timestamp).sort().at(-1)!;
    docs = (await insightDocuments(deps, userId, sessionIds, extracted.insights, 'aggregate', createdAt)).docs;
    await deps.insights.upsert(docs);
    // A session forgotten while the model was called (see reflection-sources.ts): its text is in these insights, and
    // its forget is done. They go; the sessions left are aggregated again by the next session end.
    const read = originsOfStreams(sessions.map((s, i) => ({ sessionId: s.sessionId, events: streams[i]!.events })));
    if ((await eraseInsightsOfForgotten(deps, userId, read, docs)).size > 0) return { aggregated: false, sessionIds, insightIds: [] };
  }
  const insightIds = docs.map((d) => d.id);
  for (const [i, key] of sessions.entries()) await record(deps, key, decideAggregation(streams[i]!.state, sessionIds, insightIds));
  return { aggregated: true, sessionIds, insightIds };
}

/** The last step: `SessionCompleted` (its end time kept from the summary step, else its last turn). */
export async function completeSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof CompletionResult>> {
  const { state } = await stream(deps, key);
  const { session } = await record(deps, key, decideCompletion(state, deps.clock.now()));
  const { status, reflectionStatus } = session ?? state;
  return { status, reflectionStatus };
}

/**
 * Ends a session (HTTP, Service Bus or idle timeout): records the request and starts the session-end orchestration
 * under an id derived from the session, so ending twice runs it once. The operation id is that instance id.
 */
export async function endSession(deps: EndDeps, orchestrations: Pick<OrchestrationClient, 'start'>, key: SessionKey, reason: 'client' | 'idle'): Promise<{ operationId: string; started: boolean }> {
  await requestSessionEnd(deps, key, reason);
  const { instanceId, started } = await orchestrations.start(ORCHESTRATIONS.sessionEnd, sessionEndInstanceId(key.userId, key.sessionId), { userId: key.userId, sessionId: key.sessionId });
  return { operationId: instanceId, started };
}

/**
 * The idle timeout: every active session without a turn for `timeoutMinutes` is ended (reason `idle`). One being
 * forgotten is skipped (its forget removes it), so it does not keep the others from being ended.
 */
export async function endIdleSessions(
  deps: EndDeps & Pick<Deps, 'directory'>,
  orchestrations: Pick<OrchestrationClient, 'start'>,
  timeoutMinutes: number,
  limit = 500,
): Promise<{ ended: string[] }> {
  const cutoff = new Date(deps.clock.now().getTime() - timeoutMinutes * 60_000);
  const idle = await deps.directory.idleSessions(cutoff, limit);
  const ended: string[] = [];
  for (const key of idle) {
    try {
      ended.push((await endSession(deps, orchestrations, key, 'idle')).operationId);
    } catch (error) {
      if (!(error instanceof MemoryError && error.code === 'forget_in_progress')) throw error;
    }
  }
  return { ended };
}
