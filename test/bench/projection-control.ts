import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../../shared/adapters/postgres/db.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { now } from './stats.js';

/** The change-feed function's checkpoint name (the pump checkpoints under the function's name). */
export const PROJECTOR = 'cosmos-events-project';

export const dbOf = (runtime: Runtime): Db | undefined => (runtime as Runtime & { db?: Db }).db;

/**
 * Lets the bench hold the local host's change-feed pump back, bound how long it projects, and skip a backlog the bench
 * does not need — without touching the product: the pump reads through `runtime.changeFeed.readFeed`, projects through
 * `runtime.embedder` / `runtime.chat` and writes `runtime.sessions`, so the bench wraps those objects' methods.
 *
 * Why a deadline instead of a timer: PGlite answers without any I/O, so stretches of a pump batch are long chains of
 * promise continuations in which a timer in this thread cannot fire (model inference itself runs on the offline-model
 * thread and no longer blocks this one). So the checks run inside the model calls, which every batch goes through. Each batch the pump reads is
 * tagged (AsyncLocalStorage) so that an aborted batch stays aborted: the scheduler's other workers keep going after the
 * first one fails, and they must not carry on projecting once the bench lets model calls through again.
 *
 * - `pause()` makes the pump see an empty feed; it resolves once the pump has asked for the feed again (its in-flight
 *   batch is over). `pause({ abort: true })` also fails every later model call of the batches read so far, so a long
 *   batch ends at once (the pump retries it later; its checkpoint is not advanced).
 * - `until(ms)`: past that time the pump reads nothing and model calls of its batches fail, as with an abort.
 * - `skip()` pauses with abort, moves the projector's checkpoint to the newest event and resumes: events written until
 *   then are never projected (their sessions stay partly projected; the bench does not read them again).
 * - `projectedEvents` counts the events the projection has folded into session documents (from the writes).
 */
export class ProjectionControl {
  private paused = false;
  private deadline = Number.POSITIVE_INFINITY;
  private pausedReads = 0;
  /** Tag of the last batch read; batches tagged below `validFrom` are aborted. */
  private batch = 0;
  private validFrom = 0;
  private readonly tags = new AsyncLocalStorage<number>();
  private aborts = 0;
  private reported = 0;
  private readonly lastProjected = new Map<string, number>();
  projectedEvents = 0;
  private readonly restore: (() => void)[] = [];

  constructor(private readonly runtime: Runtime) {
    const feed = runtime.changeFeed;
    if (feed) {
      const readFeed = feed.readFeed;
      // Not async: enterWith must run in the pump's own execution so the tag follows the batch into the handler.
      feed.readFeed = (cursor, limit) => {
        if (this.paused || now() >= this.deadline) {
          this.pausedReads += 1;
          return Promise.resolve({ events: [], cursor });
        }
        this.tags.enterWith(++this.batch);
        return readFeed.call(feed, cursor, limit);
      };
      this.restore.push(() => (feed.readFeed = readFeed));
    }
    // The projection queue (served by the change-feed handler and the host's scheduler loop) is held back with the feed:
    // while paused or past the deadline nothing is claimed; a slice claimed before finishes (slices are short).
    const queue = runtime.projectionQueue;
    const { claim, claimSessions } = queue;
    const held = () => this.paused || now() >= this.deadline;
    queue.claim = (limit, at, leaseUntil) => (held() ? Promise.resolve([]) : claim.call(queue, limit, at, leaseUntil));
    queue.claimSessions = (keys, at, leaseUntil) => (held() ? Promise.resolve([]) : claimSessions.call(queue, keys, at, leaseUntil));
    this.restore.push(() => Object.assign(queue, { claim, claimSessions }));
    const guard = () => {
      const tag = this.tags.getStore();
      if (tag === undefined) return; // not the pump (a request): never touched
      if (now() >= this.deadline) this.validFrom = Math.max(this.validFrom, tag + 1);
      if (tag < this.validFrom) {
        this.aborts += 1;
        throw new Error('bench: projection aborted');
      }
    };
    // The pump reports each failed batch on stderr, and the queue's timer each failed projection: the ones the bench
    // caused are dropped.
    const error = console.error;
    const causedHere = (line: string) => line.startsWith('change-feed pump') || /timer-projection-queue warning: Projection of \S+ failed \(Error\)/.test(line);
    console.error = (...args: unknown[]) => {
      if (this.aborts > this.reported && typeof args[0] === 'string' && causedHere(args[0])) {
        this.reported = this.aborts;
        return;
      }
      error(...args);
    };
    this.restore.push(() => (console.error = error));
    const { embedder, chat, sessions } = runtime;
    const embed = embedder.embed;
    embedder.embed = async (texts) => {
      guard();
      return embed.call(embedder, texts);
    };
    const run = chat.run;
    chat.run = (async (task, input) => {
      guard();
      return run.call(chat, task, input);
    }) as typeof chat.run;
    const key = (userId: string, sessionId: string) => `${userId}\u0000${sessionId}`;
    const get = sessions.get;
    sessions.get = async (k) => {
      const stored = await get.call(sessions, k);
      if (stored) this.lastProjected.set(key(k.userId, k.sessionId), stored.doc.projectedThroughSeq);
      return stored;
    };
    const put = sessions.put;
    sessions.put = async (doc, expectedVersion) => {
      const version = await put.call(sessions, doc, expectedVersion);
      const k = key(doc.userId, doc.sessionId);
      const before = expectedVersion === null ? 0 : (this.lastProjected.get(k) ?? doc.projectedThroughSeq);
      this.projectedEvents += Math.max(0, doc.projectedThroughSeq - before);
      this.lastProjected.set(k, doc.projectedThroughSeq);
      return version;
    };
    this.restore.push(
      () => (embedder.embed = embed),
      () => (chat.run = run),
      () => (sessions.get = get),
      () => (sessions.put = put),
    );
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** Model calls fail (and the pump reads nothing) from `ms` from now until `resume()` or the next `until()`. */
  until(ms: number): void {
    this.deadline = now() + ms;
  }

  async pause(options: { abort?: boolean } = {}): Promise<void> {
    if (!this.runtime.changeFeed) return;
    this.paused = true;
    if (options.abort) this.validFrom = this.batch + 1;
    const seen = this.pausedReads;
    while (this.pausedReads === seen) await sleep(5);
  }

  resume(): void {
    this.paused = false;
    this.deadline = Number.POSITIVE_INFINITY;
  }

  /** Events written but not yet checkpointed by the pump (the feed after its checkpoint), plus the sessions still queued. */
  async backlog(): Promise<number> {
    const db = dbOf(this.runtime);
    const feed = this.runtime.changeFeed;
    if (!db || !feed) return 0;
    const [tx, position] = ((await feed.loadCheckpoint(PROJECTOR)) ?? '0:0').split(':');
    const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM events WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)', [tx, position]);
    return (row?.n ?? 0) + (await this.runtime.projectionQueue.size());
  }

  /** Skips the current backlog (see the class comment); returns how many events were skipped. Leaves the pump running. */
  async skip(): Promise<number> {
    const db = dbOf(this.runtime);
    const feed = this.runtime.changeFeed;
    if (!db || !feed) return 0;
    await this.pause({ abort: true });
    const skipped = await this.backlog();
    const [last] = await db.query<{ tx_id: string; position: string }>('SELECT e.tx_id::text AS tx_id, e.position::text AS position FROM events e ORDER BY e.tx_id DESC, e.position DESC LIMIT 1');
    if (last) await feed.saveCheckpoint(PROJECTOR, `${last.tx_id}:${last.position}`);
    await db.query('DELETE FROM projection_queue');
    this.resume();
    return skipped;
  }

  /**
   * Lets the pump work until the backlog is empty or `budgetMs` has passed, then holds it back (paused, any batch
   * aborted). Returns the events projected meanwhile (counted from the session writes) and the backlog left.
   */
  async drain(budgetMs: number): Promise<{ projected: number; left: number; ms: number }> {
    const start = now();
    const before = this.projectedEvents;
    this.resume();
    this.until(budgetMs);
    let left = await this.backlog();
    while (left > 0 && now() - start < budgetMs) {
      await sleep(50);
      left = await this.backlog();
    }
    const ms = now() - start;
    const projected = this.projectedEvents - before;
    await this.pause({ abort: true });
    return { projected, left: await this.backlog(), ms };
  }

  dispose(): void {
    this.restore.reverse().forEach((undo) => undo());
  }
}
