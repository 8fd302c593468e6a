import { z } from 'zod';
import { Id } from './ids.js';

export const SCHEMA_VERSION = 1;

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

const EventMetadata = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  userId: Id,
  sessionId: Id,
  seq: z.number().int().positive(),
  /** When the service recorded the event. */
  recordedAt: z.iso.datetime(),
});

export const TurnAppended = z.object({
  type: z.literal('TurnAppended'),
  data: z.object({
    turnId: Id,
    role: Role,
    content: z.string(),
    name: z.string().optional(),
    agentId: Id.optional(),
    /** When the turn happened (client-supplied for imports, else the recording time). */
    timestamp: z.iso.datetime(),
    toolCalls: z.array(ToolCall).optional(),
    toolCallId: z.string().optional(),
    /** Set when the content was offloaded to detail memory: `content` then holds the MemoryRef placeholder. */
    memoryRef: MemoryRef.optional(),
  }),
  metadata: EventMetadata,
});
export type TurnAppended = z.infer<typeof TurnAppended>;

export const SessionEndRequested = z.object({
  type: z.literal('SessionEndRequested'),
  data: z.object({ reason: z.enum(['client', 'idle']) }),
  metadata: EventMetadata,
});
export type SessionEndRequested = z.infer<typeof SessionEndRequested>;

/** Everything that enters the service is one of these; all else is a projection. */
export const MemoryEvent = z.discriminatedUnion('type', [TurnAppended, SessionEndRequested]);
export type MemoryEvent = z.infer<typeof MemoryEvent>;

export const isTurn = (e: MemoryEvent): e is TurnAppended => e.type === 'TurnAppended';
