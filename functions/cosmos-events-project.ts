import type { InvocationContext } from '@azure/functions';
import { enqueueProjection, serveProjectionQueue, sessionsToServeAtOnce } from '../shared/application/projection-scheduler.js';
import { MemoryEvent } from '../shared/contracts/events.js';
import { getRuntime } from '../shared/platform/composition.js';
import { cosmosChangeFeed, defineFunction } from '../shared/platform/functions.js';

/**
 * The change feed of `events` drives the projection through the projection queue: the touched sessions are queued
 * (durably, before the lease advances), and those that bring less than a slice and were not queued yet or are queued
 * only for a window left to decide get it projected at once (sessionsToServeAtOnce: beyond one round of slices, only
 * those whose stream goes on little past the batch); the rest is the queue's (timer-projection-queue), so one
 * session's backlog never holds up the feed or another user's turn. A failing slice stays queued with backoff. What
 * throws (a document that is not an event, the queue unreachable) is retried by the trigger's retry policy
 * (`CHANGE_FEED_RETRY`) before the lease advances.
 */
export async function handler(documents: unknown[], ctx: InvocationContext): Promise<void> {
  const events = documents.map((doc) => MemoryEvent.parse(doc));
  const runtime = await getRuntime();
  const fresh = await enqueueProjection(runtime, events);
  const atOnce = await sessionsToServeAtOnce(runtime, fresh, events, runtime.projection);
  const { slices, caughtUp, failed } = await serveProjectionQueue(runtime, runtime.projection, { sessions: atOnce });
  ctx.log(`Queued sessions of ${events.length} events (${fresh.length} newly); ${slices} slices projected, ${caughtUp} sessions caught up, ${failed.length} failed`);
  for (const f of failed) ctx.warn(`Projection of ${f.key.userId}/${f.key.sessionId} failed (${f.error}); queued again with backoff`);
}

export default defineFunction({ name: 'cosmos-events-project', trigger: cosmosChangeFeed('events'), handler });
