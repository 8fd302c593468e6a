import type { ContextTurn } from '../contracts/context.js';
import type { OpenAIMessage } from '../contracts/messages.js';
import { placeholder } from './memory-ref.js';

/** The turn as stored: an offloaded content as its placeholder, not the full content a context shows on first use. */
export const storedTurn = (turn: ContextTurn): ContextTurn => (turn.memoryRef ? { ...turn, content: placeholder(turn.memoryRef) } : turn);

/**
 * A turn as an OpenAI chat completions message: tool calls on assistant messages only (`content: null` when they are all
 * the turn has), `tool_call_id` on tool messages only, offloaded contents as their placeholders.
 */
export function toOpenAIMessage(turn: ContextTurn): OpenAIMessage {
  const { role, content, name, toolCalls, toolCallId } = storedTurn(turn);
  const calls = role === 'assistant' && toolCalls && toolCalls.length > 0 ? toolCalls : undefined;
  return {
    role,
    content: calls && content === '' ? null : content,
    ...(name && { name }),
    ...(calls && { tool_calls: calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.function.name, arguments: c.function.arguments } })) }),
    ...(role === 'tool' && toolCallId && { tool_call_id: toolCallId }),
  };
}

/** Ids of tool results in `turns` whose call no earlier assistant turn of `turns` made (the call lies before them). */
export function unansweredResults(turns: readonly ContextTurn[]): Set<string> {
  const made = new Set<string>();
  const open = new Set<string>();
  for (const t of turns) {
    if (t.role === 'assistant') for (const c of t.toolCalls ?? []) made.add(c.id);
    if (t.role === 'tool' && t.toolCallId && !made.has(t.toolCallId)) open.add(t.toolCallId);
  }
  return open;
}

/**
 * From turns before a thread (ascending), what the thread needs in front so each of its tool results follows its call:
 * the assistant turns that made the `open` calls and, after the first of them, the results of their calls.
 */
export function callsFor(before: readonly ContextTurn[], open: ReadonlySet<string>): ContextTurn[] {
  const callers = before.filter((t) => t.role === 'assistant' && t.toolCalls?.some((c) => open.has(c.id)));
  if (callers.length === 0) return [];
  const ids = new Set(callers.flatMap((t) => t.toolCalls!.map((c) => c.id)));
  const from = callers[0]!.seq;
  return before.filter((t) => t.seq >= from && (callers.includes(t) || (t.role === 'tool' && t.toolCallId !== undefined && ids.has(t.toolCallId))));
}
