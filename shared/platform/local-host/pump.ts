import type { ChangeFeed } from '../../application/ports.js';
import type { ChangeFeedHandler } from '../functions.js';
import { invocationContext } from './invocation.js';

export interface PumpOptions {
  /** Checkpoint name: one per consuming function, like a lease prefix. */
  name: string;
  batchSize: number;
  intervalMs: number;
  /** After a wake-up, how long appends may gather before the pump reads (default 20 ms, at most `intervalMs`). */
  coalesceMs?: number;
  /** Retries of a failing batch before the handler is told it is the last one (default 3; it may set events aside). */
  maxRetries?: number;
  /** Called after each batch is handled and checkpointed (the local host wakes the projection queue's scheduler). */
  afterBatch?: () => void;
}

/**
 * The local stand-in for the Cosmos change-feed trigger: reads committed events in order, hands each batch to the
 * same handler, and checkpoints only after the handler succeeded — a crash in between re-delivers the batch, which the
 * idempotent projection absorbs. A failing batch is retried with backoff and never skipped; from its `maxRetries`th
 * retry on, the handler's retry context says it is the last, as the Functions host's retry policy would, so the
 * projection sets aside an event its store refuses and the feed moves on.
 *
 * Wake-ups are coalesced: the first `wake()` after the pump went idle schedules one read `coalesceMs` later, and every
 * further `wake()` until then (a burst of single-turn appends) rides on it; a `wake()` while a pass is running makes
 * the pump read again shortly after the pass instead of waiting for the next poll. Which events a read returns is the
 * feed's business (it never reads past a transaction still open), so coalescing only changes when the pump reads,
 * never what: an event that commits late is read by a later pass or poll.
 */
export class ChangeFeedPump {
  private stopping = false;
  /** A wake() arrived since the last read of the feed began. */
  private woken = false;
  /** Ends the current idle wait early (unset during a failure's backoff). */
  private wakeUp: (() => void) | undefined;
  /** Ends the current idle wait, backoff included (stop). */
  private release: (() => void) | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly coalesceMs: number;
  /** Failed attempts of the current batch, handed to the handler as its retry context. */
  private failures = 0;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly handler: ChangeFeedHandler,
    private readonly options: PumpOptions,
  ) {
    this.coalesceMs = Math.max(0, Math.min(options.coalesceMs ?? 20, options.intervalMs));
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Ask for a read soon (after an append) instead of waiting for the next poll; bursts share one read. */
  wake(): void {
    if (this.stopping) return;
    this.woken = true;
    if (this.wakeUp) this.scheduleWakeUp();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.release?.();
    await this.running;
  }

  /** Reads and handles batches until the feed is empty; returns how many events were handled. */
  async drain(): Promise<number> {
    let cursor = await this.feed.loadCheckpoint(this.options.name);
    let handled = 0;
    for (;;) {
      this.woken = false; // wake-ups from here on may be for events this read does not see yet
      const batch = await this.feed.readFeed(cursor, this.options.batchSize);
      if (batch.events.length === 0 || batch.cursor === null) return handled;
      const retryContext = { retryCount: this.failures, maxRetryCount: this.options.maxRetries ?? 3 };
      await this.handler(batch.events, invocationContext(this.options.name, {}, retryContext));
      this.failures = 0;
      await this.feed.saveCheckpoint(this.options.name, batch.cursor);
      this.options.afterBatch?.();
      cursor = batch.cursor;
      handled += batch.events.length;
      if (this.stopping) return handled;
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        await this.drain();
        await this.idle(this.options.intervalMs);
      } catch (error) {
        // After stop, the host closes the stores a batch still in flight waits on: that batch is abandoned, not failed;
        // its checkpoint was not saved, so the next start reads it again.
        if (this.stopping) {
          console.warn(`change-feed pump ${this.options.name}: batch abandoned at shutdown`);
          return;
        }
        this.failures += 1;
        console.error(`change-feed pump ${this.options.name}: batch failed (${error instanceof Error ? error.name : 'unknown'}), retry ${this.failures}`);
        await this.idle(Math.min(30_000, this.options.intervalMs * 2 ** this.failures), { backoff: true });
      }
    }
  }

  /** Waits `ms`, or less when woken (not during a failure's backoff: a wake-up must not turn it into a hot retry loop). */
  private async idle(ms: number, { backoff = false } = {}): Promise<void> {
    if (this.stopping) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      this.release = resolve;
      this.wakeUp = backoff ? undefined : resolve;
      if (!backoff && this.woken) this.scheduleWakeUp(); // woken during the pass that just ended
    });
    clearTimeout(timer);
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.wakeUp = undefined;
    this.release = undefined;
  }

  private scheduleWakeUp(): void {
    this.wakeTimer ??= setTimeout(() => this.wakeUp?.(), this.coalesceMs);
  }
}
