import type { SessionKey } from '../contracts/ids.js';
import type { AppendTurnsBody, AppendTurnsResult } from '../contracts/turns.js';
import type { DetailMemory } from './artifact-ports.js';
import { refuseUnlessEventsKept, refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';
import { offloadTurn } from './offload.js';
import type { Admission, Clock, EventDraft, EventStore, Ids } from './ports.js';

/**
 * Records turns as events. Retrying with the same turnIds returns the same seqs and writes nothing twice.
 * `fallbackTurnId` names turns the client left unnamed (Service Bus derives it from the message id so redelivery is idempotent).
 */
export async function appendTurns(
  deps: {
    events: EventStore;
    clock: Clock;
    ids: Ids;
    /** When present, large turns are offloaded to detail memory. */
    detail?: DetailMemory;
    /** When present, appends for a user or session being forgotten are refused (409 `forget_in_progress`). */
    forgets?: ForgetStore;
    /** When present, appends are refused while the service sheds load (503 `overloaded`, MEMORY_BUDGET_MB). */
    admission?: Admission;
  },
  key: SessionKey,
  body: AppendTurnsBody,
  fallbackTurnId: (index: number) => string = () => deps.ids.newId(),
): Promise<AppendTurnsResult> {
  // Before anything is written, artifacts of offloaded turns included.
  deps.admission?.admit();
  await refuseWhileForgetting(deps, key);
  const now = deps.clock.now();
  const drafts: EventDraft[] = body.turns.map((turn, index) => ({
    type: 'TurnAppended',
    data: {
      turnId: turn.turnId ?? fallbackTurnId(index),
      role: turn.role,
      content: turn.content ?? '',
      timestamp: new Date(turn.timestamp ?? now).toISOString(),
      ...(turn.name && { name: turn.name }),
      ...(turn.agentId && { agentId: turn.agentId }),
      ...(turn.toolCalls && { toolCalls: turn.toolCalls }),
      ...(turn.toolCallId && { toolCallId: turn.toolCallId }),
    },
  }));
  const detail = deps.detail;
  const recorded = detail
    ? await Promise.all(drafts.map(async (d) => (d.type === 'TurnAppended' ? { ...d, data: await offloadTurn({ ...deps, detail }, key, d.data) } : d)))
    : drafts;
  const outcomes = await deps.events.append(key, recorded, now);
  const accepted = outcomes.map((o) => ({ turnId: o.turnId!, seq: o.seq }));
  // Cosmos DB: a forget that began before the write landed purges it (the append enlists with it), or already did.
  await refuseUnlessEventsKept(deps, key, accepted.map((a) => ({ seq: a.seq, eventKey: a.turnId })));
  return { accepted };
}
