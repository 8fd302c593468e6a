import { forget } from '../shared/application/workflows/forget.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Forget, step "stores" (declared in shared/application/workflows/forget.ts). */
export default activityFunction(forget.steps.stores);
