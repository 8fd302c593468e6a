import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as searchHandler } from '../../../functions/http-facts-search.js';
import { handler as projectHandler } from '../../../functions/cosmos-events-project.js';
import type { ChatModel, Deps } from '../../../shared/application/ports.js';
import { RETRIEVAL_TOOLS } from '../../../shared/application/prompts.js';
import { finalPrune, summariseSession } from '../../../shared/application/session-end.js';
import { SCHEMA_VERSION } from '../../../shared/contracts/events.js';
import type { Fact } from '../../../shared/contracts/facts.js';
import type { InsightDocument } from '../../../shared/contracts/insights.js';
import { newSession } from '../../../shared/domain/session.js';
import { useRuntime, type Runtime } from '../../../shared/platform/composition.js';
import { chatCompletion, embeddings, startOpenAITestServer, type OpenAITestServer, type ScriptedResponse } from '../../support/openai-test-server.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// Fact search over insights and session summaries through the HTTP handler: the search use case and the retrieval
// agent, offline (deterministic planner) and with a scripted OpenAI-compatible model calling the new tools.

type SearchResult = { facts: Fact[]; answer?: string; tokens: number; code?: string };

async function search(userId: string, body: object) {
  const res = await searchHandler(request('POST', `v1/users/${userId}/facts/search`, { params: { userId }, body }), context('http-facts-search'));
  return { status: res.status, body: json(res) as SearchResult };
}

async function insightDoc(deps: Pick<Deps, 'embedder'>, userId: string, id: string, text: string, overrides: Partial<InsightDocument> = {}): Promise<InsightDocument> {
  const [vector] = await deps.embedder.embed([text]);
  return {
    schemaVersion: SCHEMA_VERSION,
    id,
    userId,
    type: 'session',
    sessionId: 'money',
    sourceSessionIds: ['money'],
    category: 'financial_goals',
    text,
    confidence: 0.9,
    importance: 'high',
    status: 'pending',
    embeddingModel: deps.embedder.model,
    insightVector: vector!,
    createdAt: '2025-06-01T08:01:00.000Z',
    updatedAt: '2025-06-01T08:01:00.000Z',
    ...overrides,
  };
}

describe('http-facts-search over insights and session summaries (offline models)', () => {
  let runtime: Runtime;
  const userId = 'reflective';
  const turns = [
    ['money', 'user', 'I want to retire at 60 and my pension savings feel too small.', '2025-06-01T08:00:00Z', 'advisor'],
    ['money', 'assistant', 'Raising your monthly pension contribution would help you retire at 60.', '2025-06-01T08:00:05Z', 'advisor'],
    ['money', 'user', 'My mortgage rate resets next year as well.', '2025-06-01T08:00:10Z', 'advisor'],
    ['trip', 'user', 'We are flying to Lisbon in July for a conference.', '2025-07-01T09:00:00Z', 'travel'],
    ['trip', 'assistant', 'Lisbon in July is lovely; book the hotel early.', '2025-07-01T09:00:05Z', 'travel'],
  ] as const;

  beforeAll(async () => {
    runtime = await memoryRuntime();
    for (const [sessionId, role, content, timestamp, agentId] of turns) {
      const params = { userId, sessionId };
      const turn = { role, content, timestamp, agentId, turnId: `${sessionId}-${role}-${timestamp.slice(-3, -1)}` };
      await appendHandler(request('POST', `v1/users/${userId}/sessions/${sessionId}/turns`, { params, body: { turns: [turn] } }), context('http-turns-append'));
    }
    await projectHandler((await runtime.changeFeed!.readFeed(null, 1000)).events, context('cosmos-events-project'));
    // The session-end steps that write what these sources search: the last chunk, then the session summary.
    for (const sessionId of ['money', 'trip']) {
      await finalPrune(runtime, { userId, sessionId });
      await summariseSession(runtime, { userId, sessionId });
    }
    await runtime.insights.upsert([
      await insightDoc(runtime, userId, 'ins-retire', 'The user wants to retire at 60 and is worried that their pension savings are too small.'),
      await insightDoc(runtime, userId, 'ins-retire-old', 'The user wants to retire at 55 with their pension savings.', { status: 'superseded', supersededBy: 'ins-retire' }),
      await insightDoc(runtime, userId, 'ins-retire-dup', 'The user wants to retire at 60 with pension savings.', { status: 'merged', mergedInto: 'ins-retire' }),
      await insightDoc(runtime, userId, 'ins-lisbon', 'The user is travelling to Lisbon in July for a conference.', { sessionId: 'trip', sourceSessionIds: ['trip'], category: 'current_situation', createdAt: '2025-07-01T09:00:05.000Z' }),
      await insightDoc(runtime, userId, 'ins-both', 'The user plans big expenses: retirement at 60 and travel.', { type: 'aggregate', sourceSessionIds: ['money', 'trip'], createdAt: '2025-07-01T09:00:05.000Z' }),
    ]);
  }, 120_000);
  afterAll(() => runtime.close());

  it('searches every source by default: insight and session-summary facts carry their session, seq range, time and no turn ids', async () => {
    const { status, body } = await search(userId, { query: 'When does the user want to retire, and are their pension savings enough?', topK: 20 });
    expect(status).toBe(200);
    const sources = new Set(body.facts.map((f) => f.source));
    expect(sources).toEqual(new Set(['turns', 'interactions', 'insights', 'sessionSummaries']));
    expect(body.facts.find((f) => f.id === 'insight:ins-retire')).toMatchObject({
      source: 'insights',
      text: 'The user wants to retire at 60 and is worried that their pension savings are too small.',
      sessionId: 'money',
      turnIds: [],
      seqRange: [1, 3],
      timestamp: '2025-06-01T08:01:00.000Z',
    });
    const summary = body.facts.find((f) => f.id === 'summary:money');
    expect(summary).toMatchObject({ source: 'sessionSummaries', sessionId: 'money', agentId: 'advisor', turnIds: [], seqRange: [1, 3], timestamp: '2025-06-01T08:00:00.000Z' });
    expect(summary!.text).toBe((await runtime.sessions.get({ userId, sessionId: 'money' }))!.doc.summary);
    expect(summary!.tokens).toBeGreaterThan(0);
    // An aggregate insight names its sessions and has no single seq range.
    const aggregate = body.facts.find((f) => f.id === 'insight:ins-both');
    expect(aggregate).toMatchObject({ sessionId: 'money', sessionIds: ['money', 'trip'], turnIds: [] });
    expect(aggregate).not.toHaveProperty('seqRange');
  });

  it('never returns superseded or merged insights', async () => {
    // Every live insight comes back (the vector ranking lists them all), the superseded and merged ones never.
    const { body } = await search(userId, { query: 'retire at 55 or 60 with pension savings', sources: ['insights'], topK: 20 });
    expect(body.facts.map((f) => f.id).sort()).toEqual(['insight:ins-both', 'insight:ins-lisbon', 'insight:ins-retire']);
    expect(body.facts[0]!.id).toBe('insight:ins-retire');
  });

  it('honours sources, filters, topK, minScore and maxTokens for the new sources', async () => {
    const only = async (extra: object) => (await search(userId, { query: 'retire pension Lisbon conference travel', topK: 20, ...extra })).body.facts;
    expect((await only({ sources: ['sessionSummaries'] })).map((f) => f.id).sort()).toEqual(['summary:money', 'summary:trip']);
    expect((await only({ sources: ['sessionSummaries', 'insights'], sessionId: 'trip' })).map((f) => f.id).sort()).toEqual(['insight:ins-both', 'insight:ins-lisbon', 'summary:trip']);
    expect((await only({ sources: ['sessionSummaries', 'insights'], agentId: 'advisor' })).map((f) => f.id).sort()).toEqual(['insight:ins-both', 'insight:ins-retire', 'summary:money']);
    const july = await only({ sources: ['sessionSummaries', 'insights'], from: '2025-07-01T00:00:00Z', to: '2025-07-31T23:59:59Z' });
    expect(july.map((f) => f.id).sort()).toEqual(['insight:ins-both', 'insight:ins-lisbon', 'summary:trip']);
    expect(await only({ sources: ['insights'], topK: 1 })).toHaveLength(1);
    expect((await only({ sources: ['insights', 'sessionSummaries'], minScore: 0.999 })).every((f) => f.score >= 0.999)).toBe(true);
    const budget = await search(userId, { query: 'retire pension Lisbon', sources: ['insights', 'sessionSummaries'], topK: 20, maxTokens: 30 });
    expect(budget.body.tokens).toBeLessThanOrEqual(30);
    expect(budget.body.facts.length).toBeGreaterThan(0);
    expect(await only({ sources: ['insights', 'sessionSummaries'], sessionId: 'nowhere' })).toEqual([]);
    expect((await search('someone-else', { query: 'retire pension', sources: ['insights', 'sessionSummaries'] })).body.facts).toEqual([]);
  });

  it('agent mode offline: the planner calls all three tools in its first round and answers from what they found', async () => {
    const calls: { tools: string[]; toolCalls: string[] }[] = [];
    const chat: ChatModel = {
      model: runtime.chat.model,
      run: (task, input) => runtime.chat.run(task, input),
      converse: async (req) => {
        const reply = await runtime.chat.converse(req);
        calls.push({ tools: req.tools.map((t) => t.name), toolCalls: reply.toolCalls.map((c) => c.name) });
        return reply;
      },
    };
    useRuntime({ ...runtime, chat });
    try {
      const { body } = await search(userId, { query: 'When does the user want to retire?', mode: 'agent', topK: 10 });
      expect(calls[0]).toEqual({ tools: [...RETRIEVAL_TOOLS], toolCalls: [...RETRIEVAL_TOOLS] });
      expect(calls).toHaveLength(2);
      expect(body.answer).toMatch(/retire at 60/);
      const sources = new Set(body.facts.map((f) => f.source));
      expect(sources.has('insights')).toBe(true);
      expect(sources.has('sessionSummaries')).toBe(true);
      // The facts the answer cites come first.
      const cited = [...body.answer!.matchAll(/\[([^\]\s]+)\]/g)].map((m) => m[1]);
      expect(cited.length).toBeGreaterThan(0);
      expect(body.facts[0]!.id).toBe(cited[0]);

      calls.length = 0;
      const scoped = await search(userId, { query: 'Where is the user travelling?', mode: 'agent', sources: ['insights'] });
      expect(calls[0]).toEqual({ tools: ['search_insights'], toolCalls: ['search_insights'] });
      expect(scoped.body.facts.every((f) => f.source === 'insights')).toBe(true);
      expect(scoped.body.answer).toMatch(/Lisbon/);
    } finally {
      useRuntime(runtime);
    }
  });
});

describe('http-facts-search agent mode with a scripted OpenAI-compatible model', () => {
  let server: OpenAITestServer;
  let runtime: Runtime;
  const userId = 'scripted';
  // The server's own queue answers requests of any kind in order; chat replies get their own queue, embeddings the default.
  const chatReplies: ScriptedResponse[] = [];
  const scriptChat = (...replies: ScriptedResponse[]) => void chatReplies.push(...replies);

  beforeAll(async () => {
    server = await startOpenAITestServer();
    server.setDefault('embeddings', embeddings());
    runtime = await memoryRuntime({ MODEL_PROVIDER: 'openai', OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: server.baseURL, EMBEDDING_DIMENSIONS: '8', MODEL_MAX_RETRIES: '0' });
    const [summaryVector] = await runtime.embedder.embed(['Planned retirement at 60 and a bigger pension contribution.']);
    await runtime.sessions.put(
      {
        ...newSession({ userId, sessionId: 'plan' }, new Date('2025-06-01T08:00:00Z')),
        status: 'completed',
        reflectionStatus: 'processed',
        projectedThroughSeq: 7,
        chunkedThroughSeq: 6,
        turnCount: 6,
        agentIds: ['advisor'],
        startedAt: '2025-06-01T08:00:00.000Z',
        lastTurnAt: '2025-06-01T08:10:00.000Z',
        endedAt: '2025-06-01T08:10:00.000Z',
        summary: 'Planned retirement at 60 and a bigger pension contribution.',
        keyTopics: ['retirement', 'pension'],
        summaryVector: summaryVector!,
        embeddingModel: runtime.embedder.model,
      },
      null,
    );
    await runtime.insights.upsert([await insightDoc(runtime, userId, 'ins-60', 'The user wants to retire at 60.', { sessionId: 'plan', sourceSessionIds: ['plan'] })]);
    server.reset();
    server.setDefault('embeddings', embeddings());
    server.setDefault('chat', () => chatReplies.shift() ?? { status: 418, body: { error: { message: 'unscripted chat request' } } });
  }, 60_000);
  afterAll(async () => {
    await runtime.close();
    await server.close();
  });

  it('offers the three tools, runs search_insights and search_session_summaries, and returns the cited facts with the answer', async () => {
    scriptChat(
      chatCompletion({
        toolCalls: [
          { id: 'call_a', name: 'search_insights', arguments: { query: 'retirement age', top_k: 3 } },
          { id: 'call_b', name: 'search_session_summaries', arguments: { query: 'retirement pension' } },
        ],
      }),
      chatCompletion({ content: '- Retires at 60 [insight:ins-60]\n- Discussed a bigger pension contribution [summary:plan]' }),
    );
    const { status, body } = await search(userId, { query: 'When does the user want to retire?', mode: 'agent' });
    expect(status, JSON.stringify(body)).toBe(200);
    const chats = server.requests.filter((r) => r.kind === 'chat');
    expect(chats).toHaveLength(2);
    const offered = (chats[0]!.body.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(offered).toEqual([...RETRIEVAL_TOOLS]);

    const toolMessages = (chats[1]!.body.messages as { role: string; tool_call_id?: string; content: string }[]).filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.tool_call_id)).toEqual(['call_a', 'call_b']);
    const [insights, summaries] = toolMessages.map((m) => JSON.parse(m.content) as { id: string; source: string; text: string }[]);
    expect(insights).toEqual([expect.objectContaining({ id: 'insight:ins-60', source: 'insights', text: 'The user wants to retire at 60.' })]);
    expect(summaries).toEqual([expect.objectContaining({ id: 'summary:plan', source: 'sessionSummaries' })]);

    expect(body.answer).toContain('[insight:ins-60]');
    expect(body.facts.map((f) => f.id)).toEqual(['insight:ins-60', 'summary:plan']);
    expect(body.facts[0]).toMatchObject({ sessionId: 'plan', turnIds: [], seqRange: [1, 6] });
    expect(body.facts[1]).toMatchObject({ sessionId: 'plan', agentId: 'advisor', turnIds: [], seqRange: [1, 6], timestamp: '2025-06-01T08:00:00.000Z' });
  });

  it('answers a call with bad arguments with an error message to the model instead of failing', async () => {
    scriptChat(chatCompletion({ toolCalls: [{ id: 'call_x', name: 'search_session_summaries', arguments: { top_k: 3 } }] }), chatCompletion({ content: 'No stored facts answer this.' }));
    const { body } = await search(userId, { query: 'Anything?', mode: 'agent' });
    const lastChat = server.requests.filter((r) => r.kind === 'chat').at(-1)!;
    const tool = (lastChat.body.messages as { role: string; content: string }[]).find((m) => m.role === 'tool');
    expect(JSON.parse(tool!.content)).toEqual({ error: 'invalid arguments' });
    expect(body).toMatchObject({ facts: [], answer: 'No stored facts answer this.' });
  });
});
