import { retrieveMemory } from '../shared/application/artifacts.js';
import { GetMemoryQuery, MemoryKeyParams, RetrievedMemory } from '../shared/contracts/artifacts.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: MemoryKeyParams, query: GetMemoryQuery, response: RetrievedMemory, summary: 'Fetch an artifact, whole or transformed (excerpt, summary, first_n, last_n, filtered)' }, async ({ params, query }) =>
  retrieveMemory(await getRuntime(), params.userId, params.key, query),
);

export default defineFunction({ name: 'http-memory-get', trigger: http('GET', 'v1/users/{userId}/memories/{key}'), handler });
