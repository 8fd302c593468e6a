import type { ContextResponse } from '../contracts/context.js';
import type { Fact } from '../contracts/facts.js';
import type { MemoryClient } from './client.js';
import { MemoryServiceError } from './errors.js';

/** What the memory hooks share: where the memory lives and how much of it goes into the prompt. */
export interface MemoryHookOptions {
  client: MemoryClient;
  userId: string;
  sessionId: string;
  /** The agent whose thread this is (its view of the session; its turns carry it). */
  agentId?: string;
  /** The context block's token budget (the service's `maxTokens`). */
  maxTokens?: number;
  /**
   * Also search the user's long-term memory for the latest user message and put the top facts in the block
   * (`true`: 5 facts). Off by default: it is one more request per model call.
   */
  facts?: boolean | { topK?: number; minScore?: number; maxTokens?: number };
  /**
   * Called when the memory service fails. Without it the error is thrown and the model call fails with it; with it,
   * the call goes on without memory (or without storing) and the handler decides what to report.
   */
  onError?: (error: unknown, phase: 'read' | 'write') => void;
}

export const MEMORY_BLOCK_HEADER = '## Memory (from the agent memory service)';

/** The session's context, or null for a session the service does not know yet (its first turn not yet appended). */
export async function readContext(options: MemoryHookOptions): Promise<ContextResponse | null> {
  const { client, userId, sessionId, agentId, maxTokens } = options;
  try {
    return await client.getContext(userId, sessionId, { ...(agentId !== undefined && { agentId }), ...(maxTokens !== undefined && { maxTokens }) });
  } catch (error) {
    if (error instanceof MemoryServiceError && error.code === 'not_found') return null;
    throw error;
  }
}

export async function searchFactsFor(options: MemoryHookOptions, query: string | undefined): Promise<Fact[]> {
  if (!options.facts || !query?.trim()) return [];
  const settings = options.facts === true ? {} : options.facts;
  const result = await options.client.searchFacts(options.userId, { query: query.slice(0, 4000), topK: settings.topK ?? 5, ...(settings.minScore !== undefined && { minScore: settings.minScore }), ...(settings.maxTokens !== undefined && { maxTokens: settings.maxTokens }) });
  return result.facts;
}

/**
 * The memory block a hook puts in front of the conversation. `turns: 'all'` includes the verbatim turns (for a caller
 * that sends only the new message: the service holds the history); `'none'` leaves them out (the prompt carries the
 * conversation itself); a number keeps only turns below that seq (the ones the prompt does not show).
 */
export function memoryBlock(context: ContextResponse | null, facts: readonly Fact[], turns: 'all' | 'none' | number): string | null {
  const parts: string[] = [];
  if (context) {
    const s = context.sections;
    if (s.profile) parts.push(`### User profile\n${s.profile}`);
    if (s.recentSessions.length > 0) parts.push(`### Recent sessions\n${s.recentSessions.map((r) => `- (${r.endedAt.slice(0, 10)}) ${r.summary}`).join('\n')}`);
    if (s.handoff) parts.push(`### Handoff from ${s.handoff.fromAgentId}\n${[s.handoff.note, s.handoff.senderSummary].filter(Boolean).join('\n')}`);
    if (s.otherAgents && s.otherAgents.length > 0) parts.push(`### Other agents\n${s.otherAgents.map((a) => `- ${a.agentId}: ${a.summary}`).join('\n')}`);
    if (s.summary) parts.push(`### Conversation so far (summary)\n${s.summary}`);
    const shown = turns === 'none' ? [] : turns === 'all' ? s.turns : s.turns.filter((t) => t.seq < turns);
    if (shown.length > 0) parts.push(`### Recent turns\n${shown.map((t) => `${t.role}${t.agentId ? ` (${t.agentId})` : ''}: ${t.content || (t.toolCalls ?? []).map((c) => `[calls ${c.function.name}(${c.function.arguments})]`).join(' ')}`).join('\n')}`);
  }
  if (facts.length > 0) parts.push(`### Relevant facts from earlier conversations\n${facts.map((f) => `- ${f.text}`).join('\n')}`);
  return parts.length === 0 ? null : `${MEMORY_BLOCK_HEADER}\n\n${parts.join('\n\n')}`;
}

/** Runs a memory request; with `onError`, a failure is handed to it and `fallback` returned. */
export async function guarded<T>(options: MemoryHookOptions, phase: 'read' | 'write', run: () => Promise<T>, fallback: T): Promise<T> {
  if (!options.onError) return run();
  try {
    return await run();
  } catch (error) {
    options.onError(error, phase);
    return fallback;
  }
}
