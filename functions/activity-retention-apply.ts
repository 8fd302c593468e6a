import { longTermReflection } from '../shared/application/workflows/long-term-reflection.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Long-term reflection, last step: retention (declared in shared/application/workflows/long-term-reflection.ts). */
export default activityFunction(
  longTermReflection.steps.retention,
  ({ userId }, result) => `Retention for ${userId}: ${result.expired} expired insights and ${result.artifactsExpired} expired artifacts deleted`,
);
