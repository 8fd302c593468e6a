import { longTermReflection } from '../shared/application/workflows/long-term-reflection.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Long-term reflection: near-duplicate insights merged (declared in shared/application/workflows/long-term-reflection.ts). */
export default activityFunction(longTermReflection.steps.merge);
