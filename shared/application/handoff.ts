import type { SessionKey } from '../contracts/ids.js';
import type { HandoffBody, HandoffResult } from '../contracts/sessions.js';
import { notFound } from '../domain/errors.js';
import { decideHandoff } from '../domain/session.js';
import type { DetailMemory } from './artifact-ports.js';
import type { Deps } from './ports.js';
import { append, load } from './project-session.js';

/**
 * Records a handoff in the session's stream. The memory passed along must exist; the receiver's next context starts
 * with the handoff. A retry with the same `handoffId` answers with the recorded handoff.
 */
export async function recordHandoff(
  deps: Pick<Deps, 'events' | 'sessions' | 'clock' | 'ids'> & { detail?: DetailMemory },
  key: SessionKey,
  body: HandoffBody,
): Promise<HandoffResult> {
  const handoffId = body.handoffId ?? `h-${deps.ids.newId()}`;
  const { stored, session, events } = await load(deps, key);
  if (!stored && events.length === 0) throw notFound(`Session ${key.sessionId}`);
  const drafts = decideHandoff(session, { handoffId, fromAgentId: body.fromAgentId, toAgentId: body.toAgentId, ...(body.note !== undefined && { note: body.note }), memoryKeys: body.memoryKeys });
  if (drafts.length > 0 && deps.detail) {
    const now = deps.clock.now();
    for (const memoryKey of body.memoryKeys) {
      if (!(await deps.detail.artifacts.get(key.userId, memoryKey, now))) throw notFound(`Memory ${memoryKey}`);
    }
  }
  const recorded = await append(deps, key, drafts);
  const seq = recorded?.[0]?.metadata.seq ?? (await load(deps, key)).session.handoffs?.find((h) => h.handoffId === handoffId)?.seq;
  return { handoffId, seq: seq! };
}
