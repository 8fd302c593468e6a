import { z } from 'zod';
import { ForgetInput, ORCHESTRATIONS } from '../../contracts/operations.js';
import {
  BeginResult,
  beginForget,
  BlobsResult,
  Counts,
  DurableResult,
  FinishInput,
  FinishResult,
  finishForget,
  purgeBlobs,
  purgeDurableHistories,
  purgeStores,
  StoresResult,
  VerifyInput,
  VerifyResult,
  verifyForget,
  type ForgetDeps,
  type ForgetDurableDeps,
  type PurgeDeps,
} from '../forget.js';
import type { ForgetConfig } from '../forget-ports.js';
import { MODEL_RETRY, step, workflow } from './workflow.js';

/**
 * Purge rounds before the operation fails with what is left (a write that raced the purge is caught by the next
 * round); twice as many with a grace, where a race may also cost the round after a wait.
 */
export const FORGET_MAX_ROUNDS = 3;

/**
 * The purge report, the forget operation's output: items removed per store (summed over the rounds), the final
 * scan's count per store, all zero (an operation whose scan finds anything fails instead), the rounds run and the
 * grace waited before the last (`graceSeconds`, 0: none). Ids and counts only.
 */
export const ForgetOutput = ForgetInput.extend({
  sessions: z.number().int().nonnegative(),
  removed: Counts,
  residual: Counts,
  verified: z.literal(true),
  rounds: z.number().int().min(1),
  graceSeconds: z.number().int().nonnegative(),
  requestedAt: z.iso.datetime(),
  finishedAt: z.iso.datetime(),
});
export type ForgetOutput = z.infer<typeof ForgetOutput>;

/**
 * Forget a user or one session (functions/orch-forget.ts): tombstone → durable histories → blobs → store items →
 * verification scan (repeated with the purge until it finds nothing) → with a grace, a wait and the rounds after it
 * until one purges nothing → tombstone cleared.
 * Every step is idempotent, so re-running a failed or crashed operation finishes it.
 */
export const forget = workflow({
  name: ORCHESTRATIONS.forget,
  input: ForgetInput,
  output: ForgetOutput,
  steps: {
    /** Step 1: the tombstone (writes of the scope are refused from here on), the scope's session ids and the grace. */
    begin: step({ name: 'activity-forget-begin', input: ForgetInput, output: BeginResult, retry: MODEL_RETRY, run: (deps: ForgetDeps & { forget: ForgetConfig }, input) => beginForget(deps, input) }),
    /** Step 2: session-end instance histories (they carry the session's summary and key topics). */
    durable: step({
      name: 'activity-forget-durable',
      input: ForgetInput.extend({ sessionIds: BeginResult.shape.sessionIds }),
      output: DurableResult,
      retry: MODEL_RETRY,
      run: (deps: ForgetDurableDeps, input) => purgeDurableHistories(deps, input),
    }),
    /** Step 3: the blobs of the scope's artifacts, before their rows. */
    blobs: step({ name: 'activity-forget-blobs', input: ForgetInput, output: BlobsResult, retry: MODEL_RETRY, run: (deps: ForgetDeps, input) => purgeBlobs(deps, input) }),
    /** Step 4: every item of the scope in the store, the in-process search snapshot, and (a session) its summary in other sessions' init blocks. */
    stores: step({ name: 'activity-forget-stores', input: ForgetInput, output: StoresResult, retry: MODEL_RETRY, run: (deps: PurgeDeps, input) => purgeStores(deps, input) }),
    /** Step 5: the verification scan, independent of the purge. */
    verify: step({ name: 'activity-forget-verify', input: VerifyInput, output: VerifyResult, retry: MODEL_RETRY, run: (deps: ForgetDurableDeps, input) => verifyForget(deps, input) }),
    /** Step 6: the tombstone goes, unless a late writer enlisted after the scan (another round); logs one line with ids and counts. */
    finish: step({ name: 'activity-forget-finish', input: FinishInput, output: FinishResult, retry: MODEL_RETRY, run: (deps: ForgetDeps, input) => finishForget(deps, input) }),
  },
});
