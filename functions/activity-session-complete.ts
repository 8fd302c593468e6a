import { CompletionResult, completeSession } from '../shared/application/session-end.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Session end, last step: the session is `completed`. */
export const handler = activityHandler(SessionKey, CompletionResult, async (key) => completeSession(await getRuntime(), key));

export default defineFunction({ name: 'activity-session-complete', trigger: activity(), handler });
