import type { ToolCall, TurnAppended } from '../contracts/events.js';

/** Tool calls compactly: `name(arguments), …`. */
export const renderToolCalls = (calls: readonly ToolCall[]): string => calls.map((c) => `${c.function.name}(${c.function.arguments})`).join(', ');

/** One line of a transcript, as models and agents read it: `role (name): content [tool calls: …]` (content may be empty). */
export function renderTurn(turn: TurnAppended): string {
  const { role, name, content, toolCalls, toolCallId } = turn.data;
  const who = name ? `${role} (${name})` : role;
  const calls = toolCalls?.length ? `[tool calls: ${renderToolCalls(toolCalls)}]` : '';
  const answering = toolCallId ? ` [for ${toolCallId}]` : '';
  return `${who}${answering}: ${[content, calls].filter(Boolean).join(' ')}`;
}

export const renderTranscript = (turns: readonly TurnAppended[]): string => turns.map(renderTurn).join('\n');
