import { z } from 'zod';
import type { Fact, FactSearchBody, FactSearchResult } from '../contracts/facts.js';
import { MemoryError } from '../domain/errors.js';
import { countTokens } from '../domain/tokens.js';
import type { ChatMessage, Deps, ToolDefinition } from './ports.js';
import { RETRIEVAL_AGENT_MAX_TOOL_ROUNDS, RETRIEVAL_AGENT_SYSTEM_PROMPT } from './prompts.js';
import { searchFacts } from './search-facts.js';

const ToolArguments = z.object({ query: z.string().trim().min(1).max(2_000), top_k: z.number().int().min(1).max(20).optional() });

interface Tool {
  definition: ToolDefinition;
  run(args: z.infer<typeof ToolArguments>): Promise<Fact[]>;
}

const parameters = {
  type: 'object',
  properties: { query: { type: 'string', description: 'What to search for' }, top_k: { type: 'integer', minimum: 1, maximum: 20 } },
  required: ['query'],
  additionalProperties: false,
};

/**
 * The contextual fact retrieval agent: a small model decides which memory to search and with what queries (at most
 * three tool rounds), then answers from what it found. Returns the facts its tools returned, in the order found, and
 * its answer. Offline, the local model plays a deterministic planner (every tool once, then an extractive answer).
 */
export async function retrieveWithAgent(deps: Pick<Deps, 'search' | 'embedder' | 'memory' | 'chat'>, userId: string, body: FactSearchBody): Promise<FactSearchResult> {
  const scoped = { ...body, mode: 'search' as const };
  const tools: Tool[] = [
    {
      definition: { name: 'search_interactions', description: 'Search past conversation turns and chunks (hybrid full-text + vector).', parameters },
      run: async ({ query, top_k }) => (await searchFacts(deps, userId, { ...scoped, query, topK: top_k ?? body.topK ?? deps.memory.topKFacts })).facts,
    },
  ];

  const found = new Map<string, Fact>();
  const messages: ChatMessage[] = [
    { role: 'system', content: RETRIEVAL_AGENT_SYSTEM_PROMPT },
    { role: 'user', content: body.query },
  ];
  let answer: string | null = null;
  for (let round = 0; round <= RETRIEVAL_AGENT_MAX_TOOL_ROUNDS && answer === null; round++) {
    const offered = round < RETRIEVAL_AGENT_MAX_TOOL_ROUNDS ? tools.map((t) => t.definition) : [];
    const reply = await deps.chat.converse({ operation: 'retrievalAgent', tier: 'mini', messages, tools: offered });
    if (reply.toolCalls.length === 0) {
      answer = reply.content ?? '';
      break;
    }
    messages.push({ role: 'assistant', content: reply.content, toolCalls: reply.toolCalls });
    for (const call of reply.toolCalls) {
      const tool = tools.find((t) => t.definition.name === call.name);
      const args = ToolArguments.safeParse(call.arguments);
      if (!tool || !args.success) {
        messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify({ error: tool ? 'invalid arguments' : `unknown tool ${call.name}` }) });
        continue;
      }
      const facts = await tool.run(args.data);
      for (const f of facts) if (!found.has(f.id)) found.set(f.id, f);
      messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify(facts.map((f) => ({ id: f.id, text: f.text, sessionId: f.sessionId, timestamp: f.timestamp }))) });
    }
  }
  if (answer === null) throw new MemoryError('upstream_unavailable', 'The retrieval agent did not answer within its tool rounds');
  const facts = [...found.values()].slice(0, body.topK ?? deps.memory.topKFacts);
  return { facts, answer, tokens: facts.reduce((n, f) => n + f.tokens, 0) + countTokens(answer) };
}
