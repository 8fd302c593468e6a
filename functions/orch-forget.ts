import type { OrchestrationContext } from 'durable-functions';
import { FORGET_MAX_ROUNDS, forget, type ForgetOutput } from '../shared/application/workflows/forget.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';
import { callStep, type Orchestration } from '../shared/platform/workflows.js';

/**
 * Forget a user or a session (steps in shared/application/workflows/forget.ts): tombstone → durable histories → blobs
 * → store items → verification scan, the purge repeated until the scan finds nothing (at most FORGET_MAX_ROUNDS rounds;
 * then the operation fails with the residual counts, and a new DELETE re-runs it) → tombstone cleared, unless a
 * late writer enlisted with it after the scan (then another round). Deterministic.
 * Instance id from `forgetInstanceId`.
 */
export function* forgetOrchestrator(context: OrchestrationContext): Orchestration<ForgetOutput> {
  const input = forget.input.parse(context.df.getInput());
  const requestedAt = context.df.currentUtcDateTime.toISOString();
  const { steps } = forget;
  const { sessionIds } = yield* callStep(context, steps.begin, input);
  const durable = yield* callStep(context, steps.durable, { ...input, sessionIds });
  const removed: Record<string, number> = { durableInstances: durable.durableInstances, blobs: 0 };
  const blobNames = new Set<string>();
  for (let round = 1; round <= FORGET_MAX_ROUNDS; round++) {
    const blobs = yield* callStep(context, steps.blobs, input);
    for (const name of blobs.blobNames) blobNames.add(name);
    removed.blobs = (removed.blobs ?? 0) + blobs.deleted;
    const stores = yield* callStep(context, steps.stores, input);
    for (const [store, n] of Object.entries(stores.removed)) removed[store] = (removed[store] ?? 0) + n;
    const scan = yield* callStep(context, steps.verify, { ...input, sessionIds, blobNames: [...blobNames] });
    if (scan.total === 0) {
      const total = Object.values(removed).reduce((a, b) => a + b, 0);
      // Not cleared: a late writer enlisted with the tombstone after the scan, so the purge and the scan run again.
      const { cleared } = yield* callStep(context, steps.finish, { ...input, removed: total, tombstone: scan.tombstone });
      if (cleared) return { ...input, sessions: sessionIds.length, removed, residual: scan.residual, verified: true, rounds: round, requestedAt, finishedAt: context.df.currentUtcDateTime.toISOString() };
    }
    if (round === FORGET_MAX_ROUNDS) {
      const left = Object.entries(scan.residual).filter(([, n]) => n > 0).map(([store, n]) => `${store}=${n}`);
      throw new Error(`forget: ${left.length > 0 ? `items left after ${round} rounds (${left.join(', ')})` : `a late write enlisted after each of ${round} scans`}; DELETE again to re-run`);
    }
  }
  throw new Error('forget: unreachable');
}

export default defineFunction({ name: forget.name, trigger: orchestration(), handler: forgetOrchestrator });
