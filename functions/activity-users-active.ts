import { nightlyConsolidation } from '../shared/application/workflows/nightly-consolidation.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Nightly consolidation: the users active since the last run (declared in shared/application/workflows/nightly-consolidation.ts). */
export default activityFunction(nightlyConsolidation.steps.activeUsers);
