import { z } from 'zod';
import { Id } from '../../contracts/ids.js';
import { LongTermReflectionInput, ORCHESTRATIONS } from '../../contracts/operations.js';
import { MergeResult, mergeNearDuplicateInsights, ProfileResult, synthesiseLongTermProfile, type ReflectionDeps } from '../long-term-reflection.js';
import { applyRetention, RetentionResult, type RetentionDeps } from '../retention.js';
import { MODEL_RETRY, step, workflow } from './workflow.js';

/** A count a history written before the step (or field) shipped lacks: read as 0. */
const countSince = z.number().int().nonnegative().default(0);

/** What the long-term reflection operation returns (and the nightly consolidation reads per user). */
export const LongTermReflectionOutput = LongTermReflectionInput.extend({
  merged: MergeResult.shape.merged,
  ...ProfileResult.shape,
  /** Absent from a reflection that finished before retention shipped. */
  expired: countSince,
  /** Absent from a reflection that finished before the artifact sweep shipped. */
  artifactsExpired: countSince,
  finishedAt: z.iso.datetime(),
});
export type LongTermReflectionOutput = z.infer<typeof LongTermReflectionOutput>;

/**
 * Long-term reflection for one user (functions/orch-long-term-reflection.ts): merge near-duplicate insights, synthesise
 * the profile from the rest, then apply retention as of the orchestration's time.
 */
export const longTermReflection = workflow({
  name: ORCHESTRATIONS.longTermReflection,
  input: LongTermReflectionInput,
  output: LongTermReflectionOutput,
  steps: {
    /** Near-duplicate insights (embedding similarity) merged into the newest. */
    merge: step({
      name: 'activity-insights-merge',
      input: z.object({ userId: Id }),
      output: MergeResult,
      retry: MODEL_RETRY,
      run: (deps: ReflectionDeps, { userId }) => mergeNearDuplicateInsights(deps, userId),
    }),
    /** Pending insights + current profile → the new profile; insights processed or superseded. */
    synthesise: step({
      name: 'activity-profile-synthesise',
      input: z.object({ userId: Id }),
      output: ProfileResult,
      retry: MODEL_RETRY,
      run: (deps: ReflectionDeps, { userId }) => synthesiseLongTermProfile(deps, userId),
    }),
    /**
     * Retention for one user: superseded and merged insights past their audit period deleted; artifacts past their TTL
     * deleted with their blobs. `now` comes from the orchestration (currentUtcDateTime), so a replayed or retried step
     * decides the same.
     */
    retention: step({
      name: 'activity-retention-apply',
      input: z.object({ userId: Id, now: z.iso.datetime() }),
      output: RetentionResult.extend({ artifactsExpired: countSince }),
      retry: MODEL_RETRY,
      run: (deps: RetentionDeps, { userId, now }) => applyRetention(deps, userId, new Date(now)),
    }),
  },
});
