import { forget } from './forget.js';
import { longTermReflection } from './long-term-reflection.js';
import { nightlyConsolidation } from './nightly-consolidation.js';
import { sessionEnd } from './session-end.js';

/** Every workflow of the app; each functions/orch-*.ts and functions/activity-*.ts is built from one of them. */
export const WORKFLOWS = [sessionEnd, longTermReflection, nightlyConsolidation, forget] as const;
