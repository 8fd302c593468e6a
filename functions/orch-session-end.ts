import type { OrchestrationContext, Task } from 'durable-functions';
import type { z } from 'zod';
import type { AggregationResult, CompletionResult, FinalPruneResult, ReflectionResult, SummaryResult } from '../shared/application/session-end.js';
import { SessionEndInput } from '../shared/contracts/insights.js';
import { modelRetry } from '../shared/platform/durable.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';

/**
 * Session end: final prune → session summary → session reflection → no-insight aggregation (only after a no-insight
 * reflection) → status `completed`. Deterministic: no I/O, time from `currentUtcDateTime`. Instance id
 * `session-end:<user>:<session>`. Model-calling steps retry with backoff.
 */
export function* sessionEndOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const key = SessionEndInput.parse(context.df.getInput());
  const retry = modelRetry();
  const prune = (yield context.df.callActivityWithRetry('activity-session-prune', retry, key)) as z.infer<typeof FinalPruneResult>;
  const summary = (yield context.df.callActivityWithRetry('activity-session-summarise', retry, key)) as z.infer<typeof SummaryResult>;
  const reflection = (yield context.df.callActivityWithRetry('activity-session-reflect', retry, key)) as z.infer<typeof ReflectionResult>;
  const aggregation =
    reflection.reflectionFlag === 'no-insight'
      ? ((yield context.df.callActivityWithRetry('activity-insights-aggregate', retry, { userId: key.userId })) as z.infer<typeof AggregationResult>)
      : null;
  const completion = (yield context.df.callActivity('activity-session-complete', key)) as z.infer<typeof CompletionResult>;
  return {
    ...key,
    finishedAt: context.df.currentUtcDateTime.toISOString(),
    chunkedThroughSeq: prune.chunkedThroughSeq,
    keyTopics: summary.keyTopics,
    reflectionFlag: reflection.reflectionFlag,
    insightIds: reflection.insightIds,
    aggregatedSessions: aggregation?.aggregated ? aggregation.sessionIds : [],
    ...completion,
  };
}

export default defineFunction({ name: 'orch-session-end', trigger: orchestration(), handler: sessionEndOrchestrator });
