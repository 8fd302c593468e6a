import type { Scope } from '../contracts/scopes.js';

/**
 * Who reads: always a user; optionally the agent it acts as and the session it acts in, and the memory keys other
 * agents handed to it (handoffs). A viewer that names no agent sees every agent's items of the user, and one that
 * names no session every session's: the behaviour of callers that send no `agentId` (and of service tools).
 */
export interface Viewer {
  userId: string;
  agentId?: string;
  sessionId?: string;
  /** Keys of private items handed to this agent; they are visible to it whoever owns them. */
  grants?: ReadonlySet<string>;
}

/** What a scoped item says about itself. */
export interface Scoped {
  scope: Scope;
  userId: string;
  agentId?: string;
  sessionId?: string;
  key?: string;
}

/** The one visibility rule: every read, listing, search and context of scoped items goes through it. */
export function canSee(item: Scoped, viewer: Viewer): boolean {
  if (item.scope === 'global') return true;
  if (item.userId !== viewer.userId) return false;
  switch (item.scope) {
    case 'user':
      return true;
    case 'session':
      return viewer.sessionId === undefined || item.sessionId === viewer.sessionId;
    case 'private':
      return viewer.agentId === undefined || item.agentId === viewer.agentId || (item.key !== undefined && (viewer.grants?.has(item.key) ?? false));
  }
}

/** A handoff passes a private slot of the sender's as `slot:<name>` among its memory keys. */
export const SLOT_REF_PREFIX = 'slot:';

/** The grant that makes `owner`'s private slot `name` visible (its `Scoped.key`); `/` is no id character, so it never meets an artifact key. */
export const slotGrantKey = (owner: string, name: string): string => `${SLOT_REF_PREFIX}${owner}/${name}`;

/** The keys handed to `agentId` in a session: its handoffs' artifact keys, and the senders' private slots they name. */
export function grantsOf(session: { handoffs?: readonly { fromAgentId: string; toAgentId: string; memoryKeys: readonly string[] }[] }, agentId: string): Set<string> {
  return new Set(
    (session.handoffs ?? [])
      .filter((h) => h.toAgentId === agentId)
      .flatMap((h) => h.memoryKeys.map((k) => (k.startsWith(SLOT_REF_PREFIX) ? slotGrantKey(h.fromAgentId, k.slice(SLOT_REF_PREFIX.length)) : k))),
  );
}
