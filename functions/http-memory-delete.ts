import { deleteMemory } from '../shared/application/artifacts.js';
import { viewerFor } from '../shared/application/viewer.js';
import { DeletedMemory, MemoryKeyParams, ViewerQuery } from '../shared/contracts/artifacts.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: MemoryKeyParams, query: ViewerQuery, response: DeletedMemory, summary: 'Delete an artifact and its blob' }, async ({ params, query, principal }) => {
  const runtime = await getRuntime();
  return deleteMemory(runtime, principal, await viewerFor(runtime, principal, { userId: params.userId, ...query }), params.key);
});

export default defineFunction({ name: 'http-memory-delete', trigger: http('DELETE', 'v1/users/{userId}/memories/{key}'), handler });
