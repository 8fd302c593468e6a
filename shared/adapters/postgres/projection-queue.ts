import type { SessionKey } from '../../contracts/ids.js';
import type { ProjectionQueue, QueuedSession } from '../../application/projection-ports.js';
import type { Db } from './db.js';

interface Row {
  user_id: string;
  session_id: string;
  generation: number;
  failures: number;
  lease_until: Date;
}

const entryOf = (r: Row): QueuedSession => ({
  key: { userId: r.user_id, sessionId: r.session_id },
  generation: r.generation,
  failures: r.failures,
  leasedUntil: new Date(r.lease_until).getTime(),
});

/** Each session once (an upsert may not touch one row twice). */
function columns(keys: readonly SessionKey[]): [string[], string[]] {
  const unique = new Map(keys.map((k) => [JSON.stringify([k.userId, k.sessionId]), k]));
  return [[...unique.values()].map((k) => k.userId), [...unique.values()].map((k) => k.sessionId)];
}

/**
 * The projection queue in PostgreSQL (`projection_queue`, migration 20). A claim is one UPDATE over the rows picked
 * with FOR UPDATE SKIP LOCKED, so concurrent schedulers on one server take different sessions.
 */
export class PostgresProjectionQueue implements ProjectionQueue {
  constructor(private readonly db: Db) {}

  async enqueue(keys: readonly SessionKey[], now: Date): Promise<SessionKey[]> {
    if (keys.length === 0) return [];
    const [users, sessions] = columns(keys);
    const rows = await this.db.query<Row>(
      `INSERT INTO projection_queue (user_id, session_id, queued_at, served_at, due_at, lease_until)
       SELECT u, s, $3, '-infinity', $3, $3 FROM unnest($1::text[], $2::text[]) AS k(u, s)
       ON CONFLICT (user_id, session_id) DO UPDATE SET generation = projection_queue.generation + 1
       RETURNING user_id, session_id, generation, failures, lease_until`,
      [users, sessions, now.toISOString()],
    );
    return rows.filter((r) => r.generation === 1).map((r) => entryOf(r).key);
  }

  async claim(limit: number, now: Date, leaseUntil: Date): Promise<QueuedSession[]> {
    return this.lease('TRUE', [Math.max(1, Math.floor(limit))], now, leaseUntil);
  }

  async claimSessions(keys: readonly SessionKey[], now: Date, leaseUntil: Date): Promise<QueuedSession[]> {
    if (keys.length === 0) return [];
    const [users, sessions] = columns(keys);
    return this.lease('(user_id, session_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))', [keys.length, users, sessions], now, leaseUntil);
  }

  async extend(entry: QueuedSession, leaseUntil: Date): Promise<QueuedSession | null> {
    const [row] = await this.db.query<Row>(
      `UPDATE projection_queue SET lease_until = $3 WHERE user_id = $1 AND session_id = $2 AND lease_until = $4
       RETURNING user_id, session_id, generation, failures, lease_until`,
      [entry.key.userId, entry.key.sessionId, leaseUntil.toISOString(), new Date(entry.leasedUntil).toISOString()],
    );
    return row ? entryOf(row) : null;
  }

  async requeue(entry: QueuedSession, now: Date): Promise<void> {
    // An upsert: if the lease ran out and another scheduler finished the session meanwhile, what is pending stays queued.
    await this.db.query(
      `INSERT INTO projection_queue (user_id, session_id, queued_at, served_at, due_at, lease_until) VALUES ($1, $2, $3, $3, $3, $3)
       ON CONFLICT (user_id, session_id) DO UPDATE SET served_at = $3, due_at = $3, lease_until = $3, failures = 0`,
      [entry.key.userId, entry.key.sessionId, now.toISOString()],
    );
  }

  async done(entry: QueuedSession, now: Date): Promise<void> {
    await this.db.query(
      `WITH gone AS (DELETE FROM projection_queue WHERE user_id = $1 AND session_id = $2 AND generation = $3 RETURNING 1)
       UPDATE projection_queue SET served_at = $4, due_at = $4, lease_until = $4, failures = 0
       WHERE user_id = $1 AND session_id = $2 AND NOT EXISTS (SELECT 1 FROM gone)`,
      [entry.key.userId, entry.key.sessionId, entry.generation, now.toISOString()],
    );
  }

  async failed(entry: QueuedSession, now: Date, retryAt: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO projection_queue (user_id, session_id, failures, queued_at, served_at, due_at, lease_until) VALUES ($1, $2, 1, $3, $3, $4, $3)
       ON CONFLICT (user_id, session_id) DO UPDATE SET failures = projection_queue.failures + 1, served_at = $3, due_at = $4, lease_until = $3`,
      [entry.key.userId, entry.key.sessionId, now.toISOString(), retryAt.toISOString()],
    );
  }

  async size(): Promise<number> {
    const [row] = await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM projection_queue');
    return row?.n ?? 0;
  }

  /** Leases up to $1 rows matching `where` that are due and not leased, least recently served first. */
  private async lease(where: string, params: unknown[], now: Date, leaseUntil: Date): Promise<QueuedSession[]> {
    const at = params.length + 1;
    const rows = await this.db.query<Row & { served_at: string }>(
      `UPDATE projection_queue q SET lease_until = $${at + 1}
       FROM (SELECT user_id, session_id FROM projection_queue
             WHERE ${where} AND due_at <= $${at} AND lease_until <= $${at}
             ORDER BY served_at, queued_at LIMIT $1 FOR UPDATE SKIP LOCKED) c
       WHERE q.user_id = c.user_id AND q.session_id = c.session_id
       RETURNING q.user_id, q.session_id, q.generation, q.failures, q.lease_until, q.served_at::text AS served_at`,
      [...params, now.toISOString(), leaseUntil.toISOString()],
    );
    return rows.sort((a, b) => (a.served_at < b.served_at ? -1 : a.served_at > b.served_at ? 1 : 0)).map(entryOf);
  }
}
