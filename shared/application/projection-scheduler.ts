import type { MemoryEvent } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import { errorLabel, projectSession, touchedSessions, type ProjectionDeps } from './project-session.js';
import type { ProjectionQueue, QueuedSession } from './projection-ports.js';

/** How the queue is served (PROJECTION_* settings). */
export interface ProjectionSchedule {
  /** Events past a session's checkpoint projected per slice. */
  sliceEvents: number;
  /** Sessions served at once. */
  parallelism: number;
  /** How long one serving of the queue goes on claiming slices (a slice in flight then finishes). */
  budgetMs: number;
}

export type SchedulerDeps = ProjectionDeps & { projectionQueue: ProjectionQueue };

/** Failed slices in a row after which the next attempt sets aside an event its store refuses (the pump's third retry). */
export const PROJECTION_RETRIES = 3;
/**
 * How long a claim holds a session: short enough that a crashed scheduler's sessions are soon served again. A slice
 * that runs longer (under load: its windows' model calls queue) extends it every third of that while it runs.
 */
export const LEASE_MS = 30_000;
/** The wait after the nth failure in a row: 2 s, 4 s, 8 s … at most 2 min, as the change feed's retry policy. */
export const retryDelayMs = (failures: number): number => Math.min(120_000, 2_000 * 2 ** Math.max(0, failures - 1));

/** How often a serving with free slots looks at the queue again while its slices run. */
const IDLE_LOOK_MS = 250;

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export interface ServeReport {
  /** Slices projected. */
  slices: number;
  /** Sessions that caught up and left the queue. */
  caughtUp: number;
  /** Slices that failed (their sessions stay queued, due again after a backoff): the session and the error's class. */
  failed: { key: SessionKey; error: string }[];
}

/** Queues the sessions a change-feed batch touched; returns those that were not queued before (nothing was pending). */
export async function enqueueProjection(deps: Pick<SchedulerDeps, 'projectionQueue' | 'clock'>, events: readonly MemoryEvent[]): Promise<SessionKey[]> {
  return deps.projectionQueue.enqueue(touchedSessions(events), deps.clock.now());
}

/**
 * The sessions of a change-feed batch to serve at once, each bringing fewer events than a slice: those new to the
 * queue (`fresh`), so a new user's turn is projected by the batch that delivers it, and those queued already whose
 * document is projected up to the batch's first event of theirs (what keeps them queued is a window left to decide,
 * not a backlog), so a session's next turn is not held behind the windows the scheduler is deciding. A session that
 * arrives with a backlog is left to the scheduler, so the feed moves on without waiting for its slice: one that brings
 * a slice or more, and, when the batch has more such sessions than `parallelism` (the at-once serving would take
 * several rounds of slices), one whose stream goes on past the batch by more than the batch brings. A feed behind its
 * store brings each session's first events while the rest waits in later batches, and an at-once slice takes what the
 * store holds: served at once, 100 sessions of 100 turns held the feed, and a new user's turn, for 54 s. Within one
 * round the slices run side by side, and a slice's length bounds the wait, as for the scheduler's own; a session
 * whose stream goes on by no more than the batch brings (an append racing the feed's read) is served at once either
 * way. One the scheduler is serving is not claimed again (its new turn waits for that slice only).
 */
export async function sessionsToServeAtOnce(
  deps: Pick<SchedulerDeps, 'sessions' | 'events'>,
  fresh: readonly SessionKey[],
  events: readonly MemoryEvent[],
  schedule: Pick<ProjectionSchedule, 'sliceEvents' | 'parallelism'>,
): Promise<SessionKey[]> {
  const counts = new Map<string, number>();
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  for (const { metadata } of events) {
    const key = keyOf(metadata);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (!first.has(key)) first.set(key, metadata.seq);
    last.set(key, Math.max(last.get(key) ?? 0, metadata.seq));
  }
  const isFresh = new Set(fresh.map(keyOf));
  const small = touchedSessions(events).filter((k) => counts.get(keyOf(k))! < schedule.sliceEvents);
  const queued = small.filter((k) => !isFresh.has(keyOf(k)));
  const through = await deps.sessions.projectedThrough(queued);
  const caughtUp = new Set(queued.filter((k, i) => through[i]! >= first.get(keyOf(k))! - 1).map(keyOf));
  const candidates = small.filter((k) => isFresh.has(keyOf(k)) || caughtUp.has(keyOf(k)));
  if (candidates.length <= schedule.parallelism) return candidates;
  return only(candidates, async (k) => (await deps.events.lastSeq(k)) - last.get(keyOf(k))! <= counts.get(keyOf(k))!);
}

/** The keys the check passes, in order (checked side by side). */
async function only(keys: readonly SessionKey[], check: (key: SessionKey) => Promise<boolean>): Promise<SessionKey[]> {
  const passed = await Promise.all(keys.map(check));
  return keys.filter((_, i) => passed[i]);
}

const keyOf = ({ userId, sessionId }: SessionKey): string => JSON.stringify([userId, sessionId]);

/**
 * Serves the projection queue fairly: a slice per claim, sessions never served first, then the least recently served,
 * `parallelism` sessions at once, until nothing is due or in flight, or `budgetMs` is used; a session with more pending
 * goes to the back. One busy session therefore delays another by at most the slices in flight. Each free slot is
 * claimed for as soon as it frees, and while slots are free and nothing was due the queue is looked at again every
 * IDLE_LOOK_MS, so sessions queued meanwhile (by the change feed) are served by this serving, not after its longest
 * slice. A failing slice leaves its session queued with backoff and never holds up the others; once it has failed
 * PROJECTION_RETRIES times in a row, the next attempt sets aside the event its store refuses (`isolate`). With
 * `sessions`, serves just those (each one slice): a change-feed batch's new sessions, whose turns are projected at once
 * while the windows they complete stay queued for the next serving.
 */
export async function serveProjectionQueue(
  deps: SchedulerDeps,
  schedule: ProjectionSchedule,
  options: { sessions?: readonly SessionKey[]; /** At most this many slices (claims), besides the time budget. */ slices?: number } = {},
): Promise<ServeReport> {
  const report: ServeReport = { slices: 0, caughtUp: 0, failed: [] };
  const now = () => deps.clock.now();
  const leaseUntil = () => new Date(now().getTime() + LEASE_MS);
  if (options.sessions) {
    const claimed = await deps.projectionQueue.claimSessions(options.sessions, now(), leaseUntil());
    const next = () => claimed.shift();
    const worker = async () => {
      for (let entry = next(); entry; entry = next()) await serve(deps, schedule, entry, report, true);
    };
    await settle(Array.from({ length: Math.min(schedule.parallelism, claimed.length) }, () => worker()));
    return report;
  }
  const deadline = now().getTime() + schedule.budgetMs;
  let claims = options.slices ?? Number.POSITIVE_INFINITY;
  const inFlight = new Set<Promise<void>>();
  // A failure of the queue itself: no more claims, and thrown once every slice has finished (none is left running in
  // the background).
  let broken: { reason: unknown } | undefined;
  // One look-again timer at a time, however often slots free meanwhile.
  let look: Promise<void> | undefined;
  const lookAgain = () => (look ??= delay(IDLE_LOOK_MS).then(() => void (look = undefined)));
  try {
    while (!broken && now().getTime() < deadline && claims > 0) {
      const free = Math.min(schedule.parallelism - inFlight.size, claims);
      const entries = free > 0 ? await deps.projectionQueue.claim(free, now(), leaseUntil()) : [];
      claims -= entries.length;
      for (const entry of entries) {
        const slice: Promise<void> = serve(deps, schedule, entry, report)
          .catch((reason: unknown) => void (broken ??= { reason }))
          .finally(() => inFlight.delete(slice));
        inFlight.add(slice);
      }
      if (inFlight.size === 0) break;
      // A slot frees, or, with slots free and nothing due, the queue is looked at again.
      await Promise.race([...inFlight, ...(entries.length < free ? [lookAgain()] : [])]);
    }
  } finally {
    await Promise.all(inFlight);
  }
  if (broken) throw broken.reason;
  return report;
}

/** Waits for every promise, then throws the first failure. */
async function settle(work: readonly Promise<void>[]): Promise<void> {
  const broken = (await Promise.allSettled(work)).find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (broken) throw broken.reason;
}

/**
 * One slice of one session, and its queue entry updated: to the back, removed, or failed with backoff. `deferWindows`
 * (the change feed's sessions): a window the new turns complete is left queued, so the feed does not wait for its
 * model call and embeddings.
 */
async function serve(deps: SchedulerDeps, schedule: ProjectionSchedule, entry: QueuedSession, report: ServeReport, deferWindows = false): Promise<void> {
  let pending: boolean;
  try {
    const stopExtending = keepLeased(deps, entry);
    try {
      ({ pending } = await projectSession(deps, entry.key, { sliceEvents: schedule.sliceEvents, isolate: entry.failures >= PROJECTION_RETRIES, deferWindows }));
    } finally {
      stopExtending();
    }
  } catch (error) {
    report.failed.push({ key: entry.key, error: errorLabel(error) });
    const at = deps.clock.now();
    await deps.projectionQueue.failed(entry, at, new Date(at.getTime() + retryDelayMs(entry.failures + 1)));
    return;
  }
  report.slices += 1;
  if (pending) return deps.projectionQueue.requeue(entry, deps.clock.now());
  await deps.projectionQueue.done(entry, deps.clock.now());
  report.caughtUp += 1;
}

/**
 * Extends the claim's lease every third of LEASE_MS while its slice runs, so that no other scheduler serves the session
 * meanwhile: under load a slice can outlast a lease (42 s seen at 1,000 turns/s offered), and a session served twice at
 * once asks the models twice for its windows. Stops once the claim no longer holds the lease; an extension that fails
 * is tried again at the next tick (the lease runs out otherwise, as without extensions). Returns the stop.
 */
function keepLeased(deps: SchedulerDeps, entry: QueuedSession): () => void {
  let held: QueuedSession | null = entry;
  // One extension at a time: each needs the lease the one before set.
  let extending = Promise.resolve();
  const timer = setInterval(() => {
    extending = extending.then(async () => {
      if (!held) return;
      held = await deps.projectionQueue.extend(held, new Date(deps.clock.now().getTime() + LEASE_MS)).catch(() => held);
      if (!held) clearInterval(timer);
    });
  }, LEASE_MS / 3);
  timer.unref();
  return () => clearInterval(timer);
}
