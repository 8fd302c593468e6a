import { grantsOf, type Viewer } from '../domain/scopes.js';
import { authorizeAgents, type Principal } from './auth.js';
import { load, type LoadDeps } from './project-session.js';

/**
 * Who reads, for the scoped reads of detail memory (get, list, search, snapshot, context): the user, the agent the
 * request names (else the agent an agent-bound principal is bound to; naming another agent is 403), the session it
 * names, and the memory keys handed to that agent in that session (its handoffs).
 * A request that names no agent, from a principal bound to none, reads as every agent of the user: the behaviour
 * before scopes. Without a session there are no grants (handoffs live in a session).
 */
export async function viewerFor(
  deps: LoadDeps,
  principal: Principal,
  request: { userId: string; agentId?: string | undefined; sessionId?: string | undefined },
): Promise<Viewer> {
  authorizeAgents(principal, [request.agentId]);
  const agentId = request.agentId ?? principal.agentId;
  const { userId, sessionId } = request;
  const viewer: Viewer = { userId, ...(agentId !== undefined && { agentId }), ...(sessionId !== undefined && { sessionId }) };
  if (agentId === undefined || sessionId === undefined) return viewer;
  // Folded from the stream, so a handoff counts the moment it is recorded.
  const { session } = await load(deps, { userId, sessionId });
  return { ...viewer, grants: grantsOf(session, agentId) };
}

/** An admin principal: every user, bound to no agent. Only it writes (and deletes) `global` artifacts. */
export const isAdmin = (principal: Principal): boolean => principal.allUsers && principal.agentId === undefined;
