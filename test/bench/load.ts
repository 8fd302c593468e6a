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
  let errors = 0;
  let firstError: unknown;
  let deadline = Number.POSITIVE_INFINITY;
  const worker = async () => {
    for (let i = next++; i < total && now() < deadline; i = next++) {
      const t0 = now();
      try {
        await op(i);
        latencies.push(now() - t0);
      } catch (error) {
        errors += 1;
        firstError ??= error;
      }
    }
  };
  const start = now();
  deadline = start + maxMs;
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  const elapsedMs = now() - start;
  if (errors > 0) console.error(`  ${errors} of ${latencies.length + errors} operations failed; first: ${firstError instanceof Error ? firstError.message : String(firstError)}`);
  return { latencies, elapsedMs, errors };
}

/**
 * Open loop: starts `op(i)` every `periodMs` regardless of how long earlier ones take (a steady offered rate),
 * then waits for all of them.
 */
export async function openLoop(total: number, periodMs: number, op: (i: number) => Promise<void>): Promise<{ elapsedMs: number; errors: number }> {
  const inFlight: Promise<void>[] = [];
  let errors = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    const wait = start + i * periodMs - now();
    if (wait > 1) await sleep(wait);
    inFlight.push(op(i).catch(() => void (errors += 1)));
  }
  await Promise.all(inFlight);
  return { elapsedMs: now() - start, errors };
}
