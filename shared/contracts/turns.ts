import { z } from 'zod';
import { Id } from './ids.js';
import { Instant, Text } from './text.js';

export const Role = z.enum(['user', 'assistant', 'tool', 'system']);
export type Role = z.infer<typeof Role>;

export const ToolCall = z.object({
  id: z.string().min(1).max(256),
  type: z.literal('function').default('function'),
  function: z.object({ name: z.string().min(1).max(256), arguments: z.string() }),
});
export type ToolCall = z.infer<typeof ToolCall>;

/** The reference an offloaded turn keeps: the artifact key, its plugin-made description and the content's size. */
export const MemoryRef = z.object({
  key: Id,
  description: z.string(),
  tokens: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
});
export type MemoryRef = z.infer<typeof MemoryRef>;

/** A tool call as a client sends it: the event's shape, with every string storable (no NUL, no lone surrogate). */
export const ToolCallInput = ToolCall.extend({
  id: Text.min(1).max(256),
  function: z.object({ name: Text.min(1).max(256), arguments: Text }),
});

/**
 * One turn. `content` must have text, except on an assistant turn that carries tool calls: there it may be `null` or ""
 * (the OpenAI API sends such a turn with `content: null`); it is stored as "".
 */
export const TurnInput = z.object({
  role: Role,
  content: Text.nullable(),
  name: Text.min(1).max(128).optional(),
  agentId: Id.optional(),
  turnId: Id.optional(),
  timestamp: Instant.optional(),
  toolCalls: z.array(ToolCallInput).max(128).optional(),
  toolCallId: Text.min(1).max(256).optional(),
}).strict().superRefine((turn, ctx) => {
  if (turn.content !== null && turn.content.trim().length > 0) return;
  if (!turn.content && turn.role === 'assistant' && (turn.toolCalls?.length ?? 0) > 0) return;
  ctx.addIssue({ code: 'custom', path: ['content'], message: turn.content === null ? 'must not be null unless an assistant turn carries toolCalls' : 'must not be empty' });
});
export type TurnInput = z.infer<typeof TurnInput>;

export const AppendTurnsBody = z.object({
  turns: z.array(TurnInput).min(1).max(100)
    .refine((turns) => {
      const ids = turns.flatMap((t) => (t.turnId ? [t.turnId] : []));
      return new Set(ids).size === ids.length;
    }, 'turnIds must be unique within one request'),
}).strict();
export type AppendTurnsBody = z.infer<typeof AppendTurnsBody>;

export const AppendTurnsResult = z.object({
  accepted: z.array(z.object({ turnId: Id, seq: z.number().int().positive() })),
});
export type AppendTurnsResult = z.infer<typeof AppendTurnsResult>;
