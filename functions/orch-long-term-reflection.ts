import type { OrchestrationContext } from 'durable-functions';
import { longTermReflection, type LongTermReflectionOutput } from '../shared/application/workflows/long-term-reflection.js';
import { defineFunction, orchestration } from '../shared/platform/functions.js';
import { callStep, type Orchestration } from '../shared/platform/workflows.js';

/**
 * Long-term reflection for one user (steps in shared/application/workflows/long-term-reflection.ts): merge
 * near-duplicate insights, synthesise the profile from the rest, then apply retention as of the orchestration's time
 * (replay-safe `now`; what this run superseded starts its audit period now): expired insights and expired artifacts
 * (with their blobs) are deleted and counted.
 */
export function* longTermReflectionOrchestrator(context: OrchestrationContext): Orchestration<LongTermReflectionOutput> {
  const { userId } = longTermReflection.input.parse(context.df.getInput());
  const { steps } = longTermReflection;
  const merge = yield* callStep(context, steps.merge, { userId });
  const profile = yield* callStep(context, steps.synthesise, { userId });
  const now = context.df.currentUtcDateTime.toISOString();
  const retention = yield* callStep(context, steps.retention, { userId, now });
  return { userId, merged: merge.merged, ...profile, ...retention, finishedAt: context.df.currentUtcDateTime.toISOString() };
}

export default defineFunction({ name: longTermReflection.name, trigger: orchestration(), handler: longTermReflectionOrchestrator });
