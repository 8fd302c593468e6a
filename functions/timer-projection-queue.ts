import type { InvocationContext, Timer } from '@azure/functions';
import { serveProjectionQueue } from '../shared/application/projection-scheduler.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, timer } from '../shared/platform/functions.js';

/** Serves the projection queue (slices, round-robin) for up to PROJECTION_BUDGET_MS: what the change feed left queued. */
export async function handler(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const runtime = await getRuntime();
  const { slices, caughtUp, failed } = await serveProjectionQueue(runtime, runtime.projection);
  if (slices > 0 || failed.length > 0) ctx.log(`Projection queue: ${slices} slices projected, ${caughtUp} sessions caught up, ${failed.length} failed`);
  for (const f of failed) ctx.warn(`Projection of ${f.key.userId}/${f.key.sessionId} failed (${f.error}); queued again with backoff`);
}

export default defineFunction({ name: 'timer-projection-queue', trigger: timer('PROJECTION_QUEUE_SCHEDULE'), handler });
