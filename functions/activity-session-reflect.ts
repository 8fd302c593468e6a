import { sessionEnd } from '../shared/application/workflows/session-end.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Session end, step 3: the session reflection (declared in shared/application/workflows/session-end.ts). */
export default activityFunction(sessionEnd.steps.reflect);
