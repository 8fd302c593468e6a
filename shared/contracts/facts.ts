import { z } from 'zod';
import { Id } from './ids.js';
import { Instant, ordered, ORDERED_RANGE, Text } from './text.js';

/**
 * Where a fact comes from: `turns` (single turns), `interactions` (k consecutive turns each), `artifacts` (offloaded turns and stored content),
 * `insights` (insights reflected from sessions; superseded and merged ones are never returned) and `sessionSummaries`
 * (the summary written when a session ends). A search without `sources` searches all of them.
 */
export const FactSource = z.enum(['turns', 'interactions', 'artifacts', 'insights', 'sessionSummaries']);
export type FactSource = z.infer<typeof FactSource>;

/** Which rankings feed the fusion; both by default. One alone is useful for evaluation and debugging. */
export const Retriever = z.enum(['fulltext', 'vector']);
export type Retriever = z.infer<typeof Retriever>;

export const FactSearchBody = z
  .object({
    query: Text.trim().min(1).max(4_000),
    topK: z.number().int().min(1).max(100).optional(),
    maxTokens: z.number().int().min(16).max(100_000).optional(),
    sources: z.array(FactSource).min(1).optional(),
    retrievers: z.array(Retriever).min(1).optional(),
    sessionId: Id.optional(),
    agentId: Id.optional(),
    from: Instant.optional(),
    to: Instant.optional(),
    /** Drop facts whose normalised score (best = 1) is below this. */
    minScore: z.number().min(0).max(1).optional(),
    mode: z.enum(['search', 'agent']).default('search'),
  })
  .strict()
  .refine(ordered, ORDERED_RANGE);
export type FactSearchBody = z.infer<typeof FactSearchBody>;

export const Fact = z.object({
  id: z.string(),
  source: FactSource,
  text: z.string(),
  /** Fused relevance normalised so the best fact of the answer scores 1. */
  score: z.number(),
  /** Absent only for an artifact stored outside any session. An aggregate insight: the first of its `sessionIds`. */
  sessionId: Id.optional(),
  agentId: Id.optional(),
  /**
   * The clients' turn ids the fact comes from, in order (an offloaded turn's artifact: that turn). Insights and
   * session summaries are drawn from a whole session and record no turns: `[]`, and `seqRange` says which turns.
   */
  turnIds: z.array(Id),
  /**
   * First and last seq of the turns the fact covers. A session summary, and an insight of one session: the session's
   * turns (seq 1 to its last turn). Absent for artifacts and aggregate insights (drawn from several sessions).
   */
  seqRange: z.tuple([z.number().int(), z.number().int()]).optional(),
  /** Aggregate insights only: every session the insight was drawn from. */
  sessionIds: z.array(Id).optional(),
  /** Artifacts: the key to retrieve the full content with GET /memories/{key}. */
  memoryKey: z.string().optional(),
  /**
   * When the turns happened (first turn; a session summary: the session's first turn), when the artifact was stored,
   * or for an insight when the turns it was drawn from ended (its `createdAt`). `from` / `to` filter on this time.
   */
  timestamp: z.iso.datetime(),
  tokens: z.number().int(),
});
export type Fact = z.infer<typeof Fact>;

export const FactSearchResult = z.object({
  facts: z.array(Fact),
  answer: z.string().optional(),
  tokens: z.number().int(),
});
export type FactSearchResult = z.infer<typeof FactSearchResult>;

/**
 * The OpenAI tool definition an agent registers to call fact search (`retrieve_user_facts`): its arguments are the
 * search body's `query`, `topK` and `mode`; the agent's host adds the user id and POSTs them to /facts/search.
 */
export const RETRIEVE_USER_FACTS_TOOL = {
  type: 'function',
  function: {
    name: 'retrieve_user_facts',
    description: "Retrieve relevant facts about the user from long-term memory (past conversations, insights). Use it when the answer depends on something the user said before.",
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for, as a question or keywords' },
        topK: { type: 'integer', minimum: 1, maximum: 100, description: 'How many facts to return (default 5)' },
        mode: { type: 'string', enum: ['search', 'agent'], description: "'agent' also returns a synthesised answer" },
      },
      required: ['query'],
      additionalProperties: false,
    },
  },
} as const;
