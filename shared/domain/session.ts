import type { RecentSession } from '../contracts/context.js';
import { SCHEMA_VERSION, type EventDraft, type MemoryEvent, type SessionHandoff, type TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument, Thread } from '../contracts/sessions.js';
import { fullWindows, type TurnWindow } from './chunking.js';
import { MemoryError, sessionEnded } from './errors.js';

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
    threads: [],
    turnCount: 0,
    agentIds: [],
    startedAt: null,
    lastTurnAt: null,
    lastActivityAt: null,
    updatedAt: now.toISOString(),
  };
}

const later = (a: string | null | undefined, b: string): string => (a && a > b ? a : b);

// Threads: each agent's turns (and the turns that name no agent) are chunked and summarised on their own.

/** The thread a turn belongs to: its agent's, or (undefined) the one of turns that name no agent. */
export const threadOf = (turn: TurnAppended): string | undefined => turn.data.agentId;

export const findThread = (state: SessionDocument, agentId: string | undefined): Thread | undefined =>
  state.threads?.find((t) => t.agentId === agentId);

function withThread(state: SessionDocument, agentId: string | undefined, change: (t: Thread) => Thread): SessionDocument {
  const threads = state.threads ?? [];
  const i = threads.findIndex((t) => t.agentId === agentId);
  const current = threads[i] ?? { ...(agentId !== undefined && { agentId }), turnCount: 0, lastSeq: 0, chunkedThroughSeq: 0, cumulativeSummary: '' };
  const next = change(current);
  return { ...state, threads: i < 0 ? [...threads, next] : threads.map((t, j) => (j === i ? next : t)) };
}

/**
 * The session-level view of its threads. Coverage: the lowest checkpoint of a thread with turns still to chunk (each
 * thread's checkpoint is raised over the seqs of other threads, see `evolve`), else the highest; so every turn up to
 * it is covered, and it never goes back. Summary: the one thread's, or each thread's labelled by its agent.
 */
function withSessionView(state: SessionDocument): SessionDocument {
  const threads = state.threads ?? [];
  const pending = threads.filter((t) => t.lastSeq > t.chunkedThroughSeq);
  const chunkedThroughSeq = pending.length > 0
    ? Math.min(...pending.map((t) => t.chunkedThroughSeq))
    : Math.max(state.chunkedThroughSeq, ...threads.map((t) => t.chunkedThroughSeq));
  const summarised = threads.filter((t) => t.cumulativeSummary !== '');
  const cumulativeSummary = summarised.length === 1 && threads.length === 1
    ? summarised[0]!.cumulativeSummary
    : summarised.map((t) => `${t.agentId ?? 'shared'}: ${t.cumulativeSummary}`).join('\n');
  return { ...state, chunkedThroughSeq, cumulativeSummary };
}

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
      // A thread with nothing left to chunk is covered up to this turn: the seqs between belong to other threads.
      return withSessionView(withThread(next, agentId, (t) => ({
        ...t,
        turnCount: t.turnCount + 1,
        lastSeq: seq,
        chunkedThroughSeq: t.lastSeq === t.chunkedThroughSeq ? seq - 1 : t.chunkedThroughSeq,
      })));
    }
    case 'SessionEndRequested':
      if (next.status === 'active') next.status = 'ending';
      return next;
    case 'InteractionSummarised': {
      const { toSeq, cumulativeSummary, agentId } = event.data;
      // An event from before threads (no agentId key) was a window over every turn: it covers every thread.
      const threads = agentId === undefined ? (next.threads ?? []).map((t) => t.agentId) : [agentId ?? undefined];
      let state = next;
      for (const thread of threads) {
        state = withThread(state, thread, (t) => (toSeq <= t.chunkedThroughSeq ? t : { ...t, chunkedThroughSeq: toSeq, cumulativeSummary }));
      }
      return withSessionView(state);
    }
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
      const agentIds = [...new Set([...next.agentIds, fromAgentId, toAgentId])];
      return { ...next, agentIds, activeAgentId: toAgentId, handoffs: [...(next.handoffs ?? []), handoff] };
    }
  }
}

/**
 * The document as the deciders see it: the fold, with the decisions the projector recorded past it (its bookmark,
 * `decidedAhead`) applied to the threads, so a backlog projected slice by slice has each window decided once.
 */
export function withDecidedAhead(state: SessionDocument): SessionDocument {
  const ahead = state.decidedAhead;
  if (!ahead || ahead.threads.length === 0) return state;
  let next = state;
  for (const d of ahead.threads) {
    next = withThread(next, d.agentId, (t) => (d.chunkedThroughSeq > t.chunkedThroughSeq ? { ...t, chunkedThroughSeq: d.chunkedThroughSeq, cumulativeSummary: d.cumulativeSummary } : t));
  }
  return withSessionView(next);
}

/**
 * The bookmark after `recorded` (decisions appended past the fold): each thread's last window, the init block and the
 * events set aside, kept only for what the fold has not reached yet; a projection that caught up is the plain fold.
 */
export function withBookmark(state: SessionDocument, recorded: readonly MemoryEvent[]): SessionDocument {
  const threads = [...(state.decidedAhead?.threads ?? [])];
  let init = state.decidedAhead?.init ?? false;
  const setAside = new Set(state.decidedAhead?.setAside);
  for (const e of recorded) {
    if (e.metadata.seq <= state.projectedThroughSeq) continue;
    if (e.type === 'SessionInitFixed') init = true;
    if (e.type === 'EventSetAside') setAside.add(e.data.seq);
    if (e.type === 'InteractionSummarised' && e.data.agentId !== undefined) {
      const { toSeq, cumulativeSummary } = e.data;
      const agentId = e.data.agentId ?? undefined;
      const i = threads.findIndex((t) => t.agentId === agentId);
      const entry = { ...(agentId !== undefined && { agentId }), chunkedThroughSeq: toSeq, cumulativeSummary };
      if (i < 0) threads.push(entry);
      else if (threads[i]!.chunkedThroughSeq < toSeq) threads[i] = entry;
    }
  }
  const ahead = {
    threads: threads.filter((d) => d.chunkedThroughSeq > (findThread(state, d.agentId)?.chunkedThroughSeq ?? 0)),
    init: init && state.init === undefined,
    setAside: [...setAside].filter((seq) => !state.setAside?.some((s) => s.seq === seq)).sort((a, b) => a - b),
  };
  const next: SessionDocument = { ...state, decidedAhead: ahead };
  if (ahead.threads.length === 0 && !ahead.init && ahead.setAside.length === 0) delete next.decidedAhead;
  return next;
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
 * The windows still to summarise, thread by thread: every full window of k turns of a thread after its checkpoint,
 * and, once the session ends (`final`), the trailing partial one, so every turn of an ended session is covered by an
 * interaction. In seq order of their first turns.
 */
export function windowsToSummarise(state: SessionDocument, turns: readonly TurnAppended[], k: number, final: boolean): TurnWindow[] {
  const windows: TurnWindow[] = [];
  for (const thread of state.threads ?? []) {
    const pending = turns.filter((t) => threadOf(t) === thread.agentId && t.metadata.seq > thread.chunkedThroughSeq);
    const full = fullWindows(pending, k);
    const rest = pending.slice(full.length * k);
    windows.push(...full);
    if (final && rest.length > 0) windows.push({ fromSeq: rest[0]!.metadata.seq, toSeq: rest.at(-1)!.metadata.seq, turns: rest });
  }
  return windows.sort((a, b) => a.fromSeq - b.fromSeq);
}

/** The cumulative summary a window's thread has so far: the model extends it. */
export const threadSummary = (state: SessionDocument, window: TurnWindow): string =>
  findThread(state, threadOf(window.turns[0]!))?.cumulativeSummary ?? '';

/** What the model wrote about a window (its `windowMetadata` task). */
export interface WindowMetadata {
  summary: string;
  topics: string[];
  entities: string[];
  cumulativeSummary: string;
}

export function decideInteraction(state: SessionDocument, window: TurnWindow, metadata: WindowMetadata, model: string): EventDraft[] {
  const agentId = threadOf(window.turns[0]!);
  if (window.toSeq <= (findThread(state, agentId)?.chunkedThroughSeq ?? 0)) return [];
  const { summary, topics, entities, cumulativeSummary } = metadata;
  return [{ type: 'InteractionSummarised', data: { fromSeq: window.fromSeq, toSeq: window.toSeq, summary, topics, entities, cumulativeSummary, agentId: agentId ?? null, model } }];
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

/**
 * A handoff between two agents of an active session; nothing when the same handoff (its id) is recorded already. An
 * ended session takes no handoff, as it takes no turn.
 */
export function decideHandoff(state: SessionDocument, handoff: SessionHandoff['data']): EventDraft[] {
  if (handoff.fromAgentId === handoff.toAgentId) throw new MemoryError('validation_failed', 'An agent cannot hand over to itself');
  if (state.handoffs?.some((h) => h.handoffId === handoff.handoffId)) return [];
  if (state.status !== 'active') throw sessionEnded(state.sessionId);
  return [{ type: 'SessionHandoff', data: handoff }];
}
