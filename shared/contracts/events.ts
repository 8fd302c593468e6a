import { z } from 'zod';
import { RecentSession } from './context.js';
import { Id, type SessionKey } from './ids.js';
import { MemoryRef, Role, ToolCall } from './turns.js';

// The parts of a turn live with the turn contracts (context.ts needs them too, and events.ts imports context.ts).
export { MemoryRef, Role, ToolCall };

export const SCHEMA_VERSION = 1;

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
    /** "" for an assistant turn that carries only tool calls (sent with `content: null` or ""). */
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

/**
 * The session's lifecycle after its turns: each is decided once (its event key, below) and carries the model output
 * the session's read models depend on, so a rebuild replays them without calling a chat model. Vectors are not
 * carried: the projection embeds the recorded texts again (cheap, deterministic per embedding model, and a rebuild
 * can move the store to another embedding model).
 */

/** Turns `fromSeq`..`toSeq` became one interaction: the model's summary, topics and entities, and the new cumulative summary. */
export const InteractionSummarised = z.object({
  type: z.literal('InteractionSummarised'),
  data: z.object({
    fromSeq: z.number().int().positive(),
    toSeq: z.number().int().positive(),
    summary: z.string(),
    topics: z.array(z.string()),
    entities: z.array(z.string()),
    cumulativeSummary: z.string(),
    /**
     * The thread the window belongs to: its turns are the thread's turns in `fromSeq`..`toSeq`. null: the thread of
     * turns that name no agent. Absent in events recorded before threads: the window covers every turn in the range.
     */
    agentId: Id.nullable().optional(),
    /** The chat model that wrote the texts. */
    model: z.string(),
  }),
  metadata: EventMetadata,
});
export type InteractionSummarised = z.infer<typeof InteractionSummarised>;

/** The init block, fixed when the session's first turn is projected: the profile version and the recent sessions shown. */
export const SessionInitFixed = z.object({
  type: z.literal('SessionInitFixed'),
  data: z.object({
    profile: z.object({ text: z.string(), version: z.number().int().positive() }).nullable(),
    recentSessions: z.array(RecentSession),
  }),
  metadata: EventMetadata,
});
export type SessionInitFixed = z.infer<typeof SessionInitFixed>;

export const SessionSummarised = z.object({
  type: z.literal('SessionSummarised'),
  data: z.object({ summary: z.string(), keyTopics: z.array(z.string()), endedAt: z.iso.datetime(), model: z.string() }),
  metadata: EventMetadata,
});
export type SessionSummarised = z.infer<typeof SessionSummarised>;

/** Session reflection: the insights it produced (stored as insights), or none. */
export const SessionReflected = z.object({
  type: z.literal('SessionReflected'),
  data: z.object({ outcome: z.enum(['insight', 'no-insight']), insightIds: z.array(z.string()), dropped: z.number().int().nonnegative(), model: z.string() }),
  metadata: EventMetadata,
});
export type SessionReflected = z.infer<typeof SessionReflected>;

/** A no-insight session was reflected on together with other such sessions (no-insight aggregation). */
export const SessionAggregated = z.object({
  type: z.literal('SessionAggregated'),
  data: z.object({ sessionIds: z.array(Id), insightIds: z.array(z.string()) }),
  metadata: EventMetadata,
});
export type SessionAggregated = z.infer<typeof SessionAggregated>;

export const SessionCompleted = z.object({
  type: z.literal('SessionCompleted'),
  data: z.object({ endedAt: z.iso.datetime() }),
  metadata: EventMetadata,
});
export type SessionCompleted = z.infer<typeof SessionCompleted>;

/**
 * An event the projection could not apply (its store refused a value: e.g. a date out of its range) is set aside
 * after bounded retries, so projection goes on for the session's other events and for everyone else. The reason is
 * the error's class and code, never the value.
 */
export const EventSetAside = z.object({
  type: z.literal('EventSetAside'),
  data: z.object({ seq: z.number().int().positive(), reason: z.string().max(200) }),
  metadata: EventMetadata,
});
export type EventSetAside = z.infer<typeof EventSetAside>;

/**
 * One agent of the session hands over to another: the receiver's next context starts with a handoff block (who, the
 * note, the sender's thread summary, the memory refs passed along), and the keys become readable by the receiver even
 * when they were the sender's private memory. `handoffId` makes a retried request harmless.
 */
export const SessionHandoff = z.object({
  type: z.literal('SessionHandoff'),
  data: z.object({
    handoffId: Id,
    fromAgentId: Id,
    toAgentId: Id,
    note: z.string().optional(),
    memoryKeys: z.array(Id),
  }),
  metadata: EventMetadata,
});
export type SessionHandoff = z.infer<typeof SessionHandoff>;

/** Everything that happens to a session is one of these, in its stream; all else is a projection. */
export const MemoryEvent = z.discriminatedUnion('type', [
  TurnAppended,
  SessionEndRequested,
  InteractionSummarised,
  SessionInitFixed,
  SessionSummarised,
  SessionReflected,
  SessionAggregated,
  SessionCompleted,
  EventSetAside,
  SessionHandoff,
]);
export type MemoryEvent = z.infer<typeof MemoryEvent>;

export const isTurn = (e: MemoryEvent): e is TurnAppended => e.type === 'TurnAppended';

/** The events a client's request records (a turn, a handoff, an end request); every other one is derived from them. */
export const isClientEvent = (e: MemoryEvent): boolean => e.type === 'TurnAppended' || e.type === 'SessionHandoff' || e.type === 'SessionEndRequested';

/** An event before the store gives it its place (seq, time) in the session. */
export type EventDraft = MemoryEvent extends infer E ? (E extends MemoryEvent ? Pick<E, 'type' | 'data'> : never) : never;

/**
 * The event's idempotency key within its session: the store records an event with a given key once, and answers a
 * second append of it with the first one's seq (`duplicate`). Turns use the client's turnId; a lifecycle event, which
 * happens once per session (or once per interaction), a key that no turnId can take (`@` is not allowed in ids). Two
 * writers that decide the same thing therefore conflict here, in the event store, and nowhere else.
 */
/** The key of the end request: once it is recorded, the session accepts no more turns. */
export const END_KEY = '@end';

export function eventKey(draft: EventDraft): string {
  switch (draft.type) {
    case 'TurnAppended':
      return draft.data.turnId;
    case 'InteractionSummarised':
      return `@interaction:${draft.data.fromSeq}`;
    case 'SessionEndRequested':
      return END_KEY;
    case 'SessionInitFixed':
      return '@init';
    case 'SessionSummarised':
      return '@summary';
    case 'SessionReflected':
      return '@reflection';
    case 'SessionAggregated':
      return '@aggregated';
    case 'SessionCompleted':
      return '@completed';
    case 'EventSetAside':
      return `@set-aside:${draft.data.seq}`;
    case 'SessionHandoff':
      return `@handoff:${draft.data.handoffId}`;
  }
}

/** Event document ids in the events container: `<sessionId>:<seq zero-padded>`. */
export const eventId = (sessionId: string, seq: number): string => `${sessionId}:${String(seq).padStart(10, '0')}`;

/** The stored event document: the event plus the top-level keys the Cosmos container is partitioned and queried by. */
export function eventDocument(key: SessionKey, seq: number, draft: EventDraft, recordedAt: Date) {
  const event = { ...draft, metadata: { schemaVersion: SCHEMA_VERSION, ...key, seq, recordedAt: recordedAt.toISOString() } } as MemoryEvent;
  return { id: eventId(key.sessionId, seq), ...key, seq, eventKey: eventKey(draft), ...event };
}
export type EventDocument = ReturnType<typeof eventDocument>;
