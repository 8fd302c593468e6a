import type { PeriodReader } from '../../application/ports.js';
import { periodsReferredTo } from '../../domain/time-expressions.js';

/**
 * The periods turns refer to, parsed on the calling thread: what the model thread's `periods` op runs, and what a
 * test or a tool without model threads may use. The runtime uses the model threads (ModelThreadPool), because the
 * parse costs milliseconds of CPU a turn that the request-serving thread should not spend.
 */
export const inProcessPeriods: PeriodReader = {
  referredPeriods: async (turns) => periodsReferredTo(turns.map(({ text, at }) => ({ text, at: new Date(at) }))),
};
