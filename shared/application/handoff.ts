import { eventKey } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { HandoffBody, HandoffResult } from '../contracts/sessions.js';
import { notFound } from '../domain/errors.js';
import { SLOT_REF_PREFIX } from '../domain/scopes.js';
import { decideHandoff } from '../domain/session.js';
import { liveSlot } from '../domain/slots.js';
import type { DetailMemory } from './artifact-ports.js';
import { findVisible } from './artifacts.js';
import { refuseUnlessEventsKept, refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';
import type { Deps } from './ports.js';
import { append, load } from './project-session.js';
import type { SlotStore } from './slot-ports.js';

type HandoffDeps = Pick<Deps, 'events' | 'sessions' | 'clock' | 'ids'> & { detail?: DetailMemory; slots?: SlotStore; forgets?: ForgetStore };

/**
 * Records a handoff in the session's stream. What it passes along must be the sender's to pass: artifacts the sender
 * may see, and (`slot:<name>`) the sender's own private slots. The receiver's next context starts with the handoff.
 * A retry with the same `handoffId` answers with the recorded handoff. While the user or the session is being
 * forgotten: 409 `forget_in_progress` (the note is the client's text; see `refuseUnlessKept`).
 */
export async function recordHandoff(deps: HandoffDeps, key: SessionKey, body: HandoffBody): Promise<HandoffResult> {
  const handoffId = body.handoffId ?? `h-${deps.ids.newId()}`;
  const { stored, session, events } = await load(deps, key);
  if (!stored && events.length === 0) throw notFound(`Session ${key.sessionId}`);
  const handoff = { handoffId, fromAgentId: body.fromAgentId, toAgentId: body.toAgentId, ...(body.note !== undefined && { note: body.note }), memoryKeys: body.memoryKeys };
  const drafts = decideHandoff(session, handoff);
  if (drafts.length > 0) await requirePassable(deps, key, body.fromAgentId, body.memoryKeys);
  await refuseWhileForgetting(deps, key);
  const recorded = await append(deps, key, drafts);
  // Nothing to append (a retry): the handoff is in the session read; a duplicate (recorded concurrently): read it again.
  const holder = recorded?.length === 0 ? session : recorded === null ? (await load(deps, key)).session : undefined;
  const seq = recorded?.[0]?.metadata.seq ?? holder?.handoffs?.find((h) => h.handoffId === handoffId)?.seq;
  // Cosmos DB: a forget that began before the write landed purges it (the handoff enlists with it), or already did.
  await refuseUnlessEventsKept(deps, key, [{ seq: seq!, eventKey: eventKey({ type: 'SessionHandoff', data: handoff }) }]);
  return { handoffId, seq: seq! };
}

/** 404 for a key the sender could not pass: an artifact it may not see, or a private slot it does not have. */
async function requirePassable(deps: HandoffDeps, key: SessionKey, fromAgentId: string, memoryKeys: readonly string[]): Promise<void> {
  const now = deps.clock.now();
  const sender = { userId: key.userId, agentId: fromAgentId, sessionId: key.sessionId };
  for (const memoryKey of memoryKeys) {
    const passable = memoryKey.startsWith(SLOT_REF_PREFIX)
      ? deps.slots && liveSlot(await deps.slots.head({ partition: key.userId, scope: 'private', owner: fromAgentId, name: memoryKey.slice(SLOT_REF_PREFIX.length) }), now)
      : deps.detail && (await findVisible({ detail: deps.detail, clock: deps.clock }, sender, memoryKey));
    if (!passable) throw notFound(`Memory ${memoryKey}`);
  }
}
