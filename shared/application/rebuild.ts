import type { Deps } from './ports.js';
import { applyEvents, type ApplyDeps } from './project-session.js';

export interface RebuildReport {
  users: number;
  sessions: number;
  events: number;
}

/**
 * Drops the session-derived read models of one user (or of every user) and rebuilds them from the events alone:
 * session documents, interactions, the turn index, search rows (and with them PGlite's search snapshots). Every
 * decision, model output included, is in the events, so no chat model is called; the embedder embeds the recorded
 * texts again. Insights and the long-term profile are the user's, not a session's, and are left as they are.
 */
export async function rebuildProjections(deps: ApplyDeps & Pick<Deps, 'projections'>, userId?: string): Promise<RebuildReport> {
  const sessions = await deps.events.sessions(userId);
  const users = [...new Set(sessions.map((s) => s.userId))];
  for (const user of users) await deps.projections.dropUser(user);
  let events = 0;
  for (const key of sessions) events += (await applyEvents(deps, key)).session?.projectedThroughSeq ?? 0;
  return { users: users.length, sessions: sessions.length, events };
}
