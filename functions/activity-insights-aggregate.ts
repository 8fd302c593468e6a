import { z } from 'zod';
import { AggregationResult, aggregateNoInsightSessions } from '../shared/application/session-end.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Session end, step 4: reflect over the user's no-insight sessions together once enough have piled up. */
export const handler = activityHandler(z.object({ userId: Id }), AggregationResult, async ({ userId }) => aggregateNoInsightSessions(await getRuntime(), userId));

export default defineFunction({ name: 'activity-insights-aggregate', trigger: activity(), handler });
