import { z } from 'zod';
import { NightlyInput, ORCHESTRATIONS } from '../../contracts/operations.js';
import type { Deps } from '../ports.js';
import { ActiveUsersResult, usersActiveSince } from '../long-term-reflection.js';
import { step, workflow } from './workflow.js';

/** What the nightly consolidation returns: totals over the users' long-term reflections. */
export const NightlyOutput = z.object({
  runId: NightlyInput.shape.runId,
  users: z.number().int().nonnegative(),
  profilesUpdated: z.number().int().nonnegative(),
  merged: z.number().int().nonnegative(),
  expired: z.number().int().nonnegative(),
  artifactsExpired: z.number().int().nonnegative(),
  finishedAt: z.iso.datetime(),
});
export type NightlyOutput = z.infer<typeof NightlyOutput>;

/**
 * Nightly consolidation (functions/orch-nightly-consolidation.ts): the users active since the last run, fanned out to the
 * long-term reflection workflow in bounded batches.
 */
export const nightlyConsolidation = workflow({
  name: ORCHESTRATIONS.nightlyConsolidation,
  input: NightlyInput,
  output: NightlyOutput,
  steps: {
    /** The users whose sessions changed since the last run. Not retried: one store query. */
    activeUsers: step({
      name: 'activity-users-active',
      input: z.object({ since: z.iso.datetime() }),
      output: ActiveUsersResult,
      run: (deps: Pick<Deps, 'directory'>, { since }) => usersActiveSince(deps, since),
    }),
  },
});
