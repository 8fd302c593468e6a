import { describe, expect, it } from 'vitest';
import { memoryMiddleware } from '../../../shared/client/ai-sdk.js';
import { MemoryClient, MemoryServiceError, type ContextResponse, type TurnInput } from '../../../shared/client/index.js';
import { MemoryServiceSession } from '../../../shared/client/openai-agents.js';

// The hooks against a small fake of the service behind a fetch: what they append, and what they put in the prompt.

interface FakeService {
  appended: TurnInput[][];
  client: MemoryClient;
  /** The session's context; null: 404 (a session the service does not know). */
  context: ContextResponse | null;
  down: boolean;
  /** The seq of the last event: the next appended turn gets the one after it. */
  seq: number;
}

function fakeService(): FakeService {
  const state: FakeService = { appended: [], context: null, down: false, seq: 0, client: undefined as unknown as MemoryClient };
  const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (state.down) throw new TypeError('fetch failed');
    const url = new URL(String(input));
    if (url.pathname.endsWith('/turns')) {
      const { turns } = JSON.parse(String(init?.body)) as { turns: TurnInput[] };
      state.appended.push(turns);
      return json(202, { accepted: turns.map((t) => ({ turnId: t.turnId, seq: ++state.seq })) });
    }
    if (url.pathname.endsWith('/context')) return state.context ? json(200, state.context) : json(404, { type: 'x', title: 'Not found', status: 404, code: 'not_found' });
    if (url.pathname.endsWith('/facts/search')) return json(200, { facts: [{ id: 'f1', source: 'turns', text: 'My dog is named Biscuit.', score: 1, turnIds: [], timestamp: '2026-01-01T00:00:00.000Z', tokens: 6 }], tokens: 6 });
    return json(404, { type: 'x', title: 'Not found', status: 404, code: 'not_found' });
  };
  state.client = new MemoryClient({ baseUrl: 'http://memory.test/api', fetch: fetch as typeof globalThis.fetch, retry: { maxAttempts: 1 } });
  return state;
}

const turn = (seq: number, role: 'user' | 'assistant', content: string) => ({ seq, turnId: `t${seq}`, role, content, timestamp: '2026-01-01T00:00:00.000Z' });
const context = (turns: ReturnType<typeof turn>[]): ContextResponse => ({
  userId: 'u',
  sessionId: 's',
  text: '',
  sections: { profile: 'Owns a beagle.', recentSessions: [{ sessionId: 's0', endedAt: '2026-01-01T00:00:00.000Z', summary: 'Talked about Biscuit.' }], summary: 'Earlier: budgeting.', turns },
  summaryCoversThroughSeq: 0,
  tokens: 10,
  memoryRefs: [],
});

type Middleware = ReturnType<typeof memoryMiddleware>;
type Params = Parameters<NonNullable<Middleware['transformParams']>>[0]['params'];
const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
const params = (prompt: Params['prompt']) => ({ prompt }) as Params;
const transform = (m: Middleware, p: Params) => m.transformParams!({ type: 'generate', params: p, model: undefined as never });
const blockOf = (p: Params) => p.prompt.filter((m) => m.role === 'system').map((m) => m.content as string).find((c) => c.startsWith('## Memory')) ?? null;

describe('AI SDK memory middleware', () => {
  it('a prompt with only the new message: appends it first, and the block shows the earlier turns but not the new one', async () => {
    const service = fakeService();
    const m = memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's' });
    service.seq = 2; // the session holds two turns; the new one gets seq 3
    service.context = context([turn(1, 'user', 'earlier question'), turn(2, 'assistant', 'earlier answer'), turn(3, 'user', 'new question')]);
    const out = await transform(m, params([{ role: 'system', content: 'Be brief.' }, user('new question')]));
    expect(service.appended).toEqual([[expect.objectContaining({ role: 'user', content: 'new question' })]]);
    expect(out.prompt.map((p) => p.role)).toEqual(['system', 'system', 'user']);
    expect(out.prompt[0]).toEqual({ role: 'system', content: 'Be brief.' });
    const block = blockOf(out)!;
    expect(block).toContain('Owns a beagle.');
    expect(block).toContain('Talked about Biscuit.');
    expect(block).toContain('### Recent turns\nuser: earlier question\nassistant: earlier answer');
    expect(block).not.toContain('new question');
  });

  it('a prompt that carries the conversation: appends only what follows the last assistant message, and the block has no verbatim turns', async () => {
    const service = fakeService();
    service.context = context([turn(5, 'user', 'older'), turn(6, 'assistant', 'reply')]);
    const m = memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's', agentId: 'planner' });
    const out = await transform(m, params([user('older'), { role: 'assistant', content: [{ type: 'text', text: 'reply' }] }, user('and now?')]));
    expect(service.appended).toEqual([[expect.objectContaining({ role: 'user', content: 'and now?', agentId: 'planner' })]]);
    expect(blockOf(out)).not.toContain('Recent turns');
    expect(out.prompt.map((p) => p.role)).toEqual(['system', 'user', 'assistant', 'user']);
  });

  it('with facts on, the block lists the top facts for the last user message', async () => {
    const service = fakeService();
    const m = memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's', facts: { topK: 3 } });
    const out = await transform(m, params([user("What is my dog's name?")]));
    expect(blockOf(out)).toContain('- My dog is named Biscuit.');
  });

  it('stores the answer after the call: text, or tool calls with content null', async () => {
    const service = fakeService();
    const m = memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's' });
    const result = { content: [{ type: 'tool-call' as const, toolCallId: 'call_1', toolName: 'lookup', input: '{"q":1}' }], finishReason: { unified: 'tool-calls' as const, raw: undefined }, usage: {} };
    await m.wrapGenerate!({ doGenerate: async () => result as never, doStream: async () => ({}) as never, params: params([]), model: undefined as never });
    expect(service.appended).toEqual([[{ role: 'assistant', content: null, toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }], turnId: expect.any(String) }]]);
  });

  it('a stream stores its text when it ends, and nothing when it ended in an error', async () => {
    for (const [parts, stored] of [
      [[{ type: 'text-delta', id: 'a', delta: 'Hel' }, { type: 'text-delta', id: 'a', delta: 'lo' }], [['Hello']]],
      [[{ type: 'text-delta', id: 'a', delta: 'Hel' }, { type: 'error', error: new Error('cut') }], []],
    ] as const) {
      const service = fakeService();
      const m = memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's' });
      const stream = new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) });
      const out = await m.wrapStream!({ doGenerate: async () => ({}) as never, doStream: async () => ({ stream }) as never, params: params([]), model: undefined as never });
      const seen: unknown[] = [];
      for await (const part of out.stream as unknown as AsyncIterable<unknown>) seen.push(part);
      expect(seen).toEqual(parts);
      expect(service.appended.map((batch) => batch.map((t) => t.content))).toEqual(stored);
    }
  });

  it('a memory failure fails the call, unless onError takes it: then the call goes on with its prompt unchanged', async () => {
    const service = fakeService();
    service.down = true;
    const p = params([user('hi')]);
    await expect(transform(memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's' }), p)).rejects.toBeInstanceOf(MemoryServiceError);
    const phases: string[] = [];
    const out = await transform(memoryMiddleware({ client: service.client, userId: 'u', sessionId: 's', onError: (_e, phase) => phases.push(phase) }), p);
    expect(out).toBe(p);
    expect(phases).toEqual(['write', 'read']);
  });
});

describe('OpenAI Agents SDK memory session', () => {
  it('addItems: a function call joins the assistant turn before it, a result is a tool turn, system items are not turns', async () => {
    const service = fakeService();
    const session = new MemoryServiceSession({ client: service.client, userId: 'u', sessionId: 's' });
    await session.addItems([
      { role: 'system', content: 'instructions' },
      { role: 'user', content: [{ type: 'input_text', text: 'weather?' }] },
      { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Let me check.' }] },
      { type: 'function_call', callId: 'call_1', name: 'weather', arguments: '{}' },
      { type: 'function_call_result', callId: 'call_1', name: 'weather', status: 'completed', output: { type: 'text', text: 'sunny' } },
    ]);
    expect(service.appended[0]!.map(({ turnId: _, ...t }) => t)).toEqual([
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: 'Let me check.', toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }] },
      { role: 'tool', content: 'sunny', toolCallId: 'call_1', name: 'weather' },
    ]);
  });

  it('inputCallback appends the new input ahead; the runner\'s addItems of it reuses the same turn ids', async () => {
    const service = fakeService();
    const session = new MemoryServiceSession({ client: service.client, userId: 'u', sessionId: 's', facts: true });
    service.context = context([]);
    const input = [{ role: 'user' as const, content: "What is my dog's name?" }];
    const prepared = await session.inputCallback([], input);
    expect(prepared[0]).toMatchObject({ role: 'system', content: expect.stringContaining('My dog is named Biscuit.') });
    expect(prepared.slice(1)).toEqual(input);
    await session.addItems([...input, { role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Biscuit.' }] }]);
    const [ahead, after] = service.appended;
    expect(after![0]!.turnId).toBe(ahead![0]!.turnId);
    expect(after![1]).toMatchObject({ role: 'assistant', content: 'Biscuit.' });
  });

  it('getItems: an unknown session has no items; popItem is refused with one error class', async () => {
    const service = fakeService();
    const session = new MemoryServiceSession({ client: service.client, userId: 'u', sessionId: 's' });
    expect(await session.getItems()).toEqual([]);
    await expect(session.popItem()).rejects.toMatchObject({ name: 'MemoryServiceError', code: 'method_not_allowed' });
  });
});
