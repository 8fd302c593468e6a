import type { OrchestrationContext } from 'durable-functions';
import { FORGET_MAX_ROUNDS, forget, type ForgetOutput } from '../shared/application/workflows/forget.js';
import type { OperationProgress } from '../shared/contracts/operations.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';
import { callStep, type Orchestration } from '../shared/platform/workflows.js';

/**
 * Forget a user or a session (steps in shared/application/workflows/forget.ts): tombstone → durable histories → blobs
 * → store items → verification scan, the purge repeated until the scan finds nothing → (with a grace) a durable timer,
 * then rounds until one that follows the wait purges nothing → tombstone cleared, unless a late writer enlisted with it
 * after the scan (then another round). Past the rounds' limit the operation fails with the residual counts, and a new
 * DELETE re-runs it. Deterministic: the grace comes from the begin step's result, the fire time from the orchestration
 * clock. Its custom status (`GET /v1/operations/{id}`'s `progress`) says the round and, during the wait, when it
 * fires. Instance id from `forgetInstanceId`.
 */
export function* forgetOrchestrator(context: OrchestrationContext): Orchestration<ForgetOutput> {
  const input = forget.input.parse(context.df.getInput());
  const requestedAt = context.df.currentUtcDateTime.toISOString();
  const { steps } = forget;
  const { sessionIds, graceSeconds } = yield* callStep(context, steps.begin, input);
  const durable = yield* callStep(context, steps.durable, { ...input, sessionIds });
  const removed: Record<string, number> = { durableInstances: durable.durableInstances, blobs: 0 };
  const blobNames = new Set<string>();
  // With a grace, a race may cost a round and the round after its wait.
  const maxRounds = graceSeconds > 0 ? 2 * FORGET_MAX_ROUNDS : FORGET_MAX_ROUNDS;
  let waited = false;
  for (let round = 1; round <= maxRounds; round++) {
    context.df.setCustomStatus({ step: 'purging', round } satisfies OperationProgress);
    const blobs = yield* callStep(context, steps.blobs, input);
    for (const name of blobs.blobNames) blobNames.add(name);
    removed.blobs = (removed.blobs ?? 0) + blobs.deleted;
    const stores = yield* callStep(context, steps.stores, input);
    for (const [store, n] of Object.entries(stores.removed)) removed[store] = (removed[store] ?? 0) + n;
    const scan = yield* callStep(context, steps.verify, { ...input, sessionIds, blobNames: [...blobNames] });
    // Settled: every write decided before the previous purge had the grace (at least the function timeout) to land,
    // and this round removed nothing, so no write decided since read anything of the scope (README, Forget).
    const settled = graceSeconds === 0 || (waited && blobs.deleted + sum(stores.removed) === 0);
    waited = false;
    if (scan.total === 0 && !settled) {
      const until = new Date(context.df.currentUtcDateTime.getTime() + graceSeconds * 1000);
      context.df.setCustomStatus({ step: 'grace', round, until: until.toISOString() } satisfies OperationProgress);
      yield context.df.createTimer(until);
      waited = true;
    } else if (scan.total === 0) {
      // Not cleared: a late writer enlisted with the tombstone after the scan, so the purge and the scan run again.
      const { cleared } = yield* callStep(context, steps.finish, { ...input, removed: sum(removed), tombstone: scan.tombstone });
      if (cleared) return { ...input, sessions: sessionIds.length, removed, residual: scan.residual, verified: true, rounds: round, graceSeconds, requestedAt, finishedAt: context.df.currentUtcDateTime.toISOString() };
    }
    if (round === maxRounds) {
      const left = Object.entries(scan.residual).filter(([, n]) => n > 0).map(([store, n]) => `${store}=${n}`);
      throw new Error(`forget: ${left.length > 0 ? `items left after ${round} rounds (${left.join(', ')})` : `a late write after each of ${round} scans (enlisted, or purged after the wait)`}; DELETE again to re-run`);
    }
  }
  throw new Error('forget: unreachable');
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

export default defineFunction({ name: forget.name, trigger: orchestration(), handler: forgetOrchestrator });
