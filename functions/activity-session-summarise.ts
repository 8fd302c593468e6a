import { SummaryResult, summariseSession } from '../shared/application/session-end.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Session end, step 2: the session summary with its vector and key topics (reused if already stored). */
export const handler = activityHandler(SessionKey, SummaryResult, async (key) => summariseSession(await getRuntime(), key));

export default defineFunction({ name: 'activity-session-summarise', trigger: activity(), handler });
