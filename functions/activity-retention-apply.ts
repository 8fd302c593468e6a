import { z } from 'zod';
import { applyRetention, RetentionResult } from '../shared/application/retention.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction, type ActivityHandler } from '../shared/platform/functions.js';

/** `now` comes from the orchestration (currentUtcDateTime), so a replayed or retried step decides the same. */
const RetentionInput = z.object({ userId: Id, now: z.iso.datetime() });

/**
 * Long-term reflection: retention for one user (superseded and merged insights past their audit period deleted;
 * artifacts past their TTL deleted with their blobs).
 */
export const handler: ActivityHandler = (raw, ctx) =>
  activityHandler(RetentionInput, RetentionResult, async ({ userId, now }) => {
    const result = await applyRetention(await getRuntime(), userId, new Date(now));
    ctx.log(`Retention for ${userId}: ${result.expired} expired insights and ${result.artifactsExpired} expired artifacts deleted`);
    return result;
  })(raw, ctx);

export default defineFunction({ name: 'activity-retention-apply', trigger: activity(), handler });
