import { SlotEvent } from '../../contracts/slots.js';
import type { SlotStore } from '../../application/slot-ports.js';
import { forgetInProgress } from '../../domain/errors.js';
import { keyOf, slotSortKey, type SlotKey } from '../../domain/slots.js';
import type { Db } from './db.js';
import { FORGET_IN_PROGRESS } from './forget.js';

/**
 * Slot streams in PostgreSQL (`slot_events`, migration 17): one row per event, primary key (slot, version), so the
 * optimistic append is an INSERT … ON CONFLICT DO NOTHING. The forget guard trigger refuses writes under a tombstone.
 */
export class PostgresSlotStore implements SlotStore {
  constructor(private readonly db: Db) {}

  async head(key: SlotKey): Promise<SlotEvent | null> {
    const [row] = await this.db.query<{ event: unknown }>(
      'SELECT event FROM slot_events WHERE user_id = $1 AND scope = $2 AND owner = $3 AND name = $4 ORDER BY version DESC LIMIT 1',
      [key.partition, key.scope, key.owner ?? '', key.name],
    );
    return row ? SlotEvent.parse(row.event) : null;
  }

  async at(key: SlotKey, version: number): Promise<SlotEvent | null> {
    const [row] = await this.db.query<{ event: unknown }>(
      'SELECT event FROM slot_events WHERE user_id = $1 AND scope = $2 AND owner = $3 AND name = $4 AND version = $5',
      [key.partition, key.scope, key.owner ?? '', key.name, version],
    );
    return row ? SlotEvent.parse(row.event) : null;
  }

  async append(event: SlotEvent): Promise<boolean> {
    const { scope, owner, name, version } = event.data;
    const key = keyOf(event);
    try {
      const rows = await this.db.query(
        // Only after the version before (a stream a forget purged after the writer read its head takes nothing).
        `INSERT INTO slot_events (user_id, scope, owner, name, version, session_id, sort_key, event)
         SELECT $1, $2, $3, $4, $5, $6, $7, $8
         WHERE $5 = 1 OR EXISTS (SELECT 1 FROM slot_events p WHERE p.user_id = $1 AND p.scope = $2 AND p.owner = $3 AND p.name = $4 AND p.version = $5 - 1)
         ON CONFLICT DO NOTHING RETURNING 1`,
        [key.partition, scope, owner ?? '', name, version, scope === 'session' ? owner : null, slotSortKey(key), JSON.stringify(event)],
      );
      return rows.length > 0;
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === FORGET_IN_PROGRESS) throw forgetInProgress(key.partition, scope === 'session' ? (owner ?? undefined) : undefined);
      throw error;
    }
  }

  async heads(partitions: readonly string[], limit: number, after?: string): Promise<SlotEvent[]> {
    const rows = await this.db.query<{ event: unknown }>(
      `SELECT DISTINCT ON (sort_key) event FROM slot_events
       WHERE user_id = ANY($1::text[]) AND ($2::text IS NULL OR sort_key > $2 COLLATE "C")
       ORDER BY sort_key, version DESC LIMIT $3`,
      [partitions, after ?? null, limit],
    );
    return rows.map((r) => SlotEvent.parse(r.event));
  }
}
