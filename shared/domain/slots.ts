import type { TtlClass } from '../contracts/artifacts.js';
import type { Scope } from '../contracts/scopes.js';
import { GLOBAL_SLOT_PARTITION, SLOT_VALUE_MAX_BYTES, type Slot, type SlotDeleted, type SlotEvent, type SlotValue, type SlotWritten } from '../contracts/slots.js';
import { MemoryError, notFound } from './errors.js';
import { expiresAt, isExpired } from './retention.js';
import { slotGrantKey, type Scoped } from './scopes.js';

/** A slot's identity, which is also its stream's: partition (the user, or GLOBAL_SLOT_PARTITION), scope, owner, name. */
export interface SlotKey {
  partition: string;
  scope: Scope;
  /** agentId (private), sessionId (session), null (user, global). */
  owner: string | null;
  name: string;
}

/** `If-Match` (a version, or `*`: the slot exists) and `If-None-Match: *` (the slot does not exist). */
export interface SlotCondition {
  ifMatch?: number | '*';
  ifNoneMatch?: '*';
}

/**
 * The slot a request names: `private` is owned by the viewer's agent and `session` by its session (either missing is
 * 422 scope_owner_required); `user` by nobody in the user's partition; `global` by nobody in the global partition.
 */
export function slotKey(userId: string, name: string, scope: Scope, viewer: { agentId?: string; sessionId?: string }): SlotKey {
  switch (scope) {
    case 'private':
      if (viewer.agentId === undefined) throw new MemoryError('scope_owner_required', 'A private slot needs an agentId (query agentId=, or an agent-bound principal)');
      return { partition: userId, scope, owner: viewer.agentId, name };
    case 'session':
      if (viewer.sessionId === undefined) throw new MemoryError('scope_owner_required', 'A session slot needs a sessionId (query sessionId=)');
      return { partition: userId, scope, owner: viewer.sessionId, name };
    case 'user':
      return { partition: userId, scope, owner: null, name };
    case 'global':
      return { partition: GLOBAL_SLOT_PARTITION, scope, owner: null, name };
  }
}

export const keyOf = (event: SlotEvent): SlotKey => ({ partition: event.metadata.userId, scope: event.data.scope, owner: event.data.owner, name: event.data.name });

/** What the visibility rule (domain/scopes.ts canSee) reads of a slot. */
export function scopedOf(event: SlotEvent): Scoped {
  const { scope, owner } = event.data;
  return {
    scope,
    userId: event.metadata.userId,
    ...(scope === 'private' && owner !== null && { agentId: owner, key: slotGrantKey(owner, event.data.name) }),
    ...(scope === 'session' && owner !== null && { sessionId: owner }),
  };
}

/** The slot's current value: its stream's latest event when that is a write that has not expired at `now`. */
export function liveSlot(head: SlotEvent | null, now: Date): SlotWritten | null {
  if (head?.type !== 'SlotWritten') return null;
  return isExpired(head.data.expiresAt === null ? null : new Date(head.data.expiresAt), now) ? null : head;
}

/** The version the next event of the stream takes. */
const nextVersion = (head: SlotEvent | null) => (head?.data.version ?? 0) + 1;

const preconditionFailed = (message: string, current: number | null) => new MemoryError('precondition_failed', message, { currentVersion: current });

/** A condition against the live slot (null when it does not exist, was deleted or has expired). */
function check(live: SlotWritten | null, condition: SlotCondition): void {
  const current = live?.data.version ?? null;
  if (condition.ifNoneMatch === '*' && live) throw preconditionFailed(`The slot exists (version ${current}); If-None-Match: * creates only`, current);
  if (condition.ifMatch === undefined) return;
  if (!live) throw preconditionFailed('The slot does not exist; If-Match needs its current version', null);
  if (condition.ifMatch !== '*' && condition.ifMatch !== current) throw preconditionFailed(`The slot is at version ${current}, not ${condition.ifMatch}`, current);
}

/** Who writes: recorded in the event's metadata. */
export interface SlotWriter {
  /** The agent the writer acts as. */
  agentId?: string;
  /** The request's own id (see the event's `writeId`). */
  writeId?: string;
}

export interface WriteSlot extends SlotWriter {
  value: SlotValue;
  ttlClass?: TtlClass;
}

const writerOf = (writer: SlotWriter) => ({ ...(writer.agentId && { agentId: writer.agentId }), ...(writer.writeId && { writeId: writer.writeId }) });

/**
 * Decides a write over the stream's latest event: the condition must hold against the live slot, the value must fit
 * SLOT_VALUE_MAX_BYTES, and the event takes the stream's next version (after a delete or an expiry too, so a version is
 * never reused and a stale If-Match can never match again).
 */
export function decideWrite(head: SlotEvent | null, key: SlotKey, command: WriteSlot, condition: SlotCondition, now: Date): SlotWritten {
  const bytes = new TextEncoder().encode(JSON.stringify(command.value)).length;
  if (bytes > SLOT_VALUE_MAX_BYTES) {
    throw new MemoryError('payload_too_large', `The slot value has ${bytes} bytes as JSON; the maximum is ${SLOT_VALUE_MAX_BYTES}`, { maxBytes: SLOT_VALUE_MAX_BYTES, bytes });
  }
  check(liveSlot(head, now), condition);
  const expiry = expiresAt({ writtenAt: now, ...(command.ttlClass && { ttlClass: command.ttlClass }) });
  return {
    type: 'SlotWritten',
    data: {
      name: key.name,
      scope: key.scope,
      owner: key.owner,
      value: command.value,
      ...(command.ttlClass && { ttlClass: command.ttlClass }),
      expiresAt: expiry?.toISOString() ?? null,
      version: nextVersion(head),
    },
    metadata: { schemaVersion: 1, userId: key.partition, at: now.toISOString(), ...writerOf(command) },
  };
}

/** Decides a delete: the slot must be live (else 404, or 412 under If-Match) and the condition must hold. */
export function decideDelete(head: SlotEvent | null, key: SlotKey, condition: Pick<SlotCondition, 'ifMatch'>, now: Date, writer: SlotWriter = {}): SlotDeleted {
  const live = liveSlot(head, now);
  if (!live && condition.ifMatch === undefined) throw notFound(`Slot ${key.name}`);
  check(live, condition);
  return {
    type: 'SlotDeleted',
    data: { name: key.name, scope: key.scope, owner: key.owner, version: nextVersion(head) },
    metadata: { schemaVersion: 1, userId: key.partition, at: now.toISOString(), ...writerOf(writer) },
  };
}

/** The API's view of a live slot. */
export function toSlot(event: SlotWritten): Slot {
  const { name, scope, owner, value, ttlClass, version, expiresAt: expiry } = event.data;
  const user = event.metadata.userId;
  return {
    name,
    scope,
    ...(scope !== 'global' && { userId: user }),
    ...(scope === 'private' && owner !== null && { agentId: owner, key: slotGrantKey(owner, event.data.name) }),
    ...(scope === 'session' && owner !== null && { sessionId: owner }),
    value,
    ...(ttlClass && { ttlClass }),
    version,
    updatedAt: event.metadata.at,
    expiresAt: expiry,
  };
}

/** The slot key as the listing orders it (and its cursor names): `|` is not in the Id alphabet, so it is unambiguous. */
export const slotSortKey = (key: SlotKey) => [key.partition, key.scope, key.owner ?? '', key.name].join('|');
