import { forget } from '../shared/application/workflows/forget.js';
import { activityFunctionWithClient } from '../shared/platform/workflows.js';

/** Forget, step "verify" (declared in shared/application/workflows/forget.ts); it reads durable instances, so it gets the durable client. */
export default activityFunctionWithClient(forget.steps.verify);
