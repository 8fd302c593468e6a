import type { OrchestrationContext } from 'durable-functions';
import { sessionEnd, type SessionEndOutput } from '../shared/application/workflows/session-end.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';
import { callStep, type Orchestration } from '../shared/platform/workflows.js';

/**
 * Session end (steps in shared/application/workflows/session-end.ts): final prune → session summary → session
 * reflection → no-insight aggregation (only after a no-insight reflection) → status `completed`. Deterministic: no I/O,
 * time from `currentUtcDateTime`. Instance id from `sessionEndInstanceId`.
 */
export function* sessionEndOrchestrator(context: OrchestrationContext): Orchestration<SessionEndOutput> {
  const key = sessionEnd.input.parse(context.df.getInput());
  const { steps } = sessionEnd;
  const prune = yield* callStep(context, steps.prune, key);
  const summary = yield* callStep(context, steps.summarise, key);
  const reflection = yield* callStep(context, steps.reflect, key);
  const aggregation = reflection.reflectionFlag === 'no-insight' ? yield* callStep(context, steps.aggregate, { userId: key.userId }) : null;
  const completion = yield* callStep(context, steps.complete, key);
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

export default defineFunction({ name: sessionEnd.name, trigger: orchestration(), handler: sessionEndOrchestrator });
