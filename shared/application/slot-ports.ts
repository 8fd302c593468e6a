import type { SlotEvent } from '../contracts/slots.js';
import { MemoryError } from '../domain/errors.js';
import type { SlotKey } from '../domain/slots.js';

/**
 * Slot streams (core memory): one stream of SlotWritten / SlotDeleted events per slot, numbered by `version` from 1.
 * Events are immutable; the slot is its stream's latest event. `partition` is the user, or GLOBAL_SLOT_PARTITION.
 */
export interface SlotStore {
  /** The latest event of the slot's stream, or null when it has none. */
  head(key: SlotKey): Promise<SlotEvent | null>;
  /** The event at `version` of the slot's stream, or null when it has none there. */
  at(key: SlotKey, version: number): Promise<SlotEvent | null>;
  /**
   * Appends the event at `event.data.version` unless the stream already has that version: the optimistic append, so of
   * two writers that decided the same version exactly one gets true. A write refused under a forget is forget_in_progress.
   */
  append(event: SlotEvent): Promise<boolean>;
  /**
   * The latest event of every stream in `partitions`, ordered by slot sort key (domain/slots.ts slotSortKey) after
   * `after` (exclusive); at most `limit`. Deleted and expired slots are included: the caller decides what is live.
   */
  heads(partitions: readonly string[], limit: number, after?: string): Promise<SlotEvent[]>;
}

export const encodeSlotCursor = (sortKey: string) => Buffer.from(sortKey, 'utf8').toString('base64url');

const SORT_KEY = /^(~global|[A-Za-z0-9._:-]{1,128})\|(private|session|user|global)\|[A-Za-z0-9._:-]{0,128}\|[A-Za-z0-9._:-]{1,128}$/;

export function decodeSlotCursor(cursor: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!SORT_KEY.test(decoded)) throw new MemoryError('validation_failed', 'cursor is not one this service issued', { errors: [{ path: 'query.cursor', message: 'unknown cursor' }] });
  return decoded;
}
