import { getContext } from '../shared/application/get-context.js';
import { ContextQuery } from '../shared/contracts/context.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** An agent-bound principal reads as its agent (its private slots only) unless it names itself. */
export const handler = httpHandler({ params: SessionKey, query: ContextQuery }, async ({ params, query, principal }) =>
  getContext(await getRuntime(), params, { ...query, ...(principal.agentId !== undefined && { agentId: query.agentId ?? principal.agentId }) }),
);

export default defineFunction({ name: 'http-context-get', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/context'), handler });
