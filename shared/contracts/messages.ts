import { z } from 'zod';
import { ContextTurn } from './context.js';
import { Id } from './ids.js';
import { Role } from './turns.js';

export const MessagesQuery = z.object({
  /** The agent whose thread to return (an agent-bound principal's own agent unless said). */
  agentId: Id.optional(),
  /** `openai` (default): chat completions messages; `raw`: the stored turns. */
  format: z.enum(['openai', 'raw']).default('openai'),
});
export type MessagesQuery = z.infer<typeof MessagesQuery>;

/** A message exactly as the OpenAI chat completions API takes it; an assistant message of only tool calls has `content: null`. */
export const OpenAIMessage = z.object({
  role: Role,
  content: z.string().nullable(),
  name: z.string().optional(),
  tool_calls: z.array(z.object({ id: z.string(), type: z.literal('function'), function: z.object({ name: z.string(), arguments: z.string() }) })).optional(),
  tool_call_id: z.string().optional(),
});
export type OpenAIMessage = z.infer<typeof OpenAIMessage>;

const MessagesHead = z.object({
  userId: Id,
  sessionId: Id,
  agentId: Id.optional(),
  /** Turns up to this seq are in the context's summary; the messages are the verbatim part after it. */
  summaryCoversThroughSeq: z.number().int().nonnegative(),
});

/** The verbatim part of the thread, ascending by seq; offloaded contents as their `[MemoryRef: …]` placeholders. */
export const MessagesResponse = z.discriminatedUnion('format', [
  MessagesHead.extend({ format: z.literal('openai'), messages: z.array(OpenAIMessage) }),
  MessagesHead.extend({ format: z.literal('raw'), turns: z.array(ContextTurn) }),
]);
export type MessagesResponse = z.infer<typeof MessagesResponse>;
