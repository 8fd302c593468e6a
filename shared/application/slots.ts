import type { ContextSlot, ListSlotsQuery, PutSlotBody, Slot, SlotEvent, SlotQuery, SlotWritten } from '../contracts/slots.js';
import { GLOBAL_SLOT_PARTITION } from '../contracts/slots.js';
import { conflict, notFound } from '../domain/errors.js';
import { canSee, type Viewer } from '../domain/scopes.js';
import { decideDelete, decideWrite, liveSlot, scopedOf, slotKey, slotSortKey, toSlot, keyOf, type SlotCondition, type SlotKey } from '../domain/slots.js';
import { forbidden, type Principal } from './auth.js';
import { refuseUnlessKept, refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';
import type { Clock, Ids } from './ports.js';
import type { LoadDeps } from './project-session.js';
import { decodeSlotCursor, encodeSlotCursor, type SlotStore } from './slot-ports.js';
import { isAdmin, viewerFor } from './viewer.js';

export interface SlotDeps {
  slots: SlotStore;
  clock: Clock;
  ids: Ids;
  forgets?: ForgetStore;
}

/**
 * The agent a request acts as: the `agentId` it names or, for an agent-bound principal, the principal's agent (a
 * mismatch was refused by the central authorization already: shared/application/auth.ts authorizeAgents).
 */
const agentOf = (principal: Principal, agentId: string | undefined) => agentId ?? principal.agentId;

/** Global slots are shared by every user of the deployment: only an admin (all users, no agent binding) writes them. */
function authorizeWrite(principal: Principal, key: SlotKey): void {
  if (key.scope === 'global' && !isAdmin(principal)) {
    throw forbidden('Only an admin principal (all users, no agent binding) writes global slots');
  }
}

function keyFor(principal: Principal, userId: string, name: string, query: SlotQuery): SlotKey {
  const agentId = agentOf(principal, query.agentId);
  return slotKey(userId, name, query.scope, { ...(agentId && { agentId }), ...(query.sessionId && { sessionId: query.sessionId }) });
}

/** Attempts of a write that lost the race for a version: each is a new decision over the current stream. */
const ATTEMPTS = 5;

/**
 * Appends what `decide` makes of the stream's latest event, as the write `writeId` (the request's own id). A write that
 * lost the race for its version decides again over the new head: under `If-Match: <version>` or `If-None-Match: *`
 * that decision is 412 (the winner moved the version), an unconditional write lands after the winner's.
 */
async function appendDecided<E extends SlotEvent>(deps: SlotDeps, key: SlotKey, decide: (head: SlotEvent | null, writeId: string) => E): Promise<{ event: E; head: SlotEvent | null }> {
  // Nothing is written for a user (or session) being forgotten: 409 forget_in_progress. Global slots are no user's.
  const forgotten = key.partition === GLOBAL_SLOT_PARTITION ? undefined : { userId: key.partition, sessionId: key.scope === 'session' ? key.owner! : '' };
  if (forgotten) await refuseWhileForgetting(deps, forgotten);
  const writeId = deps.ids.newId();
  for (let attempt = 1; ; attempt++) {
    const head = await deps.slots.head(key);
    const event = decide(head, writeId);
    if (await deps.slots.append(event)) {
      if (forgotten) await refuseUnlessKept(deps, forgotten, () => stillHeld(deps.slots, key, event));
      return { event, head };
    }
    if (attempt >= ATTEMPTS) throw conflict(`Slot ${key.name} is being written concurrently; retry`);
  }
}

/**
 * Whether the slot's stream still holds the event: the event at its version is this write's (`writeId`). A stream a
 * forget purged may have been written again since, at that version or past it: the version and the time tell nothing.
 */
async function stillHeld(slots: SlotStore, key: SlotKey, event: SlotEvent): Promise<boolean> {
  return (await slots.at(key, event.data.version))?.metadata.writeId === event.metadata.writeId;
}

/** PUT a slot: 201 when this write created it (no live slot before), else 200; the body carries the new version. */
export async function putSlot(
  deps: SlotDeps,
  principal: Principal,
  userId: string,
  name: string,
  query: SlotQuery,
  body: PutSlotBody,
  condition: SlotCondition,
): Promise<{ slot: Slot; created: boolean }> {
  const key = keyFor(principal, userId, name, query);
  authorizeWrite(principal, key);
  const agentId = agentOf(principal, query.agentId);
  const command = { value: body.value, ...(body.ttlClass && { ttlClass: body.ttlClass }), ...(agentId && { agentId }) };
  const now = deps.clock.now();
  const { event, head } = await appendDecided(deps, key, (current, writeId) => decideWrite(current, key, { ...command, writeId }, condition, now));
  return { slot: toSlot(event), created: liveSlot(head, now) === null };
}

/** GET a slot: 404 when it does not exist, was deleted or has expired. */
export async function getSlot(deps: SlotDeps, principal: Principal, userId: string, name: string, query: SlotQuery): Promise<Slot> {
  const key = keyFor(principal, userId, name, query);
  const live = liveSlot(await deps.slots.head(key), deps.clock.now());
  const agentId = agentOf(principal, query.agentId);
  const viewer: Viewer = { userId, ...(agentId && { agentId }), ...(query.sessionId && { sessionId: query.sessionId }) };
  if (!live || !canSee(scopedOf(live), viewer)) throw notFound(`Slot ${name}`);
  return toSlot(live);
}

/** DELETE a slot: appends SlotDeleted (the stream stays, so versions keep counting); 404 when there is no live slot. */
export async function deleteSlot(
  deps: SlotDeps,
  principal: Principal,
  userId: string,
  name: string,
  query: SlotQuery,
  condition: Pick<SlotCondition, 'ifMatch'>,
): Promise<{ name: string; scope: Slot['scope']; version: number; deleted: true }> {
  const key = keyFor(principal, userId, name, query);
  authorizeWrite(principal, key);
  const agentId = agentOf(principal, query.agentId);
  const now = deps.clock.now();
  const { event } = await appendDecided(deps, key, (current, writeId) => decideDelete(current, key, condition, now, { ...(agentId && { agentId }), writeId }));
  return { name, scope: key.scope, version: event.data.version, deleted: true };
}

/** Streams read per round trip while a listing fills its page. */
const HEADS_BATCH = 100;

/**
 * The live slots `viewer` may see (canSee): its user's and the global ones, ordered by slot key, from `cursor` on; at
 * most `limit`, with the cursor of the next page when there is more.
 */
async function visible(deps: Pick<SlotDeps, 'slots' | 'clock'>, viewer: Viewer, limit: number, cursor?: string): Promise<{ items: SlotWritten[]; nextCursor: string | null }> {
  const now = deps.clock.now();
  const items: SlotWritten[] = [];
  let after = cursor === undefined ? undefined : decodeSlotCursor(cursor);
  for (;;) {
    const heads = await deps.slots.heads([viewer.userId, GLOBAL_SLOT_PARTITION], HEADS_BATCH, after);
    for (const head of heads) {
      const live = liveSlot(head, now);
      if (!live || !canSee(scopedOf(live), viewer)) continue;
      if (items.length === limit) return { items, nextCursor: encodeSlotCursor(slotSortKey(keyOf(items.at(-1)!))) };
      items.push(live);
    }
    if (heads.length < HEADS_BATCH) return { items, nextCursor: null };
    after = slotSortKey(keyOf(heads.at(-1)!));
  }
}

/**
 * GET /slots: the slots visible to the caller (its agent and session when it names them, with the private slots handed
 * to that agent in that session, as the context shows them), paginated like GET /memories.
 */
export async function listSlots(deps: SlotDeps & LoadDeps, principal: Principal, userId: string, query: ListSlotsQuery): Promise<{ items: Slot[]; nextCursor: string | null }> {
  const viewer = await viewerFor(deps, principal, { userId, agentId: query.agentId, sessionId: query.sessionId });
  const page = await visible(deps, viewer, query.limit, query.cursor);
  return { items: page.items.map(toSlot), nextCursor: page.nextCursor };
}

/** Slots the context block shows the viewer: every live slot it may see (never cut; they count against maxTokens). */
export async function contextSlots(deps: Pick<SlotDeps, 'slots' | 'clock'>, viewer: Viewer): Promise<ContextSlot[]> {
  const { items } = await visible(deps, viewer, Number.MAX_SAFE_INTEGER);
  return items.map((s) => ({ name: s.data.name, scope: s.data.scope, value: s.data.value, version: s.data.version }));
}
