import type { OrchestrationContext, Task } from 'durable-functions';
import type { z } from 'zod';
import type { MergeResult, ProfileResult } from '../shared/application/long-term-reflection.js';
import type { RetentionResult } from '../shared/application/retention.js';
import { LongTermReflectionInput } from '../shared/contracts/insights.js';
import { modelRetry } from '../shared/platform/durable.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';

/**
 * Long-term reflection for one user: merge near-duplicate insights, synthesise the profile from the rest, then apply
 * retention as of the orchestration's time (replay-safe `now`; what this run superseded starts its audit period now):
 * expired insights and expired artifacts (with their blobs) are deleted and counted.
 */
export function* longTermReflectionOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const { userId } = LongTermReflectionInput.parse(context.df.getInput());
  const retry = modelRetry();
  const merge = (yield context.df.callActivityWithRetry('activity-insights-merge', retry, { userId })) as z.infer<typeof MergeResult>;
  const profile = (yield context.df.callActivityWithRetry('activity-profile-synthesise', retry, { userId })) as z.infer<typeof ProfileResult>;
  const now = context.df.currentUtcDateTime.toISOString();
  const retention = (yield context.df.callActivityWithRetry('activity-retention-apply', retry, { userId, now })) as Partial<RetentionResult> & Pick<RetentionResult, 'expired'>;
  // `artifactsExpired` is absent from a retention step that completed before the artifact sweep was deployed.
  const artifactsExpired = retention.artifactsExpired ?? 0;
  return { userId, merged: merge.merged, ...profile, expired: retention.expired, artifactsExpired, finishedAt: context.df.currentUtcDateTime.toISOString() };
}

export default defineFunction({ name: 'orch-long-term-reflection', trigger: orchestration(), handler: longTermReflectionOrchestrator });
