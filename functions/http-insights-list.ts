import { z } from 'zod';
import { listInsights } from '../shared/application/long-term-reflection.js';
import { Id } from '../shared/contracts/ids.js';
import { InsightList, InsightsQuery } from '../shared/contracts/insights.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), query: InsightsQuery, response: InsightList, summary: 'The user\'s insights, oldest first' }, async ({ params, query }) =>
  listInsights(await getRuntime(), params.userId, query),
);

export default defineFunction({ name: 'http-insights-list', trigger: http('GET', 'v1/users/{userId}/insights'), handler });
