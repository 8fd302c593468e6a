import type { InvocationContext, Timer } from '@azure/functions';
import { nightlyInstanceId, ORCHESTRATIONS } from '../shared/contracts/operations.js';
import { getRuntime } from '../shared/platform/composition.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, timer } from '../shared/platform/functions.js';

const DAY_MS = 86_400_000;

/** Nightly consolidation (NIGHTLY_SCHEDULE): users active since the last run → long-term reflection, bounded fan-out. */
export async function handler(timerInfo: Timer, ctx: InvocationContext): Promise<void> {
  const runtime = await getRuntime();
  const now = runtime.clock.now();
  const last = timerInfo.scheduleStatus?.last ? new Date(timerInfo.scheduleStatus.last) : undefined;
  const since = last && !Number.isNaN(last.getTime()) && last < now ? last : new Date(now.getTime() - DAY_MS);
  const runId = now.toISOString().slice(0, 13).replace(/[^0-9T]/g, '');
  const { instanceId, started } = await orchestrationClient(ctx).start(ORCHESTRATIONS.nightlyConsolidation, nightlyInstanceId(runId), {
    since: since.toISOString(),
    runId,
    parallelism: runtime.settings.NIGHTLY_PARALLELISM,
  });
  ctx.log(`Nightly consolidation ${instanceId} ${started ? 'started' : 'already running'}`);
}

export default defineFunction({ name: 'timer-nightly-consolidation', trigger: timer('NIGHTLY_SCHEDULE'), handler });
