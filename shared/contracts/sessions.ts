import { z } from 'zod';
import { Id } from './ids.js';
import { MemoryEvent, SCHEMA_VERSION } from './events.js';
import { Text } from './text.js';

export const Handoff = z.object({
  seq: z.number().int().positive(),
  handoffId: Id,
  fromAgentId: Id,
  toAgentId: Id,
  note: z.string().optional(),
  memoryKeys: z.array(Id),
  at: z.iso.datetime(),
});
export type Handoff = z.infer<typeof Handoff>;

/**
 * One agent's thread of a session: the turns that carry its `agentId` (`agentId` absent: the turns that name no agent,
 * which every agent of the session shares). Each thread is chunked into its own windows and has its own cumulative summary.
 */
export const Thread = z.object({
  agentId: Id.optional(),
  turnCount: z.number().int().nonnegative(),
  /** The seq of the thread's latest turn. */
  lastSeq: z.number().int().nonnegative(),
  /** Every turn of the thread up to this seq is covered by its windows and `cumulativeSummary`. */
  chunkedThroughSeq: z.number().int().nonnegative(),
  cumulativeSummary: z.string(),
});
export type Thread = z.infer<typeof Thread>;

export const SessionStatusValue = z.enum(['active', 'ending', 'completed']);
export const ReflectionStatus = z.enum(['pending', 'no-insight', 'processed']);

/** The session projection: the fold of the session's events (shared/domain/session.ts), written only by the projector. */
export const SessionDocument = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  userId: Id,
  sessionId: Id,
  status: SessionStatusValue,
  reflectionStatus: ReflectionStatus,
  /** Highest event seq folded into this document. */
  projectedThroughSeq: z.number().int().nonnegative(),
  /** Turns up to this seq are covered by `cumulativeSummary` and by interaction documents (the threads' common coverage). */
  chunkedThroughSeq: z.number().int().nonnegative(),
  /** The threads' cumulative summaries: the one thread's, or each labelled by its agent. */
  cumulativeSummary: z.string(),
  /** The session's threads in order of their first turn. Absent in documents projected before threads: refolded on projection. */
  threads: z.array(Thread).optional(),
  turnCount: z.number().int().nonnegative(),
  agentIds: z.array(Id),
  startedAt: z.iso.datetime().nullable(),
  lastTurnAt: z.iso.datetime().nullable(),
  /**
   * When the service recorded the session's latest turn (its own clock, unlike `lastTurnAt`, which is the client's
   * timestamp and may be years old for imported history). The idle timeout judges by it. Absent in documents
   * projected before it existed: the sweep then falls back to `lastTurnAt` (PostgreSQL) or waits for the next turn (Cosmos).
   */
  lastActivityAt: z.iso.datetime().nullable().optional(),
  updatedAt: z.iso.datetime(),
  /** Set by session end: the session summary (shown in later sessions' init block), its vector and key topics. */
  summary: z.string().optional(),
  /** The insights session reflection produced (when `reflectionStatus` is not `pending`). */
  insightIds: z.array(z.string()).optional(),
  keyTopics: z.array(z.string()).optional(),
  summaryVector: z.array(z.number()).optional(),
  embeddingModel: z.string().optional(),
  endedAt: z.iso.datetime().optional(),
  /** Events the projection set aside (`EventSetAside`): folded, but their rows (turn index, interaction) not written. */
  setAside: z.array(z.object({ seq: z.number().int().positive(), reason: z.string() })).optional(),
  /** Handoffs between the session's agents, in order (`SessionHandoff` events). */
  handoffs: z.array(Handoff).optional(),
  /** The agent that acts now: the receiver of the last handoff, else the agent of the latest turn that names one. */
  activeAgentId: Id.optional(),
  /** The init block (profile, recent session summaries), fixed when the session's first turn is projected. */
  init: z.object({ profile: z.string().nullable(), recentSessions: z.array(z.object({ sessionId: Id, endedAt: z.iso.datetime(), summary: z.string() })) }).optional(),
  /**
   * The projector's bookmark while it works through a backlog slice by slice, not part of the fold: decisions it
   * recorded past `projectedThroughSeq` (they land at the stream's end) — each thread's last window, the init block,
   * events set aside — so the next slice neither decides them again nor reads the stream's end to find them. Absent
   * once the fold has reached them.
   */
  decidedAhead: z
    .object({
      threads: z.array(Thread.pick({ agentId: true, chunkedThroughSeq: true, cumulativeSummary: true })),
      init: z.boolean(),
      setAside: z.array(z.number().int().positive()),
    })
    .optional(),
  /**
   * Decisions the projector wrote the turns of before making them (a new turn is projected before its window is
   * summarised and before its session's init block is fixed): the windows and the init block still to decide. The
   * session status counts them as pending until they are made and written.
   */
  decisionsDue: z.number().int().positive().optional(),
});
export type SessionDocument = z.infer<typeof SessionDocument>;

/** GET /users/{u}/sessions/{s} */
export const SessionStatus = z.object({
  userId: Id,
  sessionId: Id,
  status: SessionStatusValue,
  reflectionStatus: ReflectionStatus,
  lastSeq: z.number().int().nonnegative(),
  chunkedThroughSeq: z.number().int().nonnegative(),
  projectedThroughSeq: z.number().int().nonnegative(),
  /** Events recorded but not yet folded into the projection, and windows whose turns are written but not yet summarised. */
  pending: z.number().int().nonnegative(),
  turnCount: z.number().int().nonnegative(),
  agentIds: z.array(Id),
  startedAt: z.iso.datetime().nullable(),
  lastTurnAt: z.iso.datetime().nullable(),
  summary: z.string(),
  /** Events the projection could not apply and set aside (dead letters), with the error's class and code. */
  setAside: z.array(z.object({ seq: z.number().int().positive(), reason: z.string() })),
  /** The agent acting now: the receiver of the last handoff, else the agent of the latest turn that names one. */
  activeAgentId: Id.nullable(),
  handoffs: z.array(Handoff),
  /** Each thread: its agent (absent: the turns no agent claims), its turns and how far they are summarised. */
  threads: z.array(Thread.pick({ agentId: true, turnCount: true, chunkedThroughSeq: true })),
});
export type SessionStatus = z.infer<typeof SessionStatus>;

/** GET /users/{u}/sessions/{s}/events?after=&limit= */
export const SessionEventsQuery = z.object({
  /** Events with a seq above this one (0: from the start). */
  after: z.coerce.number().int().nonnegative().default(0),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type SessionEventsQuery = z.infer<typeof SessionEventsQuery>;

export const SessionEventsPage = z.object({
  userId: Id,
  sessionId: Id,
  events: z.array(MemoryEvent),
  /** The `after` of the next page; null on the last one. */
  next: z.number().int().positive().nullable(),
});
export type SessionEventsPage = z.infer<typeof SessionEventsPage>;

/** POST /users/{u}/sessions/{s}/handoffs */
export const HandoffBody = z.object({
  fromAgentId: Id,
  toAgentId: Id,
  /** What the receiver should know or do next. */
  note: Text.min(1).max(4000).optional(),
  /** Detail-memory keys passed along: the receiver may read them even when they are the sender's private memory. */
  memoryKeys: z.array(Id).max(100).default([]),
  /** Makes a retried request harmless (generated when absent). */
  handoffId: Id.optional(),
}).strict().refine((b) => b.fromAgentId !== b.toAgentId, { message: 'an agent cannot hand over to itself', path: ['toAgentId'] });
export type HandoffBody = z.infer<typeof HandoffBody>;

export const HandoffResult = z.object({ handoffId: Id, seq: z.number().int().positive() });
export type HandoffResult = z.infer<typeof HandoffResult>;
