import type { RecentSession } from '../contracts/context.js';
import type { SessionKey } from '../contracts/ids.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { MemoryError } from '../domain/errors.js';
import type { InsightStore, MemoryConfig, SessionDirectory, SessionStore, Versioned } from './ports.js';

export interface InitBlock {
  profile: string | null;
  recentSessions: RecentSession[];
}

export interface SessionInitDeps {
  sessions: SessionStore;
  memory: MemoryConfig;
  insights?: InsightStore;
  directory?: SessionDirectory;
}

/**
 * The session's init block: the long-term profile and the last NUM_RECENT_SESSIONS summaries of sessions that ended
 * before it started. Fixed at the start: the first read stores it on the session document, later reads reuse it, so a
 * reflection finishing mid-session does not change the context under the agent.
 */
export async function sessionInit(deps: SessionInitDeps, key: SessionKey, stored: Versioned<SessionDocument> | null): Promise<InitBlock> {
  if (stored?.doc.init) return stored.doc.init;
  if (!deps.insights || !deps.directory) return { profile: null, recentSessions: [] };
  const [profile, recent] = await Promise.all([
    deps.insights.getProfile(key.userId),
    deps.directory.recentSummaries(key.userId, deps.memory.numRecentSessions, {
      excludeSessionId: key.sessionId,
      ...(stored?.doc.startedAt && { before: stored.doc.startedAt }),
    }),
  ]);
  // Oldest first: the budget drops the oldest summaries first.
  const init: InitBlock = { profile: profile?.profile ?? null, recentSessions: recent.reverse() };
  if (stored) {
    try {
      await deps.sessions.put({ ...stored.doc, init }, stored.version);
    } catch (error) {
      // Changed concurrently (the projection): the next read fixes the block instead.
      if (!(error instanceof MemoryError && error.code === 'conflict')) throw error;
    }
  }
  return init;
}
