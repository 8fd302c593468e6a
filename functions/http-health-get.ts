import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({}, async () => {
  const runtime = await getRuntime();
  return {
    status: 'ok',
    storage: runtime.backend,
    models: { chat: runtime.chat.model, embeddings: runtime.embedder.model, dimensions: runtime.embedder.dimensions },
    memory: runtime.memory,
    modelCalls: runtime.meter.snapshot(),
    /** Events the projection could not apply and set aside; each session's status lists its own. */
    projection: { setAsideEvents: await runtime.directory.setAsideEvents() },
  };
});

export default defineFunction({ name: 'http-health-get', trigger: http('GET', 'health'), handler });
