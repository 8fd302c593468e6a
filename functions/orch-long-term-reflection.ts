import type { OrchestrationContext, Task } from 'durable-functions';
import type { z } from 'zod';
import type { MergeResult, ProfileResult } from '../shared/application/long-term-reflection.js';
import { LongTermReflectionInput } from '../shared/contracts/insights.js';
import { modelRetry } from '../shared/platform/durable.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';

/** Long-term reflection for one user: merge near-duplicate insights, then synthesise the profile from the rest. */
export function* longTermReflectionOrchestrator(context: OrchestrationContext): Generator<Task, unknown, unknown> {
  const { userId } = LongTermReflectionInput.parse(context.df.getInput());
  const retry = modelRetry();
  const merge = (yield context.df.callActivityWithRetry('activity-insights-merge', retry, { userId })) as z.infer<typeof MergeResult>;
  const profile = (yield context.df.callActivityWithRetry('activity-profile-synthesise', retry, { userId })) as z.infer<typeof ProfileResult>;
  return { userId, merged: merge.merged, ...profile, finishedAt: context.df.currentUtcDateTime.toISOString() };
}

export default defineFunction({ name: 'orch-long-term-reflection', trigger: orchestration(), handler: longTermReflectionOrchestrator });
