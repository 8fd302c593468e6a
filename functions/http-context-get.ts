import { authorizeAgents } from '../shared/application/auth.js';
import { getContext } from '../shared/application/get-context.js';
import { ContextQuery, ContextResponse } from '../shared/contracts/context.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** An agent-bound principal gets its own agent's view; it may not ask for another agent's. */
export const handler = httpHandler({ params: SessionKey, query: ContextQuery, response: ContextResponse, summary: 'The context block of a session (or of one agent\'s thread) within a token budget', problems: ['context_budget_exceeded'] }, async ({ params, query, principal }) => {
  authorizeAgents(principal, [query.agentId]);
  const agentId = query.agentId ?? principal.agentId;
  return getContext(await getRuntime(), params, { ...query, ...(agentId !== undefined && { agentId }) });
});

export default defineFunction({ name: 'http-context-get', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/context'), handler });
