import type { TurnAppended } from '../contracts/events.js';

/** One line of a transcript, as models and agents read it: `role (name): content`. */
export function renderTurn(turn: TurnAppended): string {
  const { role, name, content, toolCalls, toolCallId } = turn.data;
  const who = name ? `${role} (${name})` : role;
  const calls = toolCalls?.length ? ` [tool calls: ${toolCalls.map((c) => `${c.function.name}(${c.function.arguments})`).join(', ')}]` : '';
  const answering = toolCallId ? ` [for ${toolCallId}]` : '';
  return `${who}${answering}: ${content}${calls}`;
}

export const renderTranscript = (turns: readonly TurnAppended[]): string => turns.map(renderTurn).join('\n');
