import type { SessionKey } from '../contracts/ids.js';

/** A session in the projection queue, as a scheduler claimed it. */
export interface QueuedSession {
  key: SessionKey;
  /** Goes up each time the session is queued again; `done` removes the entry only if it is still this one. */
  generation: number;
  /** Slices of the session that failed in a row (backoff, and `isolate` once it reaches the retry limit). */
  failures: number;
  /** When the lease this claim holds ends (epoch ms): what tells this claim from a later one's. */
  leasedUntil: number;
}

/**
 * The sessions whose projection may be pending, served a slice at a time by the scheduler (projection-scheduler.ts).
 * Durable, so a session queued by a change-feed batch is served even if the process ends before it is. Claims are
 * leases: two schedulers rarely serve one session at once, and when they do the projection's optimistic concurrency
 * keeps it correct. Times are the caller's (its clock).
 */
export interface ProjectionQueue {
  /**
   * Queues the sessions (idempotent). A session queued already keeps its place and its backoff, and its generation goes
   * up, so a scheduler serving it meanwhile does not remove it. Returns the sessions that were not queued before.
   */
  enqueue(keys: readonly SessionKey[], now: Date): Promise<SessionKey[]>;
  /**
   * Leases up to `limit` sessions that are due and not leased until `leaseUntil`: those never served first (in the
   * order queued), then the least recently served.
   */
  claim(limit: number, now: Date, leaseUntil: Date): Promise<QueuedSession[]>;
  /** Leases these sessions, those of them queued, due and not leased (a change-feed batch serves the sessions it queued). */
  claimSessions(keys: readonly SessionKey[], now: Date, leaseUntil: Date): Promise<QueuedSession[]>;
  /**
   * Moves the end of the lease this claim holds to `leaseUntil` (a slice running longer than a lease): the entry with
   * its new lease, or null, nothing changed, when the claim no longer holds it (the lease ran out and another scheduler
   * claimed the session, or the session was requeued, done or failed).
   */
  extend(entry: QueuedSession, leaseUntil: Date): Promise<QueuedSession | null>;
  /** Served a slice and more is pending: to the back of the queue (served now), lease released, failures cleared. */
  requeue(entry: QueuedSession, now: Date): Promise<void>;
  /** Served and nothing is pending: removed, unless it was queued again since it was claimed (then as `requeue`). */
  done(entry: QueuedSession, now: Date): Promise<void>;
  /** The slice failed: one failure more, not due before `retryAt`, to the back of the queue, lease released. */
  failed(entry: QueuedSession, now: Date, retryAt: Date): Promise<void>;
  /** How many sessions are queued (due or not). */
  size(): Promise<number>;
}
