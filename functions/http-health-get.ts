import { HealthResponse } from '../shared/contracts/health.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** Public (no credentials): liveness, backends and model-call counts per operation type; nothing per user. */
export const handler = httpHandler({ access: 'public', response: HealthResponse, summary: 'Liveness, backends and model-call counts (public)' }, async () => {
  const runtime = await getRuntime();
  return {
    status: 'ok',
    storage: runtime.backend,
    models: { chat: runtime.chat.model, embeddings: runtime.embedder.model, dimensions: runtime.embedder.dimensions },
    memory: runtime.memory,
    modelCalls: runtime.meter.snapshot(),
    /** Events the projection could not apply and set aside; each session's status lists its own. */
    projection: { setAsideEvents: await runtime.directory.setAsideEvents() },
    ...(runtime.admission && { memoryBudget: runtime.admission.status() }),
  };
});

export default defineFunction({ name: 'http-health-get', trigger: http('GET', 'health'), handler });
