import type { OrchestrationContext } from 'durable-functions';
import { longTermReflection } from '../shared/application/workflows/long-term-reflection.js';
import { nightlyConsolidation, type NightlyOutput } from '../shared/application/workflows/nightly-consolidation.js';
import { reflectionInstanceId } from '../shared/contracts/operations.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';
import { callStep, callWorkflows, type Orchestration } from '../shared/platform/workflows.js';

/**
 * Nightly consolidation: the users active since the last run, fanned out to the long-term reflection workflow (merge,
 * profile, retention) in batches of `parallelism` (bounded), each under `reflectionInstanceId(user, runId)` so a
 * replayed or restarted night runs each user once.
 */
export function* nightlyConsolidationOrchestrator(context: OrchestrationContext): Orchestration<NightlyOutput> {
  const input = nightlyConsolidation.input.parse(context.df.getInput());
  const { userIds } = yield* callStep(context, nightlyConsolidation.steps.activeUsers, { since: input.since });
  let profilesUpdated = 0;
  let merged = 0;
  let expired = 0;
  let artifactsExpired = 0;
  for (let i = 0; i < userIds.length; i += input.parallelism) {
    const batch = userIds.slice(i, i + input.parallelism);
    const results = yield* callWorkflows(
      context,
      longTermReflection,
      batch.map((userId) => ({ input: { userId }, instanceId: reflectionInstanceId(userId, input.runId) })),
    );
    profilesUpdated += results.filter((r) => r.updated).length;
    merged += results.reduce((n, r) => n + r.merged, 0);
    expired += results.reduce((n, r) => n + r.expired, 0);
    artifactsExpired += results.reduce((n, r) => n + r.artifactsExpired, 0);
  }
  return { runId: input.runId, users: userIds.length, profilesUpdated, merged, expired, artifactsExpired, finishedAt: context.df.currentUtcDateTime.toISOString() };
}

export default defineFunction({ name: nightlyConsolidation.name, trigger: orchestration(), handler: nightlyConsolidationOrchestrator });
