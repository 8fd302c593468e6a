import { SCHEMA_VERSION, type MemoryEvent } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument } from '../contracts/sessions.js';

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

/** Folds events (in seq order, any already folded are skipped) into the session projection. */
export function evolveSession(session: SessionDocument, events: readonly MemoryEvent[]): SessionDocument {
  let next = session;
  for (const event of events) {
    if (event.metadata.seq <= next.projectedThroughSeq) continue;
    next = { ...next, projectedThroughSeq: event.metadata.seq };
    switch (event.type) {
      case 'TurnAppended': {
        const { agentId, timestamp } = event.data;
        next.turnCount += 1;
        next.startedAt ??= timestamp;
        next.lastTurnAt = next.lastTurnAt && next.lastTurnAt > timestamp ? next.lastTurnAt : timestamp;
        const { recordedAt } = event.metadata;
        next.lastActivityAt = next.lastActivityAt && next.lastActivityAt > recordedAt ? next.lastActivityAt : recordedAt;
        if (agentId && !next.agentIds.includes(agentId)) next.agentIds = [...next.agentIds, agentId];
        break;
      }
      case 'SessionEndRequested':
        if (next.status === 'active') next.status = 'ending';
        break;
    }
  }
  return next;
}
