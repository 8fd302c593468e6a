import { setTimeout as sleep } from 'node:timers/promises';
import { now } from './stats.js';

export interface LoadResult {
  /** Latency of every operation, in ms. */
  latencies: number[];
  /** Wall time of the whole run, in ms. */
  elapsedMs: number;
  errors: number;
}

/**
 * Closed loop: `concurrency` workers each run `op(i)` back to back until `total` operations were started or `maxMs`
 * has passed (operations in flight then still finish). An operation that throws counts as an error (no latency recorded).
 */
export async function closedLoop(total: number, concurrency: number, op: (i: number) => Promise<void>, maxMs = Number.POSITIVE_INFINITY): Promise<LoadResult> {
  const latencies: number[] = [];
  let next = 0;
  const failures = new Failures();
  let deadline = Number.POSITIVE_INFINITY;
  const worker = async () => {
    for (let i = next++; i < total && now() < deadline; i = next++) {
      const t0 = now();
      try {
        await op(i);
        latencies.push(now() - t0);
      } catch (error) {
        failures.add(error);
      }
    }
  };
  const start = now();
  deadline = start + maxMs;
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const elapsedMs = now() - start;
  failures.report(latencies.length);
  return { latencies, elapsedMs, errors: failures.count };
}

/**
 * Open loop: starts `op(i)` every `periodMs` regardless of how long earlier ones take (a steady offered rate),
 * then waits for all of them.
 */
export async function openLoop(total: number, periodMs: number, op: (i: number) => Promise<void>): Promise<{ elapsedMs: number; errors: number }> {
  const inFlight: Promise<void>[] = [];
  const failures = new Failures();
  const start = now();
  for (let i = 0; i < total; i++) {
    const wait = start + i * periodMs - now();
    if (wait > 1) await sleep(wait);
    inFlight.push(op(i).catch((error: unknown) => failures.add(error)));
  }
  await Promise.all(inFlight);
  failures.report(total - failures.count);
  return { elapsedMs: now() - start, errors: failures.count };
}

/** Failed operations, counted by message ("HTTP 503"), printed so that a run says why its requests failed. */
class Failures {
  count = 0;
  private readonly byMessage = new Map<string, number>();

  add(error: unknown): void {
    this.count += 1;
    const message = error instanceof Error ? error.message : String(error);
    this.byMessage.set(message, (this.byMessage.get(message) ?? 0) + 1);
  }

  report(succeeded: number): void {
    if (this.count === 0) return;
    const kinds = [...this.byMessage].map(([message, n]) => `${message} × ${n}`).join(', ');
    console.error(`  ${this.count} of ${succeeded + this.count} operations failed: ${kinds}`);
  }
}
