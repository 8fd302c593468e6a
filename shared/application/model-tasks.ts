import { z } from 'zod';
import { WindowMetadata } from '../contracts/interactions.js';

/** Which deployment answers: `chat` (reflection, synthesis) or `mini` (metadata, retrieval agent). */
export type ModelTier = 'chat' | 'mini';

export const Importance = z.enum(['high', 'medium', 'low']);

export const SessionSummary = z.object({
  summary: z.string().min(1),
  keyTopics: z.array(z.string()).max(10),
});
export type SessionSummary = z.infer<typeof SessionSummary>;

export const ExtractedInsight = z.object({
  category: z.string().min(1),
  text: z.string().min(1),
  confidence: z.number().min(0).max(1),
  importance: Importance,
});
export type ExtractedInsight = z.infer<typeof ExtractedInsight>;

export const SessionInsights = z
  .object({
    reflectionFlag: z.enum(['insight', 'no-insight']),
    insights: z.array(ExtractedInsight).max(30),
  })
  .refine((r) => (r.reflectionFlag === 'no-insight') === (r.insights.length === 0), 'reflectionFlag must be no-insight exactly when insights is empty');
export type SessionInsights = z.infer<typeof SessionInsights>;

export const LongTermProfile = z.object({
  profile: z.string().min(1),
  /** Insights contradicted by newer ones: kept, marked superseded. */
  supersededInsightIds: z.array(z.string()),
});
export type LongTermProfile = z.infer<typeof LongTermProfile>;

export const ArtifactDescription = z.object({ description: z.string().min(1).max(400) });
export type ArtifactDescription = z.infer<typeof ArtifactDescription>;

/**
 * The structured tasks the pipelines ask of a chat model: each has an input, a zod output schema every adapter's
 * answer is validated against, and the deployment tier it runs on. Prompts for LLM adapters live in prompts.ts;
 * the offline model answers the same tasks deterministically.
 */
export const CHAT_TASKS = {
  /** One interaction's k turns: summary, topics, entities, and the cumulative summary extended by them — one call. */
  windowMetadata: {
    tier: 'mini',
    input: z.object({ conversation: z.string(), previousSummary: z.string() }),
    output: WindowMetadata,
  },
  /** A finished session: its summary (shown in later sessions' init block) and key topics. */
  sessionSummary: {
    tier: 'mini',
    input: z.object({ conversation: z.string() }),
    output: SessionSummary,
  },
  /** Session reflection: insights in the configured categories, or `no-insight`. */
  sessionInsights: {
    tier: 'chat',
    input: z.object({ conversation: z.string(), categories: z.array(z.string()).min(1) }),
    output: SessionInsights,
  },
  /** Long-term reflection: the current profile plus new insights (oldest first) → the new profile. Newer wins. */
  longTermProfile: {
    tier: 'chat',
    input: z.object({
      currentProfile: z.string(),
      insights: z.array(z.object({ id: z.string(), category: z.string(), text: z.string(), createdAt: z.string() })),
    }),
    output: LongTermProfile,
  },
  /** An artifact: a goal-aware one-sentence description of its content (its MemoryRef description). */
  compactArtifact: {
    tier: 'mini',
    input: z.object({ goal: z.string().min(1), contentKind: z.string(), excerpt: z.string(), pluginDescription: z.string() }),
    output: ArtifactDescription,
  },
} as const satisfies Record<string, { tier: ModelTier; output: z.ZodType; input: z.ZodType }>;

export type ChatTaskName = keyof typeof CHAT_TASKS;
export type ChatTaskInput<K extends ChatTaskName> = z.infer<(typeof CHAT_TASKS)[K]['input']>;
export type ChatTaskOutput<K extends ChatTaskName> = z.infer<(typeof CHAT_TASKS)[K]['output']>;
