import { z } from 'zod';
import { expiredInsightIds, type RetentionPolicy } from '../domain/retention.js';
import type { DetailMemory } from './artifact-ports.js';
import { deleteExpired } from './artifacts.js';
import type { Deps } from './ports.js';

/** `detail` absent: no detail memory to sweep (its count is then 0). */
export type RetentionDeps = Pick<Deps, 'insights'> & { retention: RetentionPolicy; detail?: DetailMemory };

export const RetentionResult = z.object({
  /** Superseded or merged insights deleted because their audit period was over. */
  expired: z.number().int().nonnegative(),
  /** Artifacts deleted (with their blobs) because their TTL was over. */
  artifactsExpired: z.number().int().nonnegative(),
});
export type RetentionResult = z.infer<typeof RetentionResult>;

/**
 * Retention for one user at `now` (the orchestration's time, so a replay decides the same): superseded and merged
 * insights past their audit period are deleted, and so are the artifacts whose TTL is over, with their blobs. Live
 * insights, the profile and permanent (semantic) artifacts stay. On Cosmos the items' own `ttl` usually got there first;
 * this sweep is what PostgreSQL relies on, and on Cosmos it catches items written before a ttl was stamped or under a
 * longer period, and deletes the blobs of expired artifacts (Blob Storage has no TTL of its own). Idempotent: a second
 * run finds nothing left to delete.
 */
export async function applyRetention(deps: RetentionDeps, userId: string, now: Date): Promise<RetentionResult> {
  const artifactsExpired = deps.detail ? await deleteExpired(deps.detail, userId, now) : 0;
  if (deps.retention.supersededInsightTtl === null) return { expired: 0, artifactsExpired };
  const insights = await deps.insights.list(userId);
  const due = expiredInsightIds(insights, now, deps.retention);
  return { expired: due.length === 0 ? 0 : await deps.insights.purge(userId, due), artifactsExpired };
}
