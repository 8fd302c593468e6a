import { setTimeout as sleep } from 'node:timers/promises';
import type { ChangeFeed } from '../../application/ports.js';
import type { ChangeFeedHandler } from '../functions.js';
import { invocationContext } from './invocation.js';

export interface PumpOptions {
  /** Checkpoint name: one per consuming function, like a lease prefix. */
  name: string;
  batchSize: number;
  intervalMs: number;
}

/**
 * The local stand-in for the Cosmos change-feed trigger: reads committed events in order, hands each batch to the
 * same handler, and checkpoints only after the handler succeeded — a crash in between re-delivers the batch, which the
 * idempotent projection absorbs. A failing batch is retried with backoff and never skipped.
 */
export class ChangeFeedPump {
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly feed: ChangeFeed,
    private readonly handler: ChangeFeedHandler,
    private readonly options: PumpOptions,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** Ask for an immediate read (after an append) instead of waiting for the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.running;
  }

  /** Reads and handles batches until the feed is empty; returns how many events were handled. */
  async drain(): Promise<number> {
    let cursor = await this.feed.loadCheckpoint(this.options.name);
    let handled = 0;
    for (;;) {
      const batch = await this.feed.readFeed(cursor, this.options.batchSize);
      if (batch.events.length === 0 || batch.cursor === null) return handled;
      await this.handler(batch.events, invocationContext(this.options.name));
      await this.feed.saveCheckpoint(this.options.name, batch.cursor);
      cursor = batch.cursor;
      handled += batch.events.length;
      if (this.stopping) return handled;
    }
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      try {
        await this.drain();
        failures = 0;
        await this.idle(this.options.intervalMs);
      } catch (error) {
        failures += 1;
        console.error(`change-feed pump ${this.options.name}: batch failed (${error instanceof Error ? error.name : 'unknown'}), retry ${failures}`);
        await this.idle(Math.min(30_000, this.options.intervalMs * 2 ** failures));
      }
    }
  }

  private async idle(ms: number): Promise<void> {
    if (this.stopping) return;
    const woken = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([sleep(ms), woken]);
    this.wakeUp = undefined;
  }
}
