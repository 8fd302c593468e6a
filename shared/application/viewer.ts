import { grantsOf, type Viewer } from '../domain/scopes.js';
import { authorizeAgents, type Principal } from './auth.js';
import type { SessionStore } from './ports.js';

/**
 * Who reads, for the scoped reads of detail memory (get, list, search, snapshot, context): the user, the agent the
 * request names (else the agent an agent-bound principal is bound to; naming another agent is 403), the session it
 * names, and the memory keys handed to that agent in that session (its handoffs, read from the session document).
 * A request that names no agent, from a principal bound to none, reads as every agent of the user: the behaviour
 * before scopes. Without a session there are no grants (handoffs live in a session).
 */
export async function viewerFor(
  deps: { sessions: Pick<SessionStore, 'get'> },
  principal: Principal,
  request: { userId: string; agentId?: string | undefined; sessionId?: string | undefined },
): Promise<Viewer> {
  authorizeAgents(principal, [request.agentId]);
  const agentId = request.agentId ?? principal.agentId;
  const { userId, sessionId } = request;
  const viewer: Viewer = { userId, ...(agentId !== undefined && { agentId }), ...(sessionId !== undefined && { sessionId }) };
  if (agentId === undefined || sessionId === undefined) return viewer;
  const session = await deps.sessions.get({ userId, sessionId });
  return session ? { ...viewer, grants: grantsOf(session.doc, agentId) } : viewer;
}

/** An admin principal: every user, bound to no agent. Only it writes (and deletes) `global` artifacts. */
export const isAdmin = (principal: Principal): boolean => principal.allUsers && principal.agentId === undefined;
