import { z } from 'zod';
import { Id } from './ids.js';
import { Role, ToolCall } from './events.js';
import { Instant, Text } from './text.js';

/** A tool call as a client sends it: the event's shape, with every string storable (no NUL, no lone surrogate). */
export const ToolCallInput = ToolCall.extend({
  id: Text.min(1).max(256),
  function: z.object({ name: Text.min(1).max(256), arguments: Text }),
});

export const TurnInput = z.object({
  role: Role,
  content: Text.refine((s) => s.trim().length > 0, 'must not be empty'),
  name: Text.min(1).max(128).optional(),
  agentId: Id.optional(),
  turnId: Id.optional(),
  timestamp: Instant.optional(),
  toolCalls: z.array(ToolCallInput).max(128).optional(),
  toolCallId: Text.min(1).max(256).optional(),
}).strict();
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
