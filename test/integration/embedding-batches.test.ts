import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { embeddings, fakeVector, startOpenAITestServer, type Handler, type OpenAITestServer, type ScriptedResponse } from '../support/openai-test-server.js';

/** The runtime's embedder with a hosted model: concurrent callers (sessions projected at once) share HTTP requests. */
describe('embedding batches across callers, hosted model', () => {
  let server: OpenAITestServer;
  let runtime: Runtime;
  beforeAll(async () => {
    server = await startOpenAITestServer();
    runtime = await createRuntime(
      loadSettings({
        MEMORY_DATA_DIR: 'memory://',
        MODEL_PROVIDER: 'openai',
        OPENAI_BASE_URL: server.baseURL,
        OPENAI_API_KEY: 'test-key',
        EMBEDDING_DIMENSIONS: '8',
        EMBEDDING_BATCH_TEXTS: '5',
        EMBEDDING_CONCURRENCY: '1',
        MODEL_MAX_RETRIES: '0',
      }),
    );
  });
  afterAll(async () => {
    await runtime?.close();
    await server?.close();
  });

  it('given callers that embed together, then at most EMBEDDING_BATCH_TEXTS texts go per request and each caller gets its own vectors', async () => {
    server.reset();
    server.setDefault('embeddings', embeddings());
    const callers = [['one', 'two', 'three'], ['four'], ['five', 'six', 'seven', 'eight']];
    const results = await Promise.all(callers.map((texts) => runtime.embedder.embed(texts)));
    expect(server.requests.map((r) => r.body.input)).toEqual([
      ['one', 'two', 'three', 'four', 'five'],
      ['six', 'seven', 'eight'],
    ]);
    results.forEach((vectors, i) => expect(vectors.map((v) => v[0])).toEqual(callers[i]!.map((t) => fakeVector(t, 8)[0])));
  });

  it('given a request the endpoint refuses (HTTP 400) for one caller\'s text, then only that caller fails', async () => {
    server.reset();
    const ok = embeddings() as Exclude<Handler, ScriptedResponse>;
    server.setDefault('embeddings', (request) => ((request.body.input as string[]).includes('refused') ? { status: 400, body: { error: { message: 'bad input' } } } : ok(request)));
    const [good, bad] = await Promise.allSettled([runtime.embedder.embed(['fine']), runtime.embedder.embed(['refused'])]);
    expect(good).toMatchObject({ status: 'fulfilled', value: [expect.any(Array)] });
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'upstream_unavailable', details: { status: 400 } } });
    expect(server.requests.map((r) => r.body.input)).toEqual([['fine', 'refused'], ['fine'], ['refused']]);
  });
});
