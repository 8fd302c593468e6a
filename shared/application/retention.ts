import { z } from 'zod';
import { expiredInsightIds, type RetentionPolicy } from '../domain/retention.js';
import type { Deps } from './ports.js';

export type RetentionDeps = Pick<Deps, 'insights'> & { retention: RetentionPolicy };

export const RetentionResult = z.object({
  /** Superseded or merged insights deleted because their audit period was over. */
  expired: z.number().int().nonnegative(),
});
export type RetentionResult = z.infer<typeof RetentionResult>;

/**
 * Retention for one user at `now` (the orchestration's time, so a replay decides the same): superseded and merged
 * insights past their audit period are deleted. Live insights and the profile are semantic memory and stay. On Cosmos
 * the items' own `ttl` usually got there first; this sweep is what PostgreSQL relies on, and on Cosmos it catches items
 * written before a ttl was stamped or under a longer period. Idempotent: a second run finds nothing left to delete.
 */
export async function applyRetention(deps: RetentionDeps, userId: string, now: Date): Promise<RetentionResult> {
  if (deps.retention.supersededInsightTtl === null) return { expired: 0 };
  const insights = await deps.insights.list(userId);
  const due = expiredInsightIds(insights, now, deps.retention);
  return { expired: due.length === 0 ? 0 : await deps.insights.purge(userId, due) };
}
