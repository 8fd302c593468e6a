import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAIModels, openAIOptionsFromSettings, type OpenAIModelOptions } from '../../shared/adapters/openai/index.js';
import { UsageMeter } from '../../shared/application/metering.js';
import type { ChatMessage, ToolDefinition } from '../../shared/application/ports.js';
import { MemoryError } from '../../shared/domain/errors.js';
import { loadSettings } from '../../shared/platform/config.js';
import { chatCompletion, embeddings, errorResponse, startOpenAITestServer, type OpenAITestServer, type RecordedRequest } from '../support/openai-test-server.js';

let server: OpenAITestServer;
beforeAll(async () => {
  server = await startOpenAITestServer();
});
afterAll(async () => {
  await server.close();
});
beforeEach(() => server.reset());

const FAST = { dimensions: 8, timeoutMs: 2_000, maxRetries: 2, backoff: { initialDelayMs: 10, maxDelayMs: 40, maxRetryAfterMs: 2_000 } };
type Overrides = Partial<typeof FAST> & Pick<OpenAIModelOptions, 'embeddingEncoding' | 'embeddingBatch'>;

interface Mode {
  name: string;
  options(overrides?: Overrides): OpenAIModelOptions;
  /** Name of the deployment/model per use, and how a request for it looks. */
  names: { chat: string; mini: string; embeddings: string };
  expectTarget(request: RecordedRequest | undefined, name: string): void;
  expectAuth(request: RecordedRequest | undefined): void;
}

const modes: Mode[] = [
  {
    name: 'Azure OpenAI (api key)',
    names: { chat: 'chat-dep', mini: 'mini-dep', embeddings: 'emb-dep' },
    options: (o) => ({
      ...FAST,
      ...o,
      provider: 'azure-openai',
      endpoint: `${server.url}/`,
      apiVersion: '2024-10-21',
      apiKey: 'azure-test-key',
      deployments: { chat: 'chat-dep', mini: 'mini-dep', embeddings: 'emb-dep' },
    }),
    expectTarget: (request, name) => {
      expect(request?.deployment).toBe(name);
      expect(request?.path).toMatch(new RegExp(`^/openai/deployments/${name}/(chat/completions|embeddings)$`));
      expect(request?.query['api-version']).toBe('2024-10-21');
    },
    expectAuth: (request) => expect(request?.headers['api-key']).toBe('azure-test-key'),
  },
  {
    name: 'OpenAI-compatible',
    names: { chat: 'gpt-4o', mini: 'gpt-4o-mini', embeddings: 'text-embedding-3-small' },
    options: (o) => ({
      ...FAST,
      ...o,
      provider: 'openai',
      baseURL: server.baseURL,
      apiKey: 'sk-test',
      models: { chat: 'gpt-4o', mini: 'gpt-4o-mini', embeddings: 'text-embedding-3-small' },
    }),
    expectTarget: (request, name) => {
      expect(request?.path).toMatch(/^\/v1\/(chat\/completions|embeddings)$/);
      expect(request?.body.model).toBe(name);
    },
    expectAuth: (request) => expect(request?.headers.authorization).toBe('Bearer sk-test'),
  },
];

const metadata = { summary: 'The user adopted a puppy.', topics: ['pets'], entities: ['Biscuit'], cumulativeSummary: 'The user moved, then adopted a puppy.' };
const metadataInput = { conversation: 'user: I adopted a golden retriever puppy named Biscuit.', previousSummary: 'The user moved to Lisbon.' };

const tools: ToolDefinition[] = [
  {
    name: 'search_insights',
    description: 'Search insights about the user',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
  },
];

async function failure(promise: Promise<unknown>): Promise<MemoryError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MemoryError);
  return error as MemoryError;
}

describe.each(modes)('hosted models — $name', (mode) => {
  const setup = (overrides?: Overrides) => {
    const meter = new UsageMeter();
    return { meter, ...createOpenAIModels(mode.options(overrides), meter) };
  };

  describe('structured tasks', () => {
    it('sends the rendered prompt with a strict json_schema response format to the tier’s deployment and returns the validated output', async () => {
      const { chat, meter } = setup();
      server.script(chatCompletion({ content: metadata, usage: { prompt_tokens: 321, completion_tokens: 45 } }));

      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);

      const [request] = server.requests;
      mode.expectTarget(request, mode.names.mini);
      mode.expectAuth(request);
      const format = request?.body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: { properties: object; required: string[]; additionalProperties: boolean } } };
      expect(format.type).toBe('json_schema');
      expect(format.json_schema.name).toBe('windowMetadata');
      expect(format.json_schema.strict).toBe(true);
      expect(format.json_schema.schema.required).toEqual(['summary', 'topics', 'entities', 'cumulativeSummary']);
      expect(format.json_schema.schema.additionalProperties).toBe(false);
      expect(JSON.stringify(format.json_schema.schema)).not.toMatch(/minLength|maxItems|\$schema/);
      const messages = request?.body.messages as { role: string; content: string }[];
      expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
      expect(messages[1]?.content).toContain(metadataInput.conversation);
      expect(messages[1]?.content).toContain(metadataInput.previousSummary);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 1, failures: 0, inputTokens: 321, outputTokens: 45 });
    });

    it('runs reflection on the chat deployment and limits insight categories to the configured ones', async () => {
      const { chat } = setup();
      const answer = { reflectionFlag: 'insight', insights: [{ category: 'pets', text: 'Has a golden retriever puppy.', confidence: 0.9, importance: 'medium' }] };
      server.script(chatCompletion({ content: answer }));

      await expect(chat.run('sessionInsights', { conversation: 'user: my puppy', categories: ['pets', 'concern'] })).resolves.toEqual(answer);

      mode.expectTarget(server.requests[0], mode.names.chat);
      const schema = (server.requests[0]?.body.response_format as { json_schema: { schema: { properties: { insights: { items: { properties: { category: { enum: string[] } } } } } } } })
        .json_schema.schema;
      expect(schema.properties.insights.items.properties.category.enum).toEqual(['pets', 'concern']);
    });

    it('retries a schema-violating output once, then fails with upstream_unavailable — exactly 2 requests, both metered', async () => {
      const { chat, meter } = setup();
      server.script(chatCompletion({ content: { summary: 'no other keys' } }), chatCompletion({ content: { ...metadata, topics: 'pets' } }));

      const error = await failure(chat.run('windowMetadata', metadataInput));

      expect(error.code).toBe('upstream_unavailable');
      expect(error.message).toMatch(/output for windowMetadata failed validation 2 times/);
      expect(error.message).not.toContain('puppy');
      expect(error.details.issues).toEqual(expect.arrayContaining([expect.objectContaining({ path: 'topics' })]));
      expect(server.requests).toHaveLength(2);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 2, failures: 2, inputTokens: 200, outputTokens: 40 });
    });

    it('succeeds when a non-JSON output is followed by a valid one', async () => {
      const { chat, meter } = setup();
      server.script(chatCompletion({ content: 'Sure! Here is the JSON: {' }), chatCompletion({ content: metadata }));

      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);
      expect(server.requests).toHaveLength(2);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 2, failures: 1 });
    });

    it('treats an insight outside the configured categories and a superseded id not given as invalid output', async () => {
      const { chat } = setup();
      const offCategory = { reflectionFlag: 'insight', insights: [{ category: 'astrology', text: 'Is a Leo.', confidence: 0.5, importance: 'low' }] };
      server.script(chatCompletion({ content: offCategory }), chatCompletion({ content: offCategory }));
      const error = await failure(chat.run('sessionInsights', { conversation: 'user: I am a Leo', categories: ['concern'] }));
      expect(error.details.issues).toEqual([{ path: 'insights.0.category', message: 'not one of the configured categories' }]);

      const input = { currentProfile: '', insights: [{ id: 'ins-1', category: 'concern', text: 'Worried about fees.', createdAt: '2026-01-01T00:00:00Z' }] };
      server.script(chatCompletion({ content: { profile: 'Worried about fees.', supersededInsightIds: ['ins-9'] } }), chatCompletion({ content: { profile: 'Worried about fees.', supersededInsightIds: [] } }));
      await expect(chat.run('longTermProfile', input)).resolves.toEqual({ profile: 'Worried about fees.', supersededInsightIds: [] });
      expect(server.requests).toHaveLength(4);
    });

    it('rejects invalid task input before calling the endpoint', async () => {
      const { chat } = setup();
      const error = await failure(chat.run('sessionInsights', { conversation: 'x', categories: [] }));
      expect(error.code).toBe('internal');
      expect(server.requests).toHaveLength(0);
    });
  });

  describe('tool calling', () => {
    it('sends tools and the conversation in OpenAI format and parses the tool calls', async () => {
      const { chat, meter } = setup();
      server.script(chatCompletion({ toolCalls: [{ id: 'call_b', name: 'search_insights', arguments: { query: 'dog' } }] }));
      const messages: ChatMessage[] = [
        { role: 'system', content: 'You retrieve facts.' },
        { role: 'user', content: 'Does the user have a dog?' },
        { role: 'assistant', content: null, toolCalls: [{ id: 'call_a', name: 'search_insights', arguments: { query: 'pet' } }] },
        { role: 'tool', toolCallId: 'call_a', content: '[]' },
      ];

      const turn = await chat.converse({ operation: 'retrievalAgent', tier: 'mini', messages, tools });

      expect(turn).toEqual({ content: null, toolCalls: [{ id: 'call_b', name: 'search_insights', arguments: { query: 'dog' } }] });
      const request = server.requests[0];
      mode.expectTarget(request, mode.names.mini);
      expect(request?.body.tools).toEqual([{ type: 'function', function: { name: 'search_insights', description: tools[0]!.description, parameters: tools[0]!.parameters } }]);
      expect(request?.body.messages).toEqual([
        { role: 'system', content: 'You retrieve facts.' },
        { role: 'user', content: 'Does the user have a dog?' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'search_insights', arguments: '{"query":"pet"}' } }] },
        { role: 'tool', tool_call_id: 'call_a', content: '[]' },
      ]);
      expect(meter.snapshot().retrievalAgent).toMatchObject({ calls: 1, inputTokens: 100, outputTokens: 20 });
    });

    it('returns a final answer without tool calls', async () => {
      const { chat } = setup();
      server.script(chatCompletion({ content: 'The user has a golden retriever [insight:1].' }));
      await expect(chat.converse({ operation: 'retrievalAgent', tier: 'mini', messages: [{ role: 'user', content: 'dog?' }], tools })).resolves.toEqual({
        content: 'The user has a golden retriever [insight:1].',
        toolCalls: [],
      });
    });

    it('retries tool arguments that are not JSON once, then fails', async () => {
      const { chat } = setup();
      const bad = chatCompletion({ toolCalls: [{ name: 'search_insights', arguments: '{"query": "dog"' }] });
      server.script(bad, bad);
      const error = await failure(chat.converse({ operation: 'retrievalAgent', tier: 'mini', messages: [{ role: 'user', content: 'dog?' }], tools }));
      expect(error.code).toBe('upstream_unavailable');
      expect(error.message).toMatch(/failed validation 2 times: the arguments of tool call 0 are not JSON/);
      expect(server.requests).toHaveLength(2);
    });
  });

  describe('retries and errors', () => {
    it('honours retry-after (seconds) on 429, then succeeds', async () => {
      const { chat, meter } = setup();
      server.script(errorResponse(429, { 'retry-after': '1' }), chatCompletion({ content: metadata }));

      const started = performance.now();
      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);

      expect(performance.now() - started).toBeGreaterThanOrEqual(950);
      expect(server.requests).toHaveLength(2);
      expect(server.requests[1]!.at - server.requests[0]!.at).toBeGreaterThanOrEqual(950);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 2, failures: 1 });
    });

    it('prefers retry-after-ms, and caps a long retry-after', async () => {
      const { chat } = setup({ backoff: { initialDelayMs: 10, maxDelayMs: 40, maxRetryAfterMs: 300 } });
      server.script(errorResponse(429, { 'retry-after-ms': '200', 'retry-after': '60' }), errorResponse(503, { 'retry-after': '3600' }), chatCompletion({ content: metadata }));

      const started = performance.now();
      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);

      const [first, second, third] = server.requests;
      expect(second!.at - first!.at).toBeGreaterThanOrEqual(190);
      expect(third!.at - second!.at).toBeGreaterThanOrEqual(290);
      expect(performance.now() - started).toBeLessThan(2_000);
    });

    it('retries a 500, then succeeds', async () => {
      const { chat } = setup();
      server.script(errorResponse(500), chatCompletion({ content: metadata }));
      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);
      expect(server.requests).toHaveLength(2);
    });

    it('gives up after maxRetries on a persistent 500 with upstream_unavailable carrying the status', async () => {
      const { chat, meter } = setup();
      server.script(errorResponse(500), errorResponse(502), errorResponse(500), chatCompletion({ content: metadata }));

      const error = await failure(chat.run('windowMetadata', metadataInput));

      expect(error.code).toBe('upstream_unavailable');
      expect(error.details).toMatchObject({ status: 500, attempts: 3, operation: 'windowMetadata' });
      expect(JSON.stringify(error.details) + error.message).not.toContain('puppy');
      expect(server.requests).toHaveLength(3);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 3, failures: 3, inputTokens: 0 });
    });

    it('does not retry other 4xx', async () => {
      const { chat } = setup();
      server.script(errorResponse(400), chatCompletion({ content: metadata }));
      const error = await failure(chat.run('windowMetadata', metadataInput));
      expect(error.details).toMatchObject({ status: 400, attempts: 1 });
      expect(server.requests).toHaveLength(1);
    });

    it('times out each attempt, retries, then fails with upstream_unavailable', async () => {
      const { chat, meter } = setup({ timeoutMs: 150, maxRetries: 1 });
      server.script({ ...chatCompletion({ content: metadata }), delayMs: 1_000 }, { ...chatCompletion({ content: metadata }), delayMs: 1_000 });

      const started = performance.now();
      const error = await failure(chat.run('windowMetadata', metadataInput));

      expect(error.code).toBe('upstream_unavailable');
      expect(error.details).toMatchObject({ reason: 'timeout', attempts: 2 });
      expect(server.requests).toHaveLength(2);
      expect(performance.now() - started).toBeLessThan(900);
      expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 2, failures: 2 });
    });

    it('recovers when a timed-out attempt is followed by a prompt answer', async () => {
      const { chat } = setup({ timeoutMs: 150 });
      server.script({ ...chatCompletion({ content: metadata }), delayMs: 1_000 }, chatCompletion({ content: metadata }));
      await expect(chat.run('windowMetadata', metadataInput)).resolves.toEqual(metadata);
      expect(server.requests).toHaveLength(2);
    });
  });

  describe('embeddings', () => {
    const indexed = (text: string) => [Number(text.split(' ')[1]), 0.5, -0.25, 0.125, 1, 2, 3, -4];

    it('decodes base64 embeddings (the SDK default) and requests the configured dimensions', async () => {
      const { embedder, meter } = setup();
      server.setDefault('embeddings', embeddings({ vectorFor: indexed }));

      await expect(embedder.embed(['text 1', 'text 2'])).resolves.toEqual([indexed('text 1'), indexed('text 2')]);

      const request = server.requests[0];
      mode.expectTarget(request, mode.names.embeddings);
      mode.expectAuth(request);
      expect(request?.body).toMatchObject({ input: ['text 1', 'text 2'], dimensions: 8, encoding_format: 'base64' });
      expect(embedder.dimensions).toBe(8);
      expect(embedder.model).toBe(`${mode.options().provider}:${mode.names.embeddings}@8`);
      expect(meter.snapshot().embed).toMatchObject({ calls: 1, failures: 0, inputTokens: 4, outputTokens: 0 });
    });

    it('asks for float arrays when configured', async () => {
      const { embedder } = setup({ embeddingEncoding: 'float' });
      server.setDefault('embeddings', embeddings({ vectorFor: indexed }));
      await expect(embedder.embed(['text 7'])).resolves.toEqual([indexed('text 7')]);
      expect(server.requests[0]?.body.encoding_format).toBe('float');
    });

    it('batches 600 texts into 3 requests of at most 256 and keeps input order, even when the server answers out of order', async () => {
      const { embedder, meter } = setup();
      server.setDefault('embeddings', embeddings({ vectorFor: indexed, reversed: true }));
      const texts = Array.from({ length: 600 }, (_, i) => `text ${i}`);

      const vectors = await embedder.embed(texts);

      expect(server.requests.map((r) => (r.body.input as string[]).length)).toEqual([256, 256, 88]);
      expect(vectors.map((v) => v[0])).toEqual(texts.map((_, i) => i));
      expect(meter.snapshot().embed).toMatchObject({ calls: 3, failures: 0 });
    });

    it('also splits batches by approximate tokens', async () => {
      const { embedder } = setup({ embeddingBatch: { maxTokens: 1_000 } });
      server.setDefault('embeddings', embeddings());
      await embedder.embed(Array.from({ length: 4 }, () => 'x'.repeat(1_200)));
      expect(server.requests.map((r) => (r.body.input as string[]).length)).toEqual([2, 2]);
    });

    it('makes no request for no texts', async () => {
      const { embedder } = setup();
      await expect(embedder.embed([])).resolves.toEqual([]);
      expect(server.requests).toHaveLength(0);
    });

    it('refuses vectors of the wrong size with an error naming expected and got', async () => {
      const { embedder, meter } = setup();
      server.setDefault('embeddings', embeddings({ dimensions: 4 }));

      const error = await failure(embedder.embed(['text 1']));

      expect(error.code).toBe('upstream_unavailable');
      expect(error.message).toMatch(/4 dimensions, expected 8/);
      expect(error.details).toMatchObject({ expectedDimensions: 8, gotDimensions: 4 });
      expect(meter.snapshot().embed).toMatchObject({ calls: 1, failures: 1 });
    });

    it('refuses a base64 vector that is not whole float32s', async () => {
      const { embedder } = setup();
      const partial = Buffer.alloc(8 * 4 + 2).toString('base64');
      server.setDefault('embeddings', { body: { object: 'list', model: 'm', data: [{ object: 'embedding', index: 0, embedding: partial }], usage: { prompt_tokens: 1, total_tokens: 1 } } });

      const error = await failure(embedder.embed(['text 1']));

      expect(error.code).toBe('upstream_unavailable');
      expect(error.message).toMatch(/not whole float32s/);
    });

    it('retries embeddings on 429 like chat calls', async () => {
      const { embedder } = setup();
      server.script(errorResponse(429, { 'retry-after-ms': '20' }));
      server.setDefault('embeddings', embeddings({ vectorFor: indexed }));
      await expect(embedder.embed(['text 3'])).resolves.toEqual([indexed('text 3')]);
      expect(server.requests).toHaveLength(2);
    });
  });

  it('meters calls and tokens per operation across chat and embeddings', async () => {
    const { chat, embedder, meter } = setup();
    server.setDefault('chat', chatCompletion({ content: metadata, usage: { prompt_tokens: 10, completion_tokens: 3 } }));
    server.setDefault('embeddings', embeddings());
    await chat.run('windowMetadata', metadataInput);
    await chat.run('windowMetadata', metadataInput);
    await embedder.embed(['abcd', 'efgh']);

    const totals = meter.snapshot();
    expect(Object.keys(totals).sort()).toEqual(['embed', 'windowMetadata']);
    expect(totals.windowMetadata).toMatchObject({ calls: 2, failures: 0, inputTokens: 20, outputTokens: 6 });
    expect(totals.embed).toMatchObject({ calls: 1, failures: 0, inputTokens: 2, outputTokens: 0 });
    expect(totals.windowMetadata!.totalLatencyMs).toBeGreaterThanOrEqual(0);
  });
});

describe('Azure OpenAI with Entra ID', () => {
  it('sends a bearer token from the token provider instead of an api-key', async () => {
    const meter = new UsageMeter();
    const { embedder } = createOpenAIModels(
      {
        ...FAST,
        provider: 'azure-openai',
        endpoint: server.url,
        apiVersion: '2024-10-21',
        deployments: { chat: 'c', mini: 'm', embeddings: 'e' },
        azureTokenProvider: async () => 'entra-token',
      },
      meter,
    );
    server.setDefault('embeddings', embeddings());
    await embedder.embed(['hello']);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer entra-token');
    expect(server.requests[0]?.headers['api-key']).toBeUndefined();
  });
});

describe('openAIOptionsFromSettings', () => {
  it('maps Azure settings, with identity when no key is set', () => {
    const options = openAIOptionsFromSettings(
      loadSettings({ MODEL_PROVIDER: 'azure-openai', AZURE_OPENAI_ENDPOINT: 'https://x.openai.azure.com', EMBEDDING_DIMENSIONS: '1536', MODEL_MAX_RETRIES: '3' }),
    );
    expect(options).toEqual({
      provider: 'azure-openai',
      endpoint: 'https://x.openai.azure.com',
      apiVersion: '2024-10-21',
      deployments: { chat: 'chat', mini: 'mini', embeddings: 'embeddings' },
      dimensions: 1536,
      timeoutMs: 30_000,
      maxRetries: 3,
    });
  });

  it('maps OpenAI-compatible settings', () => {
    const options = openAIOptionsFromSettings(loadSettings({ MODEL_PROVIDER: 'openai', OPENAI_API_KEY: 'sk-x', OPENAI_BASE_URL: 'http://localhost:11434/v1' }));
    expect(options).toMatchObject({ provider: 'openai', baseURL: 'http://localhost:11434/v1', apiKey: 'sk-x', models: { chat: 'gpt-4o', mini: 'gpt-4o-mini', embeddings: 'text-embedding-3-small' } });
  });

  it('names the missing setting', () => {
    expect(() => openAIOptionsFromSettings(loadSettings({ MODEL_PROVIDER: 'azure-openai' }))).toThrow(/AZURE_OPENAI_ENDPOINT/);
    expect(() => openAIOptionsFromSettings(loadSettings({ MODEL_PROVIDER: 'openai' }))).toThrow(/OPENAI_API_KEY/);
    expect(() => openAIOptionsFromSettings(loadSettings({ MODEL_PROVIDER: 'local' }))).toThrow(/MODEL_PROVIDER=local/);
  });
});
