import type { OrchestrationContext, Task } from 'durable-functions';
import type { z } from 'zod';
import type { ActiveUsersResult } from '../shared/application/long-term-reflection.js';
import { NightlyInput, ORCHESTRATIONS, reflectionInstanceId } from '../shared/contracts/insights.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';

/**
 * Nightly consolidation: the users active since the last run, fanned out to the long-term reflection orchestration
 * (merge, profile, retention) in batches of `parallelism` (bounded), each under `reflection:<user>:<runId>` so a replayed
 * or restarted night runs each user once.
 */
export function* nightlyConsolidationOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const input = NightlyInput.parse(context.df.getInput());
  const { userIds } = (yield context.df.callActivity('activity-users-active', { since: input.since })) as z.infer<typeof ActiveUsersResult>;
  let profilesUpdated = 0;
  let merged = 0;
  let expired = 0;
  let artifactsExpired = 0;
  for (let i = 0; i < userIds.length; i += input.parallelism) {
    const batch = userIds.slice(i, i + input.parallelism);
    const results = (yield context.df.Task.all(
      batch.map((userId) => context.df.callSubOrchestrator(ORCHESTRATIONS.longTermReflection, { userId }, reflectionInstanceId(userId, input.runId))),
    )) as { updated: boolean; merged: number; expired?: number; artifactsExpired?: number }[];
    profilesUpdated += results.filter((r) => r.updated).length;
    merged += results.reduce((n, r) => n + r.merged, 0);
    // `expired` (`artifactsExpired`) is absent from a reflection that finished before retention (the artifact sweep) was deployed.
    expired += results.reduce((n, r) => n + (r.expired ?? 0), 0);
    artifactsExpired += results.reduce((n, r) => n + (r.artifactsExpired ?? 0), 0);
  }
  return { runId: input.runId, users: userIds.length, profilesUpdated, merged, expired, artifactsExpired, finishedAt: context.df.currentUtcDateTime.toISOString() };
}

export default defineFunction({ name: 'orch-nightly-consolidation', trigger: orchestration(), handler: nightlyConsolidationOrchestrator });
