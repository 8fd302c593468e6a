import { z } from 'zod';
import { Id } from './ids.js';
import { Role, ToolCall } from './events.js';

export const TurnInput = z.object({
  role: Role,
  content: z.string().refine((s) => s.trim().length > 0, 'must not be empty'),
  name: z.string().min(1).max(128).optional(),
  agentId: Id.optional(),
  turnId: Id.optional(),
  timestamp: z.iso.datetime({ offset: true }).optional(),
  toolCalls: z.array(ToolCall).max(128).optional(),
  toolCallId: z.string().min(1).max(256).optional(),
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
