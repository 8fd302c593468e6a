import type { RecentSession } from '../contracts/context.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument } from '../contracts/sessions.js';
import type { InsightStore, MemoryConfig, SessionDirectory } from './ports.js';

export interface InitBlock {
  profile: string | null;
  recentSessions: RecentSession[];
}

export interface SessionInitDeps {
  memory: MemoryConfig;
  insights?: InsightStore;
  directory?: SessionDirectory;
}

/**
 * What the session's init block would be now: the long-term profile (text and version) and the last
 * NUM_RECENT_SESSIONS summaries of sessions that ended before it started, oldest first (the budget drops the oldest
 * first). The projector fixes it in a `SessionInitFixed` event when the session's first turn is projected.
 */
export async function currentInit(
  deps: SessionInitDeps,
  key: SessionKey,
  startedAt: string | null,
): Promise<{ profile: { text: string; version: number } | null; recentSessions: RecentSession[] }> {
  if (!deps.insights || !deps.directory) return { profile: null, recentSessions: [] };
  const [profile, recent] = await Promise.all([
    deps.insights.getProfile(key.userId),
    deps.directory.recentSummaries(key.userId, deps.memory.numRecentSessions, { excludeSessionId: key.sessionId, ...(startedAt && { before: startedAt }) }),
  ]);
  return { profile: profile && { text: profile.profile, version: profile.version }, recentSessions: recent.reverse() };
}

/**
 * The session's init block: as fixed by its `SessionInitFixed` event, so a reflection finishing mid-session does not
 * change the context under the agent. Until that event is projected (moments after the first turn), what it will
 * most likely fix. A read never writes it.
 */
export async function sessionInit(deps: SessionInitDeps, key: SessionKey, session: SessionDocument | null): Promise<InitBlock> {
  if (session?.init) return session.init;
  const { profile, recentSessions } = await currentInit(deps, key, session?.startedAt ?? null);
  return { profile: profile?.text ?? null, recentSessions };
}
