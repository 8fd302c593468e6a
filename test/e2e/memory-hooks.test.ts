import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool as agentTool } from '@openai/agents';
import { generateText, isStepCount, streamText, tool, wrapLanguageModel } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryMiddleware } from '../../shared/client/ai-sdk.js';
import { MemoryClient } from '../../shared/client/index.js';
import { MemoryServiceSession } from '../../shared/client/openai-agents.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';
import { chatCompletionsModel } from '../support/ai-sdk-test-model.js';
import { chatCompletion, startOpenAITestServer, type OpenAITestServer, type RecordedRequest } from '../support/openai-test-server.js';

// The memory hooks over real HTTP: the local host is the memory service, the scripted OpenAI-compatible server is the
// agent's model, and every model request it records is what the agent's model would have seen.

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-e2e-hooks-'));
let host: Host;
let server: OpenAITestServer;
let client: MemoryClient;

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  host = await startLocalHost({ port: 0, timers: false, durable: { delayScale: 0 } });
  server = await startOpenAITestServer();
  client = new MemoryClient({ baseUrl: host.url });
  setTracingDisabled(true);
});
afterAll(async () => {
  await server?.close();
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const systemText = (request: RecordedRequest) =>
  (request.body.messages as { role: string; content: string | null }[]).filter((m) => m.role === 'system').map((m) => m.content ?? '').join('\n');

async function endAndWait(userId: string, sessionId: string) {
  const { operationId } = await client.endSession(userId, sessionId);
  const done = await client.waitForOperation(operationId, { intervalMs: 50 });
  expect(done).toMatchObject({ status: 'completed' });
}

describe('AI SDK memory middleware', () => {
  const userId = 'hooks-ai-sdk';

  it('session 1 stores user, tool-call, tool and assistant turns; session 2 request carries what session 1 taught', async () => {
    server.reset();
    const model = chatCompletionsModel(server.baseURL);
    const remembered = wrapLanguageModel({ model, middleware: memoryMiddleware({ client, userId, sessionId: 'ai-1' }) });
    server.script(
      chatCompletion({ toolCalls: [{ id: 'call_1', name: 'lookup_breed', arguments: { name: 'Biscuit' } }] }),
      chatCompletion({ content: 'Biscuit sounds like a lovely beagle.' }),
    );
    const first = await generateText({
      model: remembered,
      system: 'You are a helpful assistant.',
      prompt: 'My dog is named Biscuit and he loves the beach.',
      tools: { lookup_breed: tool({ description: 'Looks up a dog breed', inputSchema: z.object({ name: z.string() }), execute: async () => ({ breed: 'beagle' }) }) },
      stopWhen: isStepCount(2),
    });
    expect(first.text).toBe('Biscuit sounds like a lovely beagle.');

    const stored = await client.getMessages(userId, 'ai-1', { format: 'raw' });
    expect(stored.turns.map((t) => [t.role, t.content])).toEqual([
      ['user', 'My dog is named Biscuit and he loves the beach.'],
      ['assistant', ''],
      ['tool', '{"breed":"beagle"}'],
      ['assistant', 'Biscuit sounds like a lovely beagle.'],
    ]);
    expect(stored.turns[1]!.toolCalls).toEqual([{ id: 'call_1', type: 'function', function: { name: 'lookup_breed', arguments: '{"name":"Biscuit"}' } }]);
    expect(stored.turns[2]).toMatchObject({ toolCallId: 'call_1', name: 'lookup_breed' });
    // The caller's own system prompt is not a turn; a user with no memory yet gets no memory block, and the second
    // step's request kept the caller's messages as they were.
    const secondStep = server.requests[1]!.body.messages as { role: string }[];
    expect(secondStep.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);

    await endAndWait(userId, 'ai-1');

    server.reset();
    server.script(chatCompletion({ content: 'Your dog is Biscuit.' }));
    const next = wrapLanguageModel({ model, middleware: memoryMiddleware({ client, userId, sessionId: 'ai-2', facts: true }) });
    const answer = streamText({ model: next, prompt: "What is my dog's name?" });
    expect(await answer.text).toBe('Your dog is Biscuit.');
    expect(server.requests).toHaveLength(1);
    const system = systemText(server.requests[0]!);
    expect(system).toContain('Biscuit');
    expect(system).toContain('### Recent sessions');
    expect(system).toContain('### Relevant facts from earlier conversations');
    // The streamed answer was stored after the stream ended.
    const second = await client.getMessages(userId, 'ai-2', { format: 'raw' });
    expect(second.turns.map((t) => [t.role, t.content])).toEqual([
      ['user', "What is my dog's name?"],
      ['assistant', 'Your dog is Biscuit.'],
    ]);
  });
});

describe('OpenAI Agents SDK memory session', () => {
  const userId = 'hooks-agents';

  it('session 1 stores the run as turns; session 2 request carries what session 1 taught', async () => {
    server.reset();
    const openai = new OpenAI({ baseURL: server.baseURL, apiKey: 'test-key', maxRetries: 0 });
    const agent = new Agent({
      name: 'assistant',
      instructions: 'You are a helpful assistant.',
      // @openai/agents-openai brings its own copy of the `openai` SDK: the same client API, a different class identity.
      model: new OpenAIChatCompletionsModel(openai as unknown as ConstructorParameters<typeof OpenAIChatCompletionsModel>[0], 'test-model'),
      tools: [agentTool({ name: 'lookup_breed', description: 'Looks up a dog breed', parameters: z.object({ name: z.string() }), execute: async () => 'beagle' })],
    });

    const first = new MemoryServiceSession({ client, userId, sessionId: 'ag-1' });
    server.script(
      chatCompletion({ toolCalls: [{ id: 'call_1', name: 'lookup_breed', arguments: { name: 'Biscuit' } }] }),
      chatCompletion({ content: 'Biscuit sounds like a lovely beagle.' }),
    );
    const result = await run(agent, 'My dog is named Biscuit and he loves the beach.', { session: first, sessionInputCallback: first.inputCallback });
    expect(result.finalOutput).toBe('Biscuit sounds like a lovely beagle.');
    const stored = await client.getMessages(userId, 'ag-1', { format: 'raw' });
    expect(stored.turns.map((t) => [t.role, t.content])).toEqual([
      ['user', 'My dog is named Biscuit and he loves the beach.'],
      ['assistant', ''],
      ['tool', 'beagle'],
      ['assistant', 'Biscuit sounds like a lovely beagle.'],
    ]);
    expect(stored.turns[1]!.toolCalls?.map((c) => c.function.name)).toEqual(['lookup_breed']);
    expect(stored.turns[2]).toMatchObject({ toolCallId: 'call_1', name: 'lookup_breed' });

    // The session's history comes back from the service with its structure (what the next run of ag-1 would send).
    const items = await first.getItems();
    expect(items.map((i) => ('type' in i && i.type !== 'message' ? i.type : (i as { role: string }).role))).toEqual(['user', 'function_call', 'function_call_result', 'assistant']);

    await endAndWait(userId, 'ag-1');

    server.reset();
    const second = new MemoryServiceSession({ client, userId, sessionId: 'ag-2', facts: true });
    server.script(chatCompletion({ content: 'Your dog is Biscuit.' }));
    await run(agent, "What is my dog's name?", { session: second, sessionInputCallback: second.inputCallback });
    expect(server.requests).toHaveLength(1);
    const system = systemText(server.requests[0]!);
    expect(system).toContain('Biscuit');
    expect(system).toContain('### Recent sessions');
    const again = await client.getMessages(userId, 'ag-2', { format: 'raw' });
    expect(again.turns.map((t) => [t.role, t.content])).toEqual([
      ['user', "What is my dog's name?"],
      ['assistant', 'Your dog is Biscuit.'],
    ]);
  });
});

describe('README quick start', () => {
  it('runs as written (the README block and this copy agree, but for the import and the base URL)', async () => {
    const baseUrl = host.url;
    // README quick start: begin
    const memory = new MemoryClient({ baseUrl });
    await memory.appendTurns('alice', 's1', [
      { role: 'user', content: 'I am 45 and want to retire at 60.' },
      { role: 'assistant', content: 'Then let us look at your savings rate.' },
    ]);
    const context = await memory.getContext('alice', 's1', { maxTokens: 2000 });
    const system = { role: 'system', content: context.text }; // in front of the next model call
    const { operationId } = await memory.endSession('alice', 's1');
    const ended = await memory.waitForOperation(operationId); // summary and insights written
    // README quick start: end
    expect(system.content).toContain('I am 45 and want to retire at 60.');
    expect(ended).toMatchObject({ status: 'completed', name: 'orch-session-end' });
    expect((await memory.getSession('alice', 's1')).status).toBe('completed');

    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /<!-- quick start:[^\n]*-->\n```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the README has a quick start block').toBeDefined();
    const copy = /\/\/ README quick start: begin\n([\s\S]*?)\s*\/\/ README quick start: end/.exec(readFileSync(new URL(import.meta.url), 'utf8'))![1]!;
    const expected = block!.replace("import { MemoryClient } from 'agent-memory-service/client';\n\n", '').replace("baseUrl: 'http://127.0.0.1:7071/api'", 'baseUrl').trim();
    expect(copy.split('\n').map((l) => l.replace(/^ {4}/, '')).join('\n').trim()).toBe(expected);
  });
});
