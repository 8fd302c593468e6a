import { longTermReflection } from '../shared/application/workflows/long-term-reflection.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Long-term reflection: the profile synthesised (declared in shared/application/workflows/long-term-reflection.ts). */
export default activityFunction(longTermReflection.steps.synthesise);
