import { z } from 'zod';
import { TtlClass } from './artifacts.js';
import { Id } from './ids.js';
import { Scope } from './scopes.js';
import { isStorableText, UNSTORABLE_MESSAGE } from './text.js';

/**
 * Slots (core memory): small named JSON values agents read and write directly (`user_profile`, `task_plan`). A slot is
 * identified by (userId, scope, owner, name): the owner is the agentId of a `private` slot, the sessionId of a `session`
 * slot, and none (null) for `user` and `global` slots. Every change is an event of the slot's own stream, numbered by
 * `version` from 1; the slot is the latest event of its stream.
 */
export const SlotName = Id;

/**
 * Global slots belong to no user: their stream is kept under this partition (userId column / partition key). `~` is not
 * in the Id alphabet, so no user id can collide with it, and a forget of any user never reaches it.
 */
export const GLOBAL_SLOT_PARTITION = '~global';

/** The largest slot value, as UTF-8 bytes of its compact JSON (`JSON.stringify`); larger is 413 payload_too_large. */
export const SLOT_VALUE_MAX_BYTES = 16 * 1024;

/** Every string of the value (keys included) must be storable text (no NUL, no lone surrogate): jsonb refuses them. */
function unstorable(value: unknown): boolean {
  if (typeof value === 'string') return !isStorableText(value);
  if (Array.isArray(value)) return value.some(unstorable);
  if (typeof value === 'object' && value !== null) return Object.entries(value).some(([k, v]) => !isStorableText(k) || unstorable(v));
  return false;
}

/** A `__proto__` key would be dropped by the JSON checks (and is a prototype-pollution vector): refused, never altered. */
function protoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(protoKey);
  if (typeof value === 'object' && value !== null) return Object.entries(value).some(([k, v]) => k === '__proto__' || protoKey(v));
  return false;
}

/** Any JSON value whose strings a store holds faithfully; checked on the value as sent, before it is copied. */
export const SlotValue = z
  .unknown()
  .refine((v) => !unstorable(v), `strings ${UNSTORABLE_MESSAGE}`)
  .refine((v) => !protoKey(v), 'object keys must not be __proto__')
  .pipe(z.json());
export type SlotValue = z.infer<typeof SlotValue>;

export const SlotParams = z.object({ userId: Id, name: SlotName });

/** Which slot: the scope (default `user`) and its owner (`agentId` for private, `sessionId` for session). */
export const SlotQuery = z.object({
  scope: Scope.default('user'),
  sessionId: Id.optional(),
  agentId: Id.optional(),
});
export type SlotQuery = z.infer<typeof SlotQuery>;

export const PutSlotBody = z
  .object({
    value: SlotValue.describe(`Any JSON value, at most ${SLOT_VALUE_MAX_BYTES} bytes as compact JSON.`),
    ttlClass: TtlClass.optional().describe('How long it lives from this write: working (30 min), session (2 h), episodic (7 days), semantic (permanent, the default).'),
  })
  .strict();
export type PutSlotBody = z.infer<typeof PutSlotBody>;

/** An entity tag as sent: `"3"`, `W/"3"` or `3`, naming a slot version. */
const VersionTag = z
  .string()
  .trim()
  .transform((s) => s.replace(/^W\//, '').replace(/^"(.*)"$/, '$1'))
  .pipe(z.string().regex(/^[1-9][0-9]{0,9}$/, 'must be a slot version (its ETag)').transform(Number));

/**
 * Conditional writes: `If-Match: <version>` (or `*`: the slot must exist) writes only over that version; `If-None-Match: *`
 * creates only. A condition that does not hold is 412 precondition_failed and changes nothing.
 */
export const SlotWriteHeaders = z
  .object({
    'if-match': z.union([z.literal('*'), VersionTag]).optional(),
    'if-none-match': z.literal('*', 'only If-None-Match: * (create only) is supported').optional(),
  })
  .refine((h) => h['if-match'] === undefined || h['if-none-match'] === undefined, { message: 'give If-Match or If-None-Match, not both', path: ['if-none-match'] });
export type SlotWriteHeaders = z.infer<typeof SlotWriteHeaders>;

export const SlotDeleteHeaders = z.object({ 'if-match': z.union([z.literal('*'), VersionTag]).optional() });

export const ListSlotsQuery = z.object({
  sessionId: Id.optional(),
  agentId: Id.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,1024}$/, 'not a cursor this service issued').optional(),
});
export type ListSlotsQuery = z.infer<typeof ListSlotsQuery>;

// --- the events of a slot's stream ---

const SlotEventMetadata = z.object({
  schemaVersion: z.literal(1),
  /** The user whose slot it is, or GLOBAL_SLOT_PARTITION for a global slot. */
  userId: z.union([Id, z.literal(GLOBAL_SLOT_PARTITION)]),
  /** The agent the writer acted as, when it named one. */
  agentId: Id.optional(),
  at: z.iso.datetime(),
  /**
   * The request that wrote it, unique per write: the writer's check after its write recognises its own event by it (a
   * forgotten stream is written again from version 1). Absent on events written before it was recorded.
   */
  writeId: Id.optional(),
});

const SlotIdentity = {
  name: SlotName,
  scope: Scope,
  /** agentId (private), sessionId (session), null (user, global). */
  owner: Id.nullable(),
  /** The event's position in the slot's stream, from 1; unique per slot (the optimistic append). */
  version: z.number().int().positive(),
};

export const SlotWritten = z.object({
  type: z.literal('SlotWritten'),
  data: z.object({ ...SlotIdentity, value: SlotValue, ttlClass: TtlClass.optional(), expiresAt: z.iso.datetime().nullable() }),
  metadata: SlotEventMetadata,
});
export type SlotWritten = z.infer<typeof SlotWritten>;

export const SlotDeleted = z.object({
  type: z.literal('SlotDeleted'),
  data: z.object(SlotIdentity),
  metadata: SlotEventMetadata,
});
export type SlotDeleted = z.infer<typeof SlotDeleted>;

export const SlotEvent = z.discriminatedUnion('type', [SlotWritten, SlotDeleted]);
export type SlotEvent = z.infer<typeof SlotEvent>;

/** What the API answers for a slot (its ETag header is `"<version>"`). */
export const Slot = z.object({
  name: SlotName,
  scope: Scope,
  /** Absent for a global slot. */
  userId: Id.optional(),
  agentId: Id.optional(),
  sessionId: Id.optional(),
  value: SlotValue,
  ttlClass: TtlClass.optional(),
  version: z.number().int().positive(),
  updatedAt: z.iso.datetime(),
  expiresAt: z.iso.datetime().nullable(),
});
export type Slot = z.infer<typeof Slot>;

/** GET /slots */
export const SlotList = z.object({ items: z.array(Slot), nextCursor: z.string().nullable() });

/** DELETE /slots/{name} */
export const DeletedSlot = z.object({ name: SlotName, scope: Scope, version: z.number().int().positive(), deleted: z.literal(true) });

/** A slot as the context block shows it. */
export const ContextSlot = z.object({ name: SlotName, scope: Scope, value: SlotValue, version: z.number().int().positive() });
export type ContextSlot = z.infer<typeof ContextSlot>;
