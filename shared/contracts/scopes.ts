import { z } from 'zod';

/**
 * Who may see a slot, an artifact (detail memory) or a snapshot: `private` one agent (its `agentId`), `session` every
 * agent of one session (its `sessionId`), `user` every agent and session of the user, `global` every user of the
 * deployment (shared knowledge, written only by an admin principal). shared/domain/scopes.ts decides who sees what.
 */
export const Scope = z.enum(['private', 'session', 'user', 'global']);
export type Scope = z.infer<typeof Scope>;
