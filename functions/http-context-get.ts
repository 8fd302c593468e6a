import { getContext } from '../shared/application/get-context.js';
import { ContextQuery } from '../shared/contracts/context.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, query: ContextQuery }, async ({ params, query }) => getContext(await getRuntime(), params, query));

export default defineFunction({ name: 'http-context-get', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/context'), handler });
