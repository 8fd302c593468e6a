import { z } from 'zod';
import { listMemories } from '../shared/application/artifacts.js';
import { ListMemoriesQuery, MemoryList } from '../shared/contracts/artifacts.js';
import { Id } from '../shared/contracts/ids.js';
import { viewerFor } from '../shared/application/viewer.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), query: ListMemoriesQuery, response: MemoryList, summary: 'List the artifacts the reader may see, newest first, without content' }, async ({ params, query, principal }) => {
  const runtime = await getRuntime();
  return listMemories(runtime, await viewerFor(runtime, principal, { userId: params.userId, agentId: query.agentId, sessionId: query.sessionId }), query);
});

export default defineFunction({ name: 'http-memories-list', trigger: http('GET', 'v1/users/{userId}/memories'), handler });
