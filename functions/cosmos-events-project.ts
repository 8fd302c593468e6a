import type { InvocationContext } from '@azure/functions';
import { projectChanges } from '../shared/application/project-session.js';
import { MemoryEvent } from '../shared/contracts/events.js';
import { getRuntime } from '../shared/platform/composition.js';
import { projectionParallelism } from '../shared/platform/config.js';
import { cosmosChangeFeed, defineFunction, isLastRetry } from '../shared/platform/functions.js';

/**
 * The change feed of `events` drives the projection: each touched session is brought up to date from its own
 * checkpoint, so a batch that repeats or arrives late changes nothing twice. Failures throw: the trigger's retry
 * policy (`CHANGE_FEED_RETRY`) re-runs the same batch with backoff before the lease advances, and its last retry
 * sets aside the events whose rows the store refuses, so one poison event never holds up the feed.
 */
export async function handler(documents: unknown[], ctx: InvocationContext): Promise<void> {
  const events = documents.map((doc) => MemoryEvent.parse(doc));
  const runtime = await getRuntime();
  const results = await projectChanges(runtime, events, { isolate: isLastRetry(ctx), parallelism: projectionParallelism(runtime.settings) });
  const written = results.reduce((n, r) => n + r.interactionsWritten, 0);
  ctx.log(`Projected ${results.length} sessions from ${events.length} events; ${written} interactions written`);
}

export default defineFunction({ name: 'cosmos-events-project', trigger: cosmosChangeFeed('events'), handler });
