import { z } from 'zod';
import { MergeResult, mergeNearDuplicateInsights } from '../shared/application/long-term-reflection.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Long-term reflection: near-duplicate insights (embedding similarity) merged into the newest. */
export const handler = activityHandler(z.object({ userId: Id }), MergeResult, async ({ userId }) => mergeNearDuplicateInsights(await getRuntime(), userId));

export default defineFunction({ name: 'activity-insights-merge', trigger: activity(), handler });
