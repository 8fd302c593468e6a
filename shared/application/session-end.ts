import { z } from 'zod';
import { isTurn, SCHEMA_VERSION, type TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { InsightDocument } from '../contracts/insights.js';
import { ORCHESTRATIONS, sessionEndInstanceId } from '../contracts/operations.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { interactionId } from '../domain/chunking.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { insightId } from '../domain/reflection.js';
import { renderTranscript } from '../domain/turns.js';
import type { ExtractedInsight } from './model-tasks.js';
import type { OrchestrationClient } from './operation-ports.js';
import type { Deps, ReflectionConfig } from './ports.js';
import { projectSession } from './project-session.js';

export type SessionEndDeps = Pick<Deps, 'events' | 'sessions' | 'interactions' | 'search' | 'insights' | 'directory' | 'chat' | 'embedder' | 'clock' | 'memory'> & {
  reflection: ReflectionConfig;
};

/** Each step's result, checked by the activity before it is handed back to the orchestration. */
export const FinalPruneResult = z.object({ chunkedThroughSeq: z.number().int().nonnegative(), interactionsWritten: z.number().int().nonnegative() });
export const SummaryResult = z.object({ summary: z.string(), keyTopics: z.array(z.string()), reused: z.boolean() });
export const ReflectionResult = z.object({ reflectionFlag: z.enum(['insight', 'no-insight']), insightIds: z.array(z.string()), dropped: z.number().int().nonnegative(), reused: z.boolean() });
export const AggregationResult = z.object({ aggregated: z.boolean(), sessionIds: z.array(z.string()), insightIds: z.array(z.string()) });
export const CompletionResult = z.object({ status: z.enum(['active', 'ending', 'completed']), reflectionStatus: z.enum(['pending', 'no-insight', 'processed']) });

/** Reads, changes and writes the session document with optimistic concurrency, retrying on a concurrent change. */
async function updateSession(deps: Pick<Deps, 'sessions'>, key: SessionKey, change: (doc: SessionDocument) => SessionDocument | null): Promise<SessionDocument> {
  for (let attempt = 1; ; attempt++) {
    const stored = await deps.sessions.get(key);
    if (!stored) throw notFound(`Session ${key.sessionId}`);
    const next = change(stored.doc);
    if (!next) return stored.doc;
    try {
      await deps.sessions.put(next, stored.version);
      return next;
    } catch (error) {
      if (!(error instanceof MemoryError && error.code === 'conflict') || attempt >= 8) throw error;
    }
  }
}

async function allTurns(deps: Pick<Deps, 'events'>, key: SessionKey): Promise<TurnAppended[]> {
  return (await deps.events.read(key, 0)).filter(isTurn);
}

/**
 * Records the end request (client, Service Bus or idle timeout) as an event, so the projection marks the session
 * `ending`. A session that is not active any more is left alone. Unknown sessions are `not_found`.
 */
export async function requestSessionEnd(deps: Pick<Deps, 'events' | 'sessions' | 'clock'>, key: SessionKey, reason: 'client' | 'idle'): Promise<{ recorded: boolean }> {
  const [stored, lastSeq] = await Promise.all([deps.sessions.get(key), deps.events.lastSeq(key)]);
  if (!stored && lastSeq === 0) throw notFound(`Session ${key.sessionId}`);
  if (stored && stored.doc.status !== 'active') return { recorded: false };
  const [last] = await deps.events.read(key, lastSeq - 1, 1);
  if (last?.type === 'SessionEndRequested') return { recorded: false };
  await deps.events.append(key, [{ type: 'SessionEndRequested', data: { reason } }], deps.clock.now());
  return { recorded: true };
}

/**
 * Final prune: brings the projection up to date, then turns the trailing partial window (fewer than k turns) into one
 * last interaction, so every turn of the ended session is summarised and searchable. Idempotent (deterministic ids,
 * `chunkedThroughSeq` checkpoint).
 */
export async function finalPrune(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof FinalPruneResult>> {
  await projectSession(deps, key);
  const stored = await deps.sessions.get(key);
  if (!stored) throw notFound(`Session ${key.sessionId}`);
  const rest = (await deps.events.read(key, stored.doc.chunkedThroughSeq)).filter(isTurn);
  if (rest.length === 0) return { chunkedThroughSeq: stored.doc.chunkedThroughSeq, interactionsWritten: 0 };

  const content = renderTranscript(rest);
  const metadata = await deps.chat.run('windowMetadata', { conversation: content, previousSummary: stored.doc.cumulativeSummary });
  const [contentVector, summaryVector] = await deps.embedder.embed([content, metadata.summary]);
  const fromSeq = rest[0]!.metadata.seq;
  const toSeq = rest.at(-1)!.metadata.seq;
  const now = deps.clock.now().toISOString();
  await deps.interactions.upsert([
    {
      schemaVersion: SCHEMA_VERSION,
      id: interactionId(key.sessionId, fromSeq),
      userId: key.userId,
      sessionId: key.sessionId,
      agentIds: [...new Set(rest.flatMap((t) => (t.data.agentId ? [t.data.agentId] : [])))],
      turnIds: rest.map((t) => t.data.turnId),
      seqRange: [fromSeq, toSeq],
      startedAt: rest[0]!.data.timestamp,
      endedAt: rest.at(-1)!.data.timestamp,
      content,
      summary: metadata.summary,
      topics: metadata.topics,
      entities: metadata.entities,
      embeddingModel: deps.embedder.model,
      contentVector: contentVector!,
      summaryVector: summaryVector!,
      createdAt: now,
    },
  ]);
  const doc = await updateSession(deps, key, (d) =>
    d.chunkedThroughSeq >= toSeq ? null : { ...d, chunkedThroughSeq: toSeq, cumulativeSummary: metadata.cumulativeSummary, updatedAt: now },
  );
  return { chunkedThroughSeq: doc.chunkedThroughSeq, interactionsWritten: 1 };
}

/** The session summary with its vector and key topics, stored on the session document. Reused if already there. */
export async function summariseSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof SummaryResult>> {
  const stored = await deps.sessions.get(key);
  if (!stored) throw notFound(`Session ${key.sessionId}`);
  if (stored.doc.summary !== undefined) return { summary: stored.doc.summary, keyTopics: stored.doc.keyTopics ?? [], reused: true };
  const turns = await allTurns(deps, key);
  if (turns.length === 0) return { summary: '', keyTopics: [], reused: false };
  const result = await deps.chat.run('sessionSummary', { conversation: renderTranscript(turns) });
  const [summaryVector] = await deps.embedder.embed([result.summary]);
  const now = deps.clock.now().toISOString();
  await updateSession(deps, key, (d) =>
    d.summary !== undefined
      ? null
      : {
          ...d,
          summary: result.summary,
          keyTopics: result.keyTopics,
          summaryVector: summaryVector!,
          embeddingModel: deps.embedder.model,
          endedAt: d.endedAt ?? d.lastTurnAt ?? now,
          updatedAt: now,
        },
  );
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
 * Session reflection: insights in the configured categories, or `no-insight`. If insights of this session already
 * exist (an earlier attempt crashed before the status was written), they are reused and no model is called again.
 */
export async function reflectSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof ReflectionResult>> {
  const stored = await deps.sessions.get(key);
  if (!stored) throw notFound(`Session ${key.sessionId}`);
  const existing = await deps.insights.list(key.userId, { type: 'session', sessionId: key.sessionId });
  let result: z.infer<typeof ReflectionResult>;
  if (stored.doc.reflectionStatus !== 'pending' || existing.length > 0) {
    result = { reflectionFlag: existing.length > 0 ? 'insight' : 'no-insight', insightIds: existing.map((i) => i.id), dropped: 0, reused: true };
  } else {
    const userTurns = (await allTurns(deps, key)).filter((t) => t.data.role === 'user');
    const extracted = userTurns.length === 0 ? { reflectionFlag: 'no-insight' as const, insights: [] } : await deps.chat.run('sessionInsights', { conversation: renderTranscript(userTurns), categories: deps.reflection.categories });
    const createdAt = stored.doc.lastTurnAt ?? deps.clock.now().toISOString();
    const { docs, dropped } = await insightDocuments(deps, key.userId, [key.sessionId], extracted.insights, 'session', createdAt);
    await deps.insights.upsert(docs);
    result = { reflectionFlag: docs.length > 0 ? 'insight' : 'no-insight', insightIds: docs.map((d) => d.id), dropped, reused: false };
  }
  const reflectionStatus = result.reflectionFlag === 'insight' ? 'processed' : 'no-insight';
  await updateSession(deps, key, (d) => (d.reflectionStatus !== 'pending' ? null : { ...d, reflectionStatus, updatedAt: deps.clock.now().toISOString() }));
  return result;
}

/**
 * No-insight aggregation: once `minSessionsForAggregation` completed sessions of the user reflected to `no-insight`,
 * their user turns are reflected on together (what no single session showed may show across them); the sessions are
 * then `processed`. Idempotent: insight ids derive from the set of sessions.
 */
export async function aggregateNoInsightSessions(deps: SessionEndDeps, userId: string): Promise<z.infer<typeof AggregationResult>> {
  const sessions = await deps.directory.byReflectionStatus(userId, 'no-insight');
  if (sessions.length < deps.reflection.minSessionsForAggregation) return { aggregated: false, sessionIds: sessions.map((s) => s.sessionId), insightIds: [] };
  const turns = (await Promise.all(sessions.map((s) => allTurns(deps, s)))).flat().filter((t) => t.data.role === 'user');
  const sessionIds = sessions.map((s) => s.sessionId);
  let docs: InsightDocument[] = [];
  if (turns.length > 0) {
    const extracted = await deps.chat.run('sessionInsights', { conversation: renderTranscript(turns), categories: deps.reflection.categories });
    const createdAt = turns.map((t) => t.data.timestamp).sort().at(-1)!;
    docs = (await insightDocuments(deps, userId, sessionIds, extracted.insights, 'aggregate', createdAt)).docs;
    await deps.insights.upsert(docs);
  }
  for (const key of sessions) {
    await updateSession(deps, key, (d) => (d.reflectionStatus !== 'no-insight' ? null : { ...d, reflectionStatus: 'processed', updatedAt: deps.clock.now().toISOString() }));
  }
  return { aggregated: true, sessionIds, insightIds: docs.map((d) => d.id) };
}

/** The last step: the session is `completed` (its end time kept from the summary step, else its last turn). */
export async function completeSession(deps: SessionEndDeps, key: SessionKey): Promise<z.infer<typeof CompletionResult>> {
  const now = deps.clock.now().toISOString();
  const doc = await updateSession(deps, key, (d) => (d.status === 'completed' ? null : { ...d, status: 'completed', endedAt: d.endedAt ?? d.lastTurnAt ?? now, updatedAt: now }));
  return { status: doc.status, reflectionStatus: doc.reflectionStatus };
}

/**
 * Ends a session (HTTP, Service Bus or idle timeout): records the request and starts the session-end orchestration
 * under an id derived from the session, so ending twice runs it once. The operation id is that instance id.
 */
export async function endSession(deps: Pick<Deps, 'events' | 'sessions' | 'clock'>, orchestrations: Pick<OrchestrationClient, 'start'>, key: SessionKey, reason: 'client' | 'idle'): Promise<{ operationId: string; started: boolean }> {
  await requestSessionEnd(deps, key, reason);
  const { instanceId, started } = await orchestrations.start(ORCHESTRATIONS.sessionEnd, sessionEndInstanceId(key.userId, key.sessionId), { userId: key.userId, sessionId: key.sessionId });
  return { operationId: instanceId, started };
}

/** The idle timeout: every active session without a turn for `timeoutMinutes` is ended (reason `idle`). */
export async function endIdleSessions(
  deps: Pick<Deps, 'events' | 'sessions' | 'directory' | 'clock'>,
  orchestrations: Pick<OrchestrationClient, 'start'>,
  timeoutMinutes: number,
  limit = 500,
): Promise<{ ended: string[] }> {
  const cutoff = new Date(deps.clock.now().getTime() - timeoutMinutes * 60_000);
  const idle = await deps.directory.idleSessions(cutoff, limit);
  const ended: string[] = [];
  for (const key of idle) ended.push((await endSession(deps, orchestrations, key, 'idle')).operationId);
  return { ended };
}
