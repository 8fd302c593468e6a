import { z } from 'zod';
import { Id } from './ids.js';
import { SCHEMA_VERSION } from './events.js';

/** What a model says about one interaction's turns (and the running summary it extends). */
export const WindowMetadata = z.object({
  summary: z.string().min(1),
  topics: z.array(z.string()).max(8),
  entities: z.array(z.string()).max(24),
  cumulativeSummary: z.string().min(1),
});
export type WindowMetadata = z.infer<typeof WindowMetadata>;

/** One interaction: k consecutive turns of a session, flattened for search. Its id is derived from its first seq, so re-projection overwrites. */
export const InteractionDocument = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.string(),
  userId: Id,
  sessionId: Id,
  agentIds: z.array(Id),
  turnIds: z.array(Id),
  seqRange: z.tuple([z.number().int().positive(), z.number().int().positive()]),
  startedAt: z.iso.datetime(),
  endedAt: z.iso.datetime(),
  content: z.string(),
  summary: z.string(),
  topics: z.array(z.string()),
  entities: z.array(z.string()),
  embeddingModel: z.string(),
  contentVector: z.array(z.number()),
  summaryVector: z.array(z.number()),
  createdAt: z.iso.datetime(),
});
export type InteractionDocument = z.infer<typeof InteractionDocument>;
