import type { RecentSession } from '../contracts/context.js';
import { SCHEMA_VERSION, type EventDraft, type MemoryEvent, type TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { fullWindows, type TurnWindow } from './chunking.js';

export function newSession({ userId, sessionId }: SessionKey, now: Date): SessionDocument {
  return {
    schemaVersion: SCHEMA_VERSION,
    userId,
    sessionId,
    status: 'active',
    reflectionStatus: 'pending',
    projectedThroughSeq: 0,
    chunkedThroughSeq: 0,
    cumulativeSummary: '',
    turnCount: 0,
    agentIds: [],
    startedAt: null,
    lastTurnAt: null,
    lastActivityAt: null,
    updatedAt: now.toISOString(),
  };
}

const later = (a: string | null | undefined, b: string): string => (a && a > b ? a : b);

/**
 * The one function that changes a session document: the state after one more event. An event at or below
 * `projectedThroughSeq` was folded already and changes nothing, so a re-delivered event is harmless. Every time in
 * the document comes from the events, so folding the same stream always gives the same document.
 */
export function evolve(state: SessionDocument, event: MemoryEvent): SessionDocument {
  const { seq, recordedAt } = event.metadata;
  if (seq <= state.projectedThroughSeq) return state;
  const next: SessionDocument = { ...state, projectedThroughSeq: seq, updatedAt: later(state.updatedAt, recordedAt) };
  switch (event.type) {
    case 'TurnAppended': {
      const { agentId, timestamp } = event.data;
      next.turnCount += 1;
      next.startedAt ??= timestamp;
      next.lastTurnAt = later(next.lastTurnAt, timestamp);
      next.lastActivityAt = later(next.lastActivityAt, recordedAt);
      if (agentId && !next.agentIds.includes(agentId)) next.agentIds = [...next.agentIds, agentId];
      if (agentId) next.activeAgentId = agentId;
      return next;
    }
    case 'SessionEndRequested':
      if (next.status === 'active') next.status = 'ending';
      return next;
    case 'InteractionSummarised':
      if (event.data.fromSeq <= next.chunkedThroughSeq) return next;
      return { ...next, chunkedThroughSeq: event.data.toSeq, cumulativeSummary: event.data.cumulativeSummary };
    case 'SessionInitFixed':
      return { ...next, init: next.init ?? { profile: event.data.profile?.text ?? null, recentSessions: event.data.recentSessions } };
    case 'SessionSummarised':
      if (next.summary !== undefined) return next;
      return { ...next, summary: event.data.summary, keyTopics: event.data.keyTopics, endedAt: next.endedAt ?? event.data.endedAt };
    case 'SessionReflected':
      if (next.reflectionStatus !== 'pending') return next;
      return { ...next, reflectionStatus: event.data.outcome === 'insight' ? 'processed' : 'no-insight', insightIds: event.data.insightIds };
    case 'SessionAggregated':
      if (next.reflectionStatus === 'no-insight') next.reflectionStatus = 'processed';
      return next;
    case 'SessionCompleted':
      return { ...next, status: 'completed', endedAt: next.endedAt ?? event.data.endedAt };
    case 'EventSetAside':
      return { ...next, setAside: [...(next.setAside ?? []), event.data] };
    case 'SessionHandoff': {
      const { handoffId, fromAgentId, toAgentId, note, memoryKeys } = event.data;
      const handoff = { seq, handoffId, fromAgentId, toAgentId, ...(note !== undefined && { note }), memoryKeys, at: recordedAt };
      const agentIds = [...next.agentIds, ...[fromAgentId, toAgentId].filter((a, i, all) => !next.agentIds.includes(a) && all.indexOf(a) === i)];
      return { ...next, agentIds, activeAgentId: toAgentId, handoffs: [...(next.handoffs ?? []), handoff] };
    }
  }
}

/** Folds events (in seq order) into the session document. */
export const foldSession = (state: SessionDocument, events: readonly MemoryEvent[]): SessionDocument => events.reduce(evolve, state);

/** The session a whole stream describes. */
export const sessionOf = (key: SessionKey, events: readonly MemoryEvent[]): SessionDocument => foldSession(newSession(key, new Date(0)), events);

// Decisions: given the session (a fold of its stream) and what a command brings, the events to append.

/** An end request for an active session; nothing for one that is ending or completed already. */
export function decideEnd(state: SessionDocument, reason: 'client' | 'idle'): EventDraft[] {
  return state.status === 'active' ? [{ type: 'SessionEndRequested', data: { reason } }] : [];
}

/**
 * The windows still to summarise: every full window of k turns after the chunking checkpoint, and, once the session
 * ends (`final`), the trailing partial one, so every turn of an ended session is covered by an interaction.
 */
export function windowsToSummarise(state: SessionDocument, turns: readonly TurnAppended[], k: number, final: boolean): TurnWindow[] {
  const pending = turns.filter((t) => t.metadata.seq > state.chunkedThroughSeq);
  const windows = fullWindows(pending, k);
  const rest = pending.slice(windows.length * k);
  if (final && rest.length > 0) windows.push({ fromSeq: rest[0]!.metadata.seq, toSeq: rest.at(-1)!.metadata.seq, turns: rest });
  return windows;
}

/** What the model wrote about a window (its `windowMetadata` task). */
export interface WindowMetadata {
  summary: string;
  topics: string[];
  entities: string[];
  cumulativeSummary: string;
}

export function decideInteraction(state: SessionDocument, window: TurnWindow, metadata: WindowMetadata, model: string): EventDraft[] {
  if (window.fromSeq <= state.chunkedThroughSeq) return [];
  const { summary, topics, entities, cumulativeSummary } = metadata;
  return [{ type: 'InteractionSummarised', data: { fromSeq: window.fromSeq, toSeq: window.toSeq, summary, topics, entities, cumulativeSummary, model } }];
}

/** The init block is fixed once, when the session has its first turn. */
export const needsInit = (state: SessionDocument): boolean => state.init === undefined && state.turnCount > 0;

export function decideInit(state: SessionDocument, profile: { text: string; version: number } | null, recentSessions: RecentSession[]): EventDraft[] {
  return needsInit(state) ? [{ type: 'SessionInitFixed', data: { profile, recentSessions } }] : [];
}

/** When an ended session ended: when it was summarised as ending, else its last turn, else now. */
const endedAt = (state: SessionDocument, now: Date): string => state.endedAt ?? state.lastTurnAt ?? now.toISOString();

export function decideSummary(state: SessionDocument, output: { summary: string; keyTopics: string[] }, model: string, now: Date): EventDraft[] {
  if (state.summary !== undefined) return [];
  return [{ type: 'SessionSummarised', data: { ...output, endedAt: endedAt(state, now), model } }];
}

export function decideReflection(state: SessionDocument, insightIds: string[], dropped: number, model: string): EventDraft[] {
  if (state.reflectionStatus !== 'pending') return [];
  return [{ type: 'SessionReflected', data: { outcome: insightIds.length > 0 ? 'insight' : 'no-insight', insightIds, dropped, model } }];
}

export function decideAggregation(state: SessionDocument, sessionIds: string[], insightIds: string[]): EventDraft[] {
  return state.reflectionStatus === 'no-insight' ? [{ type: 'SessionAggregated', data: { sessionIds, insightIds } }] : [];
}

/** Sets aside an event the projection cannot apply; nothing if it is set aside already. */
export function decideSetAside(state: SessionDocument, seq: number, reason: string): EventDraft[] {
  return state.setAside?.some((s) => s.seq === seq) ? [] : [{ type: 'EventSetAside', data: { seq, reason } }];
}

export function decideCompletion(state: SessionDocument, now: Date): EventDraft[] {
  return state.status === 'completed' ? [] : [{ type: 'SessionCompleted', data: { endedAt: endedAt(state, now) } }];
}
