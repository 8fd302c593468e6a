import { authorizeAgents } from '../shared/application/auth.js';
import { getSessionMessages } from '../shared/application/session-messages.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { MessagesQuery, MessagesResponse } from '../shared/contracts/messages.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** The verbatim thread as model messages; an agent-bound principal reads its own agent's thread unless it names one. */
export const handler = httpHandler({ params: SessionKey, query: MessagesQuery, response: MessagesResponse, summary: 'The verbatim part of the thread as model messages (openai) or stored turns (raw)' }, async ({ params, query, principal }) => {
  const agentId = query.agentId ?? principal.agentId;
  authorizeAgents(principal, [agentId]);
  return getSessionMessages(await getRuntime(), params, { ...query, ...(agentId && { agentId }) });
});

export default defineFunction({ name: 'http-session-messages', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/messages'), handler });
