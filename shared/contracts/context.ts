import { z } from 'zod';
import { Id } from './ids.js';
import { MemoryRef, Role, ToolCall } from './turns.js';
import { ContextSlot } from './slots.js';

export const ContextQuery = z.object({
  agentId: Id.optional(),
  maxTokens: z.coerce.number().int().min(64).max(1_000_000).optional(),
});
export type ContextQuery = z.infer<typeof ContextQuery>;

export const ContextTurn = z.object({
  seq: z.number().int().positive(),
  turnId: Id,
  role: Role,
  name: z.string().optional(),
  agentId: Id.optional(),
  /** "" for an assistant turn of only tool calls; an offloaded turn's placeholder (or, first use, its full content). */
  content: z.string(),
  timestamp: z.iso.datetime(),
  toolCalls: z.array(ToolCall).optional(),
  toolCallId: z.string().optional(),
  memoryRef: MemoryRef.optional(),
});
export type ContextTurn = z.infer<typeof ContextTurn>;

export const RecentSession = z.object({ sessionId: Id, endedAt: z.iso.datetime(), summary: z.string() });
export type RecentSession = z.infer<typeof RecentSession>;

/** The last handoff to the agent: who, when, the note, the sender's thread summary and the memory passed along. */
export const ContextHandoff = z.object({
  fromAgentId: Id,
  at: z.iso.datetime(),
  note: z.string().optional(),
  senderSummary: z.string(),
  memoryRefs: z.array(z.object({ key: Id, description: z.string(), tokens: z.number().int().nonnegative() })),
});
export type ContextHandoff = z.infer<typeof ContextHandoff>;

/** Another agent's thread summary, as an agent's context shows it. */
export const OtherAgent = z.object({ agentId: Id, summary: z.string() });
export type OtherAgent = z.infer<typeof OtherAgent>;

export const ContextResponse = z.object({
  userId: Id,
  sessionId: Id,
  text: z.string(),
  sections: z.object({
    profile: z.string().nullable(),
    recentSessions: z.array(RecentSession),
    /** Agent view only (`?agentId=`): the last handoff to the agent, or null. */
    handoff: ContextHandoff.nullable().optional(),
    /** Agent view only: the other agents' thread summaries. */
    otherAgents: z.array(OtherAgent).optional(),
    /** The slots the caller may see (core memory), after the init block; never cut by the budget. */
    slots: z.array(ContextSlot).optional(),
    summary: z.string(),
    turns: z.array(ContextTurn),
  }),
  /** The agent whose thread this is (`?agentId=`); absent for the whole session. */
  agentId: Id.optional(),
  /** Turns up to this seq are represented by `sections.summary`; every later turn is in `sections.turns`. */
  summaryCoversThroughSeq: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative(),
  /** Offloaded turns the context shows as `[MemoryRef: …]` placeholders; fetch one with GET /memories/{key}. */
  memoryRefs: z.array(
    z.object({ key: z.string(), tokens: z.number().int(), description: z.string().optional(), seq: z.number().int().positive().optional(), turnId: Id.optional() }),
  ),
});
export type ContextResponse = z.infer<typeof ContextResponse>;
