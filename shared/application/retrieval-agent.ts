import { z } from 'zod';
import type { Fact, FactSearchBody, FactSearchResult, FactSource } from '../contracts/facts.js';
import { MemoryError } from '../domain/errors.js';
import { countTokens } from '../domain/tokens.js';
import type { ChatMessage, Deps, ToolDefinition } from './ports.js';
import { RETRIEVAL_AGENT_MAX_TOOL_ROUNDS, RETRIEVAL_AGENT_SYSTEM_PROMPT, type RETRIEVAL_TOOLS } from './prompts.js';
import type { Viewer } from '../domain/scopes.js';
import type { Principal } from './auth.js';
import type { LoadDeps } from './project-session.js';
import { searchFacts } from './search-facts.js';
import { viewerFor } from './viewer.js';

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

/** The agent's tools: each searches only its sources (hybrid full text + vector, with the request's filters). */
const TOOL_SOURCES: Record<(typeof RETRIEVAL_TOOLS)[number], { sources: readonly FactSource[]; description: string }> = {
  search_interactions: { sources: ['turns', 'interactions'], description: 'Search past conversations: single turns and multi-turn chunks (hybrid full-text + vector).' },
  search_insights: { sources: ['insights'], description: "Search insights extracted about the user (goals, situation, preferences, concerns, ...)." },
  search_session_summaries: { sources: ['sessionSummaries'], description: 'Search the summaries of past sessions.' },
};

/**
 * The contextual fact retrieval agent: a small model decides which memory to search and with what queries (at most
 * three tool rounds), then answers from what it found. Tools: `search_interactions` (turns and interactions),
 * `search_insights`, `search_session_summaries`; a request's `sources` leaves out the tools it excludes. Returns the
 * facts the answer cites (in citation order), then the other facts found (alternating between the tool calls, so one
 * tool's results do not fill topK alone), and its answer. Offline, the local model plays a deterministic planner
 * (every tool once, then an extractive answer).
 */
export async function retrieveWithAgent(
  deps: Pick<Deps, 'search' | 'embedder' | 'memory' | 'chat' | 'clock' | 'insights' | 'directory'>,
  userId: string,
  body: FactSearchBody,
  viewer?: Viewer,
): Promise<FactSearchResult> {
  const scoped = { ...body, mode: 'search' as const };
  const tools: Tool[] = Object.entries(TOOL_SOURCES).flatMap(([name, tool]) => {
    const sources = tool.sources.filter((s) => !body.sources || body.sources.includes(s));
    if (sources.length === 0) return [];
    return [
      {
        definition: { name, description: tool.description, parameters },
        run: async ({ query, top_k }: z.infer<typeof ToolArguments>) => (await searchFacts(deps, userId, { ...scoped, query, sources, topK: top_k ?? body.topK ?? deps.memory.topKFacts }, viewer)).facts,
      },
    ];
  });

  /** The facts of each tool call, in call order. */
  const found: Fact[][] = [];
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
      found.push(facts);
      messages.push({ role: 'tool', toolCallId: call.id, content: JSON.stringify(facts.map((f) => ({ id: f.id, source: f.source, text: f.text, sessionId: f.sessionId, timestamp: f.timestamp }))) });
    }
  }
  if (answer === null) throw new MemoryError('upstream_unavailable', 'The retrieval agent did not answer within its tool rounds');
  const facts = usedFacts(found, answer).slice(0, body.topK ?? deps.memory.topKFacts);
  return { facts, answer, tokens: facts.reduce((n, f) => n + f.tokens, 0) + countTokens(answer) };
}

/**
 * The facts the agent used: those its answer cites as `[id]`, in citation order, then the rest of what its tools
 * returned, taking each call's results in turn (first of every call, then second, ...), without repeats.
 */
export function usedFacts(perCall: readonly (readonly Fact[])[], answer: string): Fact[] {
  const byId = new Map<string, Fact>();
  for (const f of perCall.flat()) if (!byId.has(f.id)) byId.set(f.id, f);
  const ordered = new Map<string, Fact>();
  for (const [, id] of answer.matchAll(/\[([^\[\]\s]+)\]/g)) {
    const fact = byId.get(id!);
    if (fact && !ordered.has(fact.id)) ordered.set(fact.id, fact);
  }
  const longest = Math.max(0, ...perCall.map((facts) => facts.length));
  for (let i = 0; i < longest; i++) {
    for (const facts of perCall) {
      const fact = facts[i];
      if (fact && !ordered.has(fact.id)) ordered.set(fact.id, fact);
    }
  }
  return [...ordered.values()];
}

/**
 * Fact search as the route and the MCP tool serve it: read as the caller (viewerFor: its agent, the session it names and
 * what was handed to it), by hybrid search or, in mode `agent`, by the retrieval agent over the same view.
 */
export async function findFacts(deps: Parameters<typeof retrieveWithAgent>[0] & Parameters<typeof searchFacts>[0] & LoadDeps, principal: Principal, userId: string, body: FactSearchBody): Promise<FactSearchResult> {
  const viewer = await viewerFor(deps, principal, { userId, agentId: body.agentId, sessionId: body.sessionId });
  return body.mode === 'agent' ? retrieveWithAgent(deps, userId, body, viewer) : searchFacts(deps, userId, body, viewer);
}
