import { z } from 'zod';
import { Text } from './text.js';
import { Id } from './ids.js';
import { SCHEMA_VERSION } from './events.js';

export const InsightImportance = z.enum(['high', 'medium', 'low']);

/** `session`: from one session's reflection; `aggregate`: from several no-insight sessions reflected on together. */
export const InsightType = z.enum(['session', 'aggregate']);
export type InsightType = z.infer<typeof InsightType>;

/**
 * `pending`: not yet in the long-term profile; `processed`: folded into it; `superseded`: contradicted by newer
 * information (kept, not deleted); `merged`: a near-duplicate of `mergedInto`.
 */
export const InsightStatus = z.enum(['pending', 'processed', 'superseded', 'merged']);
export type InsightStatus = z.infer<typeof InsightStatus>;

/** One insight about the user. Its id is derived from its source and content, so a repeated reflection rewrites it. */
export const InsightDocument = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.string(),
  userId: Id,
  type: InsightType,
  /** The session it came from (the first one, for an aggregate). */
  sessionId: Id,
  sourceSessionIds: z.array(Id),
  category: z.string(),
  text: z.string(),
  confidence: z.number().min(0).max(1),
  importance: InsightImportance,
  status: InsightStatus,
  supersededBy: z.string().optional(),
  mergedInto: z.string().optional(),
  embeddingModel: z.string(),
  insightVector: z.array(z.number()),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
});
export type InsightDocument = z.infer<typeof InsightDocument>;

/** The single long-term profile of a user (id `profile` in the user's partition of `insights`). */
export const ProfileDocument = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION),
  id: z.literal('profile'),
  userId: Id,
  type: z.literal('long_term'),
  profile: z.string(),
  /** Every insight the profile was built from. */
  sourceInsightIds: z.array(z.string()),
  version: z.number().int().positive(),
  updatedAt: z.iso.datetime(),
});
export type ProfileDocument = z.infer<typeof ProfileDocument>;

/** GET /users/{u}/insights?type=&status=&category=&sessionId= */
export const InsightsQuery = z.object({
  type: InsightType.optional(),
  status: InsightStatus.optional(),
  category: Text.min(1).max(64).optional(),
  sessionId: Id.optional(),
});
export type InsightsQuery = z.infer<typeof InsightsQuery>;

/** An insight as the API returns it (no vector). */
export const InsightView = InsightDocument.omit({ insightVector: true });
export type InsightView = z.infer<typeof InsightView>;

/** GET /users/{u}/insights, oldest first. */
export const InsightList = z.object({ insights: z.array(InsightView) });
