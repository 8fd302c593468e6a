import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as projectHandler } from '../../../functions/cosmos-events-project.js';
import { handler as projectionQueueHandler } from '../../../functions/timer-projection-queue.js';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as messagesHandler } from '../../../functions/http-session-messages.js';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { retrieveMemory } from '../../../shared/application/artifacts.js';
import { searchFacts } from '../../../shared/application/search-facts.js';
import { GetMemoryQuery } from '../../../shared/contracts/artifacts.js';
import type { ContextResponse } from '../../../shared/contracts/context.js';
import type { OpenAIMessage } from '../../../shared/contracts/messages.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// OpenAI-shaped threads go in through the append route and come back from /messages as the API takes them.

let runtime: Runtime;
beforeAll(async () => {
  runtime = await memoryRuntime();
});
afterAll(() => runtime.close());

let n = 0;
const fresh = () => ({ userId: `msg-user-${++n}`, sessionId: 'thread-1' });
type Key = ReturnType<typeof fresh>;

const toTurn = (m: OpenAIMessage) => ({
  role: m.role,
  content: m.content,
  ...(m.name && { name: m.name }),
  ...(m.tool_calls && { toolCalls: m.tool_calls }),
  ...(m.tool_call_id && { toolCallId: m.tool_call_id }),
});
const append = (key: Key, turns: object[]) =>
  appendHandler(request('POST', `v1/users/${key.userId}/sessions/${key.sessionId}/turns`, { params: key, body: { turns } }), context('http-turns-append'));
const messages = (key: Key, query = '') =>
  messagesHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/messages${query}`, { params: key }), context('http-session-messages'));

const PLACEHOLDER = /^\[MemoryRef: (turn-[0-9a-f]{24}) - .+ - \d+ tokens\]$/s;
const call = (id: string, name = 'lookup') => ({ id, type: 'function' as const, function: { name, arguments: '{"q":"rates"}' } });

// --- random OpenAI threads ---------------------------------------------------------------------------------------
const word = fc.constantFrom('rates', 'loan', 'Lisbon', 'tomorrow', 'yes', 'the', 'budget', '42', 'über', '😀', '{', '"quoted"', '\n');
const text = fc.array(word, { minLength: 1, maxLength: 12 }).map((ws) => ws.join(' ')).filter((s) => s.trim().length > 0);
/** A tool output well over OFFLOAD_THRESHOLD_TOKENS (500): offloaded at append. */
const large = fc.nat({ max: 1000 }).map((seed) => JSON.stringify(Array.from({ length: 150 }, (_, i) => ({ row: seed + i, status: i % 3 ? 'ok' : 'late' }))));
const toolName = fc.constantFrom('lookup', 'get_weather', 'search_db');
const args = fc.dictionary(fc.constantFrom('q', 'city', 'limit'), fc.oneof(text, fc.integer()), { maxKeys: 3 }).map((o) => JSON.stringify(o));
const name = fc.option(fc.constantFrom('planner', 'alice'), { nil: undefined });

type Block = (nextId: () => string) => OpenAIMessage[];
const block: fc.Arbitrary<Block> = fc.oneof(
  fc.record({ content: text, name }).map(({ content, name }): Block => () => [{ role: 'user', content, ...(name && { name }) }]),
  text.map((content): Block => () => [{ role: 'system', content }]),
  fc.record({ content: text, name }).map(({ content, name }): Block => () => [{ role: 'assistant', content, ...(name && { name }) }]),
  fc
    .record({
      content: fc.option(text, { nil: null, freq: 3 }),
      calls: fc.array(fc.record({ tool: toolName, args, output: fc.oneof({ weight: 3, arbitrary: text }, { weight: 1, arbitrary: large }) }), { minLength: 1, maxLength: 3 }),
    })
    .map(({ content, calls }): Block => (nextId) => {
      const ids = calls.map(() => nextId());
      return [
        { role: 'assistant', content, tool_calls: calls.map((c, i) => ({ id: ids[i]!, type: 'function', function: { name: c.tool, arguments: c.args } })) },
        ...calls.map((c, i): OpenAIMessage => ({ role: 'tool', content: c.output, name: c.tool, tool_call_id: ids[i]! })),
      ];
    }),
);
const thread = fc.array(block, { minLength: 1, maxLength: 10 }).map((blocks) => {
  let id = 0;
  return blocks.flatMap((b) => b(() => `call_${++id}`));
});

describe('GET /messages (format=openai)', () => {
  it('property: a random OpenAI thread appended over HTTP comes back unchanged, large tool outputs as their MemoryRef placeholders', async () => {
    await fc.assert(
      fc.asyncProperty(thread, async (sent) => {
        const key = fresh();
        expect((await append(key, sent.map(toTurn))).status).toBe(202);
        // Nothing is projected here, so no summary covers a turn: the whole thread is the verbatim part.
        const res = await messages(key);
        expect(res.status).toBe(200);
        const back = json(res).messages as OpenAIMessage[];
        const offloaded = (m: OpenAIMessage) => m.role === 'tool' && (m.content ?? '').length > 2000;
        expect(back).toEqual(sent.map((m) => (offloaded(m) ? { ...m, content: expect.stringMatching(PLACEHOLDER) } : m)));
        // Each placeholder's key gives the full output back.
        for (const [i, m] of sent.entries()) {
          if (!offloaded(m)) continue;
          const memoryKey = PLACEHOLDER.exec(back[i]!.content!)![1]!;
          expect((await retrieveMemory(runtime, { userId: key.userId }, memoryKey, GetMemoryQuery.parse({}))).content).toBe(m.content);
        }
      }),
      { numRuns: 50 },
    );
  }, 120_000);

  it('given a verbatim part that opens with tool results, puts the call that made them back in front', async () => {
    const key = fresh();
    const sent: OpenAIMessage[] = [
      ...Array.from({ length: 9 }, (_, i): OpenAIMessage => ({ role: i % 2 ? 'assistant' : 'user', content: `Message ${i + 1} about the Lisbon trip budget.` })),
      { role: 'assistant', content: null, tool_calls: [call('c1'), call('c2', 'fx')] },
      { role: 'tool', content: 'Rates are 4%.', name: 'lookup', tool_call_id: 'c1' },
      { role: 'tool', content: 'EUR 1 = USD 1.08', name: 'fx', tool_call_id: 'c2' },
      ...Array.from({ length: 5 }, (_, i): OpenAIMessage => ({ role: i % 2 ? 'user' : 'assistant', content: `Follow-up ${i + 1}.` })),
    ];
    await append(key, sent.map(toTurn));
    const { events } = await runtime.changeFeed!.readFeed(null, 100_000);
    await projectHandler(events.filter((e) => (e as { metadata?: { userId?: string } }).metadata?.userId === key.userId), context('cosmos-events-project'));
    await projectionQueueHandler({} as never, context('timer-projection-queue')); // the window the feed left queued

    // The first window (turns 1–10, the call included) is summarised: the context's verbatim part opens with the results.
    const ctx = json(await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context`, { params: key }), context('http-context-get'))) as unknown as ContextResponse;
    expect(ctx.summaryCoversThroughSeq).toBe(10);
    expect(ctx.sections.turns[0]).toMatchObject({ seq: 11, role: 'tool', toolCallId: 'c1', name: 'lookup' });
    const back = json(await messages(key));
    expect(back.summaryCoversThroughSeq).toBe(10);
    expect(back.messages).toEqual(sent.slice(9));
  }, 60_000);

  it('answers 404 for an unknown session and 400 for an unknown format', async () => {
    expect((await messages(fresh())).status).toBe(404);
    const key = fresh();
    await append(key, [{ role: 'user', content: 'hi' }]);
    const bad = await messages(key, '?format=xml');
    expect(bad.status).toBe(400);
    expect(json(bad)).toMatchObject({ code: 'validation_failed' });
  });
});

describe('null content', () => {
  it('is accepted (202) on an assistant turn of only tool calls, stored as "", and shown compactly in the context', async () => {
    const key = fresh();
    const res = await append(key, [{ role: 'user', content: 'What are the rates?' }, { role: 'assistant', content: null, toolCalls: [call('c1')] }]);
    expect(res.status).toBe(202);
    const [, stored] = await runtime.events.read(key, 0);
    expect(stored).toMatchObject({ type: 'TurnAppended', data: { role: 'assistant', content: '', toolCalls: [call('c1')] } });
    const ctx = json(await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context`, { params: key }), context('http-context-get'))) as unknown as ContextResponse;
    expect(ctx.text).toContain('assistant: [tool calls: lookup({"q":"rates"})]');
    expect(ctx.sections.turns[1]).toMatchObject({ content: '', toolCalls: [call('c1')] });
  });

  it('is indexed for search by its tool calls', async () => {
    const key = fresh();
    await append(key, [
      { role: 'user', content: 'Will I need a coat?', turnId: 'q' },
      { role: 'assistant', content: null, turnId: 'call', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Reykjavik"}' } }] },
    ]);
    const { events } = await runtime.changeFeed!.readFeed(null, 100_000);
    await projectHandler(events.filter((e) => (e as { metadata?: { userId?: string } }).metadata?.userId === key.userId), context('cosmos-events-project'));
    const found = await searchFacts(runtime, key.userId, { query: 'Reykjavik', sources: ['turns'], retrievers: ['fulltext'], mode: 'search' });
    expect(found.facts.map((f) => [f.turnIds, f.text])).toEqual([[['call'], 'assistant: get_weather({"city":"Reykjavik"})']]);
  }, 60_000);

  it('is refused (400) on a user turn, and nothing is written', async () => {
    const key = fresh();
    const res = await append(key, [{ role: 'user', content: null, toolCalls: [call('c1')] }]);
    expect(res.status).toBe(400);
    expect((json(res).errors as { path: string }[]).map((e) => e.path)).toEqual(['body.turns.0.content']);
    expect(await runtime.events.lastSeq(key)).toBe(0);
  });
});

describe('GET /messages?format=raw', () => {
  it('returns the stored turns: seq, turnId, tool structure, and the memoryRef of an offloaded output', async () => {
    const key = fresh();
    const output = 'row '.repeat(2000);
    await append(key, [
      { role: 'user', content: 'Export the table.', turnId: 'u1', agentId: 'planner' },
      { role: 'assistant', content: null, turnId: 'a1', agentId: 'planner', toolCalls: [call('c1', 'export')] },
      { role: 'tool', content: output, turnId: 'r1', name: 'export', toolCallId: 'c1', timestamp: '2026-03-01T10:00:00Z' },
    ]);
    const res = await messages(key, '?format=raw&agentId=planner');
    expect(res.status).toBe(200);
    const body = json(res);
    expect(body).toMatchObject({ userId: key.userId, sessionId: key.sessionId, agentId: 'planner', format: 'raw', summaryCoversThroughSeq: 0 });
    const turns = body.turns as Record<string, unknown>[];
    expect(turns.map((t) => [t.seq, t.turnId, t.role])).toEqual([[1, 'u1', 'user'], [2, 'a1', 'assistant'], [3, 'r1', 'tool']]);
    expect(turns[1]).toMatchObject({ content: '', agentId: 'planner', toolCalls: [call('c1', 'export')] });
    // Shown in full in the context (first use: no assistant turn answered it yet), but raw is what is stored.
    const memoryRef = turns[2]!.memoryRef as { key: string; tokens: number };
    expect(turns[2]).toMatchObject({ name: 'export', toolCallId: 'c1', timestamp: '2026-03-01T10:00:00.000Z', content: expect.stringMatching(PLACEHOLDER) });
    expect(memoryRef.tokens).toBeGreaterThan(500);
    expect(turns[2]!.content).toContain(memoryRef.key);
  });
});
