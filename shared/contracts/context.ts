import { z } from 'zod';
import { Id } from './ids.js';
import { ContextSlot } from './slots.js';

export const ContextQuery = z.object({
  agentId: Id.optional(),
  maxTokens: z.coerce.number().int().min(64).max(1_000_000).optional(),
});
export type ContextQuery = z.infer<typeof ContextQuery>;

export const ContextTurn = z.object({
  seq: z.number().int().positive(),
  turnId: Id,
  role: z.string(),
  name: z.string().optional(),
  agentId: Id.optional(),
  content: z.string(),
  timestamp: z.iso.datetime(),
});
export type ContextTurn = z.infer<typeof ContextTurn>;

export const RecentSession = z.object({ sessionId: Id, endedAt: z.iso.datetime(), summary: z.string() });
export type RecentSession = z.infer<typeof RecentSession>;

export const ContextResponse = z.object({
  userId: Id,
  sessionId: Id,
  text: z.string(),
  sections: z.object({
    profile: z.string().nullable(),
    recentSessions: z.array(RecentSession),
    /** The slots the caller may see (core memory), after the init block; never cut by the budget. */
    slots: z.array(ContextSlot).optional(),
    summary: z.string(),
    turns: z.array(ContextTurn),
  }),
  /** Turns up to this seq are represented by `sections.summary`; every later turn is in `sections.turns`. */
  summaryCoversThroughSeq: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  /** Offloaded turns the context shows as `[MemoryRef: …]` placeholders; fetch one with GET /memories/{key}. */
  memoryRefs: z.array(
    z.object({ key: z.string(), tokens: z.number().int(), description: z.string().optional(), seq: z.number().int().positive().optional(), turnId: Id.optional() }),
  ),
});
export type ContextResponse = z.infer<typeof ContextResponse>;
