import { z } from 'zod';
import { Id } from './ids.js';
import { SCHEMA_VERSION } from './events.js';

export const SessionStatusValue = z.enum(['active', 'ending', 'completed']);
export const ReflectionStatus = z.enum(['pending', 'no-insight', 'processed']);

/** The session projection: everything derived from a session's events, rebuilt by the projector. */
export const SessionDocument = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  userId: Id,
  sessionId: Id,
  status: SessionStatusValue,
  reflectionStatus: ReflectionStatus,
  /** Highest event seq folded into this document. */
  projectedThroughSeq: z.number().int().nonnegative(),
  /** Turns up to this seq are covered by `cumulativeSummary` and by interaction documents. */
  chunkedThroughSeq: z.number().int().nonnegative(),
  cumulativeSummary: z.string(),
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
  keyTopics: z.array(z.string()).optional(),
  summaryVector: z.array(z.number()).optional(),
  embeddingModel: z.string().optional(),
  endedAt: z.iso.datetime().optional(),
  /** The init block (profile, recent session summaries), fixed the first time the session's context is read. */
  init: z.object({ profile: z.string().nullable(), recentSessions: z.array(z.object({ sessionId: Id, endedAt: z.iso.datetime(), summary: z.string() })) }).optional(),
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
  /** Events recorded but not yet folded into the projection. */
  pending: z.number().int().nonnegative(),
  turnCount: z.number().int().nonnegative(),
  agentIds: z.array(Id),
  startedAt: z.iso.datetime().nullable(),
  lastTurnAt: z.iso.datetime().nullable(),
  summary: z.string(),
});
export type SessionStatus = z.infer<typeof SessionStatus>;
