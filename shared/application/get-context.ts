import { isTurn, type MemoryEvent, type TurnAppended } from '../contracts/events.js';
import type { ContextHandoff, ContextQuery, ContextResponse } from '../contracts/context.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { buildContext, verbatimTurns, type ContextInput, type ThreadTurns } from '../domain/context.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { grantsOf, type Viewer } from '../domain/scopes.js';
import { findThread } from '../domain/session.js';
import { countTokens } from '../domain/tokens.js';
import { renderTranscript } from '../domain/turns.js';
import type { DetailMemory } from './artifact-ports.js';
import { findVisible } from './artifacts.js';
import { expandFirstUse, memoryRefsIn, visibleMemoryRefs } from './context-refs.js';
import type { Deps } from './ports.js';
import { load } from './project-session.js';
import { sessionInit } from './session-init.js';
import type { SlotStore } from './slot-ports.js';
import { contextSlots } from './slots.js';

type ContextDeps = Pick<Deps, 'events' | 'sessions' | 'memory'> & Partial<Pick<Deps, 'insights' | 'directory' | 'clock'>> & { detail?: DetailMemory; slots?: SlotStore };

/** What one view of the session shows besides the init block: its threads' turns, the summary, and for an agent what others share. */
type View = Pick<ContextInput, 'threads' | 'summary' | 'handoff' | 'otherAgents'>;

/**
 * The compact context block for a session: what the projection has summarised plus every turn it has not, read
 * straight from the events (and folded, so a turn or a handoff is never missing while the projection catches up).
 * Without an agent, the whole session; with `agentId`, that agent's thread, the turns no agent claims (every agent
 * shares them), the other agents' summaries and the last handoff it received.
 */
export async function getContext(deps: ContextDeps, key: SessionKey, query: ContextQuery): Promise<ContextResponse> {
  const { stored, session, events } = await load(deps, key);
  if (!stored && events.length === 0) throw notFound(`Session ${key.sessionId}`);
  const now = deps.clock?.now() ?? new Date();
  // Who reads: the session and, in an agent's view, the agent with what was handed to it (its private items are its own).
  const viewer: Viewer = { ...key, ...(query.agentId !== undefined && { agentId: query.agentId, grants: grantsOf(session, query.agentId) }) };
  const [init, view, slots] = await Promise.all([
    sessionInit(deps, key, session),
    viewer.agentId === undefined ? sessionView(deps, key, session, events) : agentView(deps, key, session, events, { ...viewer, agentId: viewer.agentId }, now),
    deps.slots ? contextSlots({ slots: deps.slots, clock: { now: () => now } }, viewer) : [],
  ]);

  // Offloaded turns show as placeholders; the most recent one, not yet answered, in full (first use).
  const shown = [...new Map(view.threads.flatMap((t) => t.turns).map((t) => [t.metadata.seq, t])).values()].sort((a, b) => a.metadata.seq - b.metadata.seq);
  const expanded = await expandFirstUse(deps.detail, key.userId, shown, now, viewer);
  const build = (swap: (t: TurnAppended) => TurnAppended) => buildContext({
    ...view,
    profile: init.profile,
    recentSessions: init.recentSessions,
    slots,
    threads: view.threads.map((t) => ({ ...t, turns: t.turns.map(swap) })),
    nActiveTurns: deps.memory.nActiveTurns,
    countTokens,
    ...(query.maxTokens !== undefined && { maxTokens: query.maxTokens }),
  });
  let built: ReturnType<typeof buildContext>;
  let expandedSeq = expanded.expandedSeq;
  try {
    const bySeq = new Map(expanded.turns.map((t) => [t.metadata.seq, t]));
    built = build((t) => bySeq.get(t.metadata.seq) ?? t);
  } catch (error) {
    // A first-use expansion that does not fit the budget falls back to its placeholder.
    if (expandedSeq === undefined || !(error instanceof MemoryError) || error.code !== 'context_budget_exceeded') throw error;
    built = build((t) => t);
    expandedSeq = undefined;
  }
  const shownRefs = memoryRefsIn(shown, new Set(built.sections.turns.map((t) => t.seq)), expandedSeq);
  const memoryRefs = query.agentId === undefined ? shownRefs : await visibleMemoryRefs(deps.detail, viewer, shownRefs, now);
  const coveredThrough = Math.min(...view.threads.map((t) => t.coversThroughSeq));
  return { ...key, ...(query.agentId !== undefined && { agentId: query.agentId }), ...built, summaryCoversThroughSeq: coveredThrough, memoryRefs };
}

/** A thread's turns the context reads: those after its coverage (among the events read) and its last N. */
async function threadTurns(deps: ContextDeps, key: SessionKey, events: readonly MemoryEvent[], coversThroughSeq: number, thread?: { agentId?: string }): Promise<ThreadTurns> {
  const inThread = (t: TurnAppended) => !thread || t.data.agentId === thread.agentId;
  const last = await deps.events.readLastTurns(key, deps.memory.nActiveTurns, undefined, thread);
  const after = events.filter(isTurn).filter((t) => t.metadata.seq > coversThroughSeq && inThread(t));
  const bySeq = new Map([...last, ...after].map((t) => [t.metadata.seq, t]));
  return { coversThroughSeq, turns: [...bySeq.values()].sort((a, b) => a.metadata.seq - b.metadata.seq) };
}

async function sessionView(deps: ContextDeps, key: SessionKey, session: SessionDocument, events: readonly MemoryEvent[]): Promise<View> {
  return { summary: session.cumulativeSummary, threads: await viewThreads(deps, key, session, events) };
}

/** The threads a view reads: the whole session as one; for an agent, its own thread and the shared one (if any). */
async function viewThreads(deps: ContextDeps, key: SessionKey, session: SessionDocument, events: readonly MemoryEvent[], agentId?: string): Promise<ThreadTurns[]> {
  if (agentId === undefined) return [await threadTurns(deps, key, events, session.chunkedThroughSeq)];
  const shared = findThread(session, undefined);
  return Promise.all([
    threadTurns(deps, key, events, findThread(session, agentId)?.chunkedThroughSeq ?? 0, { agentId }),
    ...(shared ? [threadTurns(deps, key, events, shared.chunkedThroughSeq, {})] : []),
  ]);
}

/**
 * The turns a view shows word for word (as `GET …/context` without a budget shows them, offloaded outputs as their
 * placeholders) and how far its summaries cover: what `GET …/messages` sends back to a model.
 */
export async function verbatimView(deps: ContextDeps, key: SessionKey, agentId?: string): Promise<{ turns: TurnAppended[]; summaryCoversThroughSeq: number }> {
  const { stored, session, events } = await load(deps, key);
  if (!stored && events.length === 0) throw notFound(`Session ${key.sessionId}`);
  const threads = await viewThreads(deps, key, session, events, agentId);
  return { turns: verbatimTurns(threads, deps.memory.nActiveTurns), summaryCoversThroughSeq: Math.min(...threads.map((t) => t.coversThroughSeq)) };
}

async function agentView(deps: ContextDeps, key: SessionKey, session: SessionDocument, events: readonly MemoryEvent[], viewer: Viewer & { agentId: string }, now: Date): Promise<View> {
  const { agentId } = viewer;
  const own = findThread(session, agentId);
  const shared = findThread(session, undefined);
  const threads = await viewThreads(deps, key, session, events, agentId);
  const summary = [own?.cumulativeSummary, shared?.cumulativeSummary && `shared: ${shared.cumulativeSummary}`].filter(Boolean).join('\n');
  const otherAgents = (session.threads ?? []).flatMap((t) =>
    t.agentId !== undefined && t.agentId !== agentId && t.cumulativeSummary ? [{ agentId: t.agentId, summary: t.cumulativeSummary }] : [],
  );
  return { summary, threads, otherAgents, handoff: await handoffTo(deps, key, session, viewer, now) };
}

/**
 * The last handoff the agent received, with the sender's thread summary (its recent turns while it has none yet) and
 * the artifacts passed along (keys whose artifact is gone are left out; slots passed along show in the slots section).
 */
async function handoffTo(deps: ContextDeps, key: SessionKey, session: SessionDocument, viewer: Viewer & { agentId: string }, now: Date): Promise<ContextHandoff | null> {
  const handoff = session.handoffs?.findLast((h) => h.toAgentId === viewer.agentId);
  if (!handoff) return null;
  const senderSummary = findThread(session, handoff.fromAgentId)?.cumulativeSummary
    || renderTranscript(await deps.events.readLastTurns(key, deps.memory.nActiveTurns, handoff.seq, { agentId: handoff.fromAgentId }));
  const detail = deps.detail;
  const records = detail ? await Promise.all(handoff.memoryKeys.map((k) => findVisible({ detail, clock: { now: () => now } }, viewer, k))) : [];
  const memoryRefs = records.flatMap((r) => (r ? [{ key: r.key, description: r.description, tokens: r.tokens }] : []));
  return { fromAgentId: handoff.fromAgentId, at: handoff.at, ...(handoff.note !== undefined && { note: handoff.note }), senderSummary, memoryRefs };
}
