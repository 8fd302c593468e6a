import { ReflectionResult, reflectSession } from '../shared/application/session-end.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Session end, step 3: insights (deterministic ids) or `no-insight`; the session's reflection status. */
export const handler = activityHandler(SessionKey, ReflectionResult, async (key) => reflectSession(await getRuntime(), key));

export default defineFunction({ name: 'activity-session-reflect', trigger: activity(), handler });
