import type { SessionKey } from '../contracts/ids.js';
import type { SessionStatus } from '../contracts/sessions.js';
import { notFound } from '../domain/errors.js';
import { newSession } from '../domain/session.js';
import type { Deps } from './ports.js';

/** Session status from the projection, with `pending` = events recorded but not yet projected, and decisions whose turns are written but that are not made yet (windows, the init block). */
export async function getSessionStatus(deps: Pick<Deps, 'events' | 'sessions' | 'clock'>, key: SessionKey): Promise<SessionStatus> {
  const [stored, lastSeq] = await Promise.all([deps.sessions.get(key), deps.events.lastSeq(key)]);
  if (!stored && lastSeq === 0) throw notFound(`Session ${key.sessionId}`);
  const s = stored?.doc ?? newSession(key, deps.clock.now());
  return {
    userId: key.userId,
    sessionId: key.sessionId,
    status: s.status,
    reflectionStatus: s.reflectionStatus,
    lastSeq,
    chunkedThroughSeq: s.chunkedThroughSeq,
    projectedThroughSeq: s.projectedThroughSeq,
    pending: Math.max(0, lastSeq - s.projectedThroughSeq) + (s.decisionsDue ?? 0),
    turnCount: s.turnCount,
    agentIds: s.agentIds,
    startedAt: s.startedAt,
    lastTurnAt: s.lastTurnAt,
    summary: s.cumulativeSummary,
    setAside: s.setAside ?? [],
    activeAgentId: s.activeAgentId ?? null,
    handoffs: s.handoffs ?? [],
    threads: (s.threads ?? []).map(({ agentId, turnCount, chunkedThroughSeq }) => ({ ...(agentId !== undefined && { agentId }), turnCount, chunkedThroughSeq })),
  };
}
