import { z } from 'zod';
import { findFacts } from '../shared/application/retrieval-agent.js';
import { FactSearchBody, FactSearchResult } from '../shared/contracts/facts.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), body: FactSearchBody, response: FactSearchResult, summary: 'Hybrid search over turns, interactions, artifacts, insights and session summaries (mode agent: the retrieval agent)' }, async ({ params, body, principal }) => {
  return findFacts(await getRuntime(), principal, params.userId, body);
});

export default defineFunction({ name: 'http-facts-search', trigger: http('POST', 'v1/users/{userId}/facts/search'), handler });
