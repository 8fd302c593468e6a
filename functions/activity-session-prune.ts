import { FinalPruneResult, finalPrune } from '../shared/application/session-end.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Session end, step 1: project what is left and chunk the trailing partial window. Idempotent. */
export const handler = activityHandler(SessionKey, FinalPruneResult, async (key) => finalPrune(await getRuntime(), key));

export default defineFunction({ name: 'activity-session-prune', trigger: activity(), handler });
