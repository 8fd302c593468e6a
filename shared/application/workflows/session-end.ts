import { z } from 'zod';
import { Id, SessionKey } from '../../contracts/ids.js';
import { ORCHESTRATIONS, SessionEndInput } from '../../contracts/operations.js';
import {
  AggregationResult,
  aggregateNoInsightSessions,
  CompletionResult,
  completeSession,
  FinalPruneResult,
  finalPrune,
  ReflectionResult,
  reflectSession,
  SummaryResult,
  summariseSession,
  type SessionEndDeps,
} from '../session-end.js';
import { MODEL_RETRY, step, workflow } from './workflow.js';

/** What the session-end operation returns. */
export const SessionEndOutput = SessionEndInput.extend({
  finishedAt: z.iso.datetime(),
  chunkedThroughSeq: FinalPruneResult.shape.chunkedThroughSeq,
  keyTopics: SummaryResult.shape.keyTopics,
  reflectionFlag: ReflectionResult.shape.reflectionFlag,
  insightIds: ReflectionResult.shape.insightIds,
  /** The no-insight sessions reflected on together after this one (empty when there was no aggregation). */
  aggregatedSessions: AggregationResult.shape.sessionIds,
  ...CompletionResult.shape,
});
export type SessionEndOutput = z.infer<typeof SessionEndOutput>;

/**
 * Session end (functions/orch-session-end.ts): final prune → session summary → session reflection → no-insight
 * aggregation (only after a no-insight reflection) → completed. The steps that call models or stores retry.
 */
export const sessionEnd = workflow({
  name: ORCHESTRATIONS.sessionEnd,
  input: SessionEndInput,
  output: SessionEndOutput,
  steps: {
    /** Step 1: project what is left and chunk the trailing partial window. Idempotent. */
    prune: step({ name: 'activity-session-prune', input: SessionKey, output: FinalPruneResult, retry: MODEL_RETRY, run: (deps: SessionEndDeps, key) => finalPrune(deps, key) }),
    /** Step 2: the session summary and key topics, recorded as `SessionSummarised` (reused if recorded). */
    summarise: step({ name: 'activity-session-summarise', input: SessionKey, output: SummaryResult, retry: MODEL_RETRY, run: (deps: SessionEndDeps, key) => summariseSession(deps, key) }),
    /** Step 3: insights (deterministic ids) or `no-insight`, recorded as `SessionReflected`. */
    reflect: step({ name: 'activity-session-reflect', input: SessionKey, output: ReflectionResult, retry: MODEL_RETRY, run: (deps: SessionEndDeps, key) => reflectSession(deps, key) }),
    /** Step 4: reflect over the user's no-insight sessions together once enough have piled up. */
    aggregate: step({
      name: 'activity-insights-aggregate',
      input: z.object({ userId: Id }),
      output: AggregationResult,
      retry: MODEL_RETRY,
      run: (deps: SessionEndDeps, { userId }) => aggregateNoInsightSessions(deps, userId),
    }),
    /** Last step: `SessionCompleted`. Not retried: it decides from the stream and appends one event. */
    complete: step({ name: 'activity-session-complete', input: SessionKey, output: CompletionResult, run: (deps: SessionEndDeps, key) => completeSession(deps, key) }),
  },
});
