import { retrieveMemory } from '../shared/application/artifacts.js';
import { viewerFor } from '../shared/application/viewer.js';
import { GetMemoryQuery, MemoryKeyParams, RetrievedMemory } from '../shared/contracts/artifacts.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: MemoryKeyParams, query: GetMemoryQuery, response: RetrievedMemory, summary: 'Fetch an artifact, whole or transformed (excerpt, summary, first_n, last_n, filtered)' }, async ({ params, query, principal }) => {
  const runtime = await getRuntime();
  return retrieveMemory(runtime, await viewerFor(runtime, principal, { userId: params.userId, agentId: query.agentId, sessionId: query.sessionId }), params.key, query);
});

export default defineFunction({ name: 'http-memory-get', trigger: http('GET', 'v1/users/{userId}/memories/{key}'), handler });
