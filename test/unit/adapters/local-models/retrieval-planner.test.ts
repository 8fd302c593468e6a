import { describe, expect, it } from 'vitest';
import { LocalChatModel, NO_FACTS, type SentenceRanker } from '../../../../shared/adapters/local-models/index.js';
import type { ChatMessage, ModelUsage, ToolDefinition } from '../../../../shared/application/ports.js';

const queryTool = (name: string): ToolDefinition => ({
  name,
  description: `${name} over the user's memory`,
  parameters: { type: 'object', properties: { query: { type: 'string' }, topK: { type: 'integer' } }, required: ['query'] },
});
const TOOLS = [queryTool('search_interactions'), queryTool('search_insights'), queryTool('search_session_summaries')];

const QUESTION = 'What did the user say about their 401k?';
const asked: ChatMessage[] = [
  { role: 'system', content: 'You are a fact retrieval agent.' },
  { role: 'user', content: QUESTION },
];

function model(ranker?: SentenceRanker) {
  const usages: ModelUsage[] = [];
  return { chat: new LocalChatModel({ record: (u) => usages.push(u) }, ranker), usages };
}

/** The conversation after the planner's first turn, with the tools' answers. */
function withResults(results: string[], question = QUESTION): ChatMessage[] {
  const toolCalls = TOOLS.map((t, i) => ({ id: `call_${i + 1}`, name: t.name, arguments: { query: question } }));
  return [
    { role: 'system', content: 'You are a fact retrieval agent.' },
    { role: 'user', content: question },
    { role: 'assistant', content: null, toolCalls },
    ...results.map((content, i): ChatMessage => ({ role: 'tool', toolCallId: `call_${i + 1}`, content })),
  ];
}

const INTERACTIONS = JSON.stringify([
  {
    id: 'interaction:w1',
    summary: 'User: I have $200k in my 401k and a mortgage.',
    content: "user (Ana): I have $200k in my 401k and a mortgage.\nassistant: Let's review the 401k allocation next time.",
  },
  { id: 'interaction:w2', summary: 'User: We went to Lisbon in May.', content: 'user (Ana): We went to Lisbon in May.' },
]);
const INSIGHTS = JSON.stringify({ results: [{ id: 'insight:7', category: 'concern', text: 'The user is worried about inflation.' }] });

describe('LocalChatModel — converse (offline retrieval planner)', () => {
  it('given the question and no tool results yet, when asked for a turn, then calls every offered tool once with the question', async () => {
    const { chat, usages } = model();
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: asked, tools: TOOLS });
    expect(turn).toEqual({
      content: null,
      toolCalls: [
        { id: 'call_1', name: 'search_interactions', arguments: { query: QUESTION } },
        { id: 'call_2', name: 'search_insights', arguments: { query: QUESTION } },
        { id: 'call_3', name: 'search_session_summaries', arguments: { query: QUESTION } },
      ],
    });
    expect(usages).toHaveLength(1);
    expect(usages[0]).toMatchObject({ operation: 'retrieveFacts', model: 'local-extractive-v2', ok: true });
    expect(usages[0]!.inputTokens).toBeGreaterThan(0);
    expect(usages[0]!.outputTokens).toBeGreaterThan(0);
  });

  it('numbers new calls after earlier ones and fills a tool whose string argument is not called query', async () => {
    const { chat } = model();
    const lookup: ToolDefinition = { name: 'lookup', description: 'by text', parameters: { type: 'object', properties: { text: { type: 'string' } } } };
    const messages: ChatMessage[] = [
      { role: 'user', content: 'First question?' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { text: 'First question?' } }] },
      { role: 'tool', toolCallId: 'call_1', content: 'nothing' },
      { role: 'assistant', content: NO_FACTS },
      { role: 'user', content: 'Where did Ana travel?' },
    ];
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages, tools: [lookup] });
    expect(turn.toolCalls).toEqual([{ id: 'call_2', name: 'lookup', arguments: { text: 'Where did Ana travel?' } }]);
  });

  it('given tool results, when asked for a turn, then answers with the matching result sentences and their ids, and no tool calls', async () => {
    const { chat } = model();
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: withResults([INTERACTIONS, INSIGHTS, 'No session summaries.']), tools: TOOLS });
    expect(turn.toolCalls).toEqual([]);
    expect(turn.content).toBe(
      [
        'Relevant facts found in memory (quoted from the search results):',
        '- User: I have $200k in my 401k and a mortgage. [interaction:w1]',
        "- Assistant: Let's review the 401k allocation next time. [interaction:w1]",
      ].join('\n'),
    );
    expect(turn.content).not.toContain('Lisbon');
    expect(turn.content).not.toContain('inflation');
  });

  it('given tool results that share nothing with the question, then says plainly that no relevant facts were found', async () => {
    const { chat } = model();
    const turn = await chat.converse({
      operation: 'retrieveFacts',
      tier: 'mini',
      messages: withResults([INTERACTIONS, INSIGHTS, '[]'], 'Does the user have a dog?'),
      tools: TOOLS,
    });
    expect(turn).toEqual({ content: NO_FACTS, toolCalls: [] });
  });

  it('given no tools to call, then answers at once', async () => {
    const { chat } = model();
    expect(await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: asked, tools: [] })).toEqual({ content: NO_FACTS, toolCalls: [] });
  });

  it('given a ranker, then a result with no shared words but a close meaning is an answer', async () => {
    const ranker: SentenceRanker = {
      similarities: async (_query, texts) => texts.map((t) => (t.includes('puppy') ? 0.6 : 0.05)),
    };
    const { chat } = model(ranker);
    const results = JSON.stringify([{ id: 'interaction:p', summary: 'User: We just adopted a golden retriever puppy named Max.' }]);
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: withResults([results, INSIGHTS], 'Does the user have a dog?'), tools: TOOLS });
    expect(turn.content).toContain('- User: We just adopted a golden retriever puppy named Max. [interaction:p]');
    expect(turn.content).not.toContain('inflation');
  });

  it('keeps the answer bounded to five facts', async () => {
    const { chat } = model();
    const results = JSON.stringify(Array.from({ length: 20 }, (_, i) => ({ id: `insight:${i}`, text: `The 401k balance was reviewed in meeting ${i}.` })));
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: withResults([results]), tools: TOOLS });
    expect(turn.content!.split('\n').filter((l) => l.startsWith('- '))).toHaveLength(5);
    expect(turn.content!.length).toBeLessThanOrEqual(1_300);
  });

  it('given the three tools’ results in the retrieval agent’s format, then quotes insights and session summaries with their fact ids', async () => {
    const { chat } = model();
    const fact = (id: string, source: string, text: string) => ({ id, source, text, sessionId: 's1', timestamp: '2026-01-05T10:00:00.000Z' });
    const results = [
      JSON.stringify([fact('turn:s1:3', 'turns', 'user: The kids start college in 2030.')]),
      JSON.stringify([fact('insight:ins-1', 'insights', 'The user keeps most of their 401k in index funds.')]),
      JSON.stringify([fact('summary:s1', 'sessionSummaries', 'The user reviewed their 401k and a mortgage refinance. They asked about college savings.')]),
    ];
    const turn = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: withResults(results), tools: TOOLS });
    expect(turn.toolCalls).toEqual([]);
    expect(turn.content).toContain('- The user keeps most of their 401k in index funds. [insight:ins-1]');
    expect(turn.content).toContain('- The user reviewed their 401k and a mortgage refinance. [summary:s1]');
    expect(turn.content).not.toContain('college');
  });
});
