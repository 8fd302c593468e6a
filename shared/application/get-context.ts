import { isTurn } from '../contracts/events.js';
import type { ContextQuery, ContextResponse } from '../contracts/context.js';
import type { SessionKey } from '../contracts/ids.js';
import { buildContext } from '../domain/context.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { countTokens } from '../domain/tokens.js';
import type { DetailMemory } from './artifact-ports.js';
import { expandFirstUse, memoryRefsIn } from './context-refs.js';
import type { Deps } from './ports.js';
import { sessionInit } from './session-init.js';
import type { SlotStore } from './slot-ports.js';
import { contextSlots } from './slots.js';

/**
 * The compact context block for a session: what the projection has summarised plus every turn it has not,
 * read straight from the events so a turn is never missing while the projection catches up.
 */
export async function getContext(deps: Pick<Deps, 'events' | 'sessions' | 'memory'> & Partial<Pick<Deps, 'insights' | 'directory'>> & { detail?: DetailMemory; slots?: SlotStore; clock?: Deps['clock'] }, key: SessionKey, query: ContextQuery): Promise<ContextResponse> {
  const stored = await deps.sessions.get(key);
  const coveredThrough = stored?.doc.chunkedThroughSeq ?? 0;
  const [unsummarised, lastTurns] = await Promise.all([
    deps.events.read(key, coveredThrough),
    deps.events.readLastTurns(key, deps.memory.nActiveTurns),
  ]);
  if (!stored && unsummarised.length === 0) throw notFound(`Session ${key.sessionId}`);
  const init = await sessionInit(deps, key, stored?.doc ?? null);
  const slots = deps.slots
    ? await contextSlots({ slots: deps.slots, clock: deps.clock ?? { now: () => new Date() } }, { ...key, ...(query.agentId && { agentId: query.agentId }) })
    : [];

  const bySeq = new Map([...lastTurns, ...unsummarised.filter(isTurn)].map((t) => [t.metadata.seq, t]));
  const turns = [...bySeq.values()].sort((a, b) => a.metadata.seq - b.metadata.seq);
  // Offloaded turns show as placeholders; the most recent one, not yet answered, in full (first use).
  const expanded = await expandFirstUse(deps.detail, key.userId, turns);
  const build = (shown: typeof turns) => buildContext({
    profile: init.profile,
    recentSessions: init.recentSessions,
    slots,
    summary: stored?.doc.cumulativeSummary ?? '',
    summaryCoversThroughSeq: coveredThrough,
    turns: shown,
    nActiveTurns: deps.memory.nActiveTurns,
    countTokens,
    ...(query.maxTokens !== undefined && { maxTokens: query.maxTokens }),
  });
  let built: ReturnType<typeof buildContext>;
  let expandedSeq = expanded.expandedSeq;
  try {
    built = build(expanded.turns);
  } catch (error) {
    // A first-use expansion that does not fit the budget falls back to its placeholder.
    if (expandedSeq === undefined || !(error instanceof MemoryError) || error.code !== 'context_budget_exceeded') throw error;
    built = build(turns);
    expandedSeq = undefined;
  }
  const memoryRefs = memoryRefsIn(turns, new Set(built.sections.turns.map((t) => t.seq)), expandedSeq);
  return { ...key, ...built, summaryCoversThroughSeq: coveredThrough, memoryRefs };
}
