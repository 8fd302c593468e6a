import { z } from 'zod';

const OperationTotals = z.object({
  calls: z.number().int().nonnegative(),
  failures: z.number().int().nonnegative(),
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  totalLatencyMs: z.number().int().nonnegative(),
});

/** GET /health: liveness, backends and model-call counts per operation type; nothing per user. */
export const HealthResponse = z.object({
  status: z.literal('ok'),
  storage: z.enum(['pglite', 'postgres', 'cosmos']),
  models: z.object({ chat: z.string(), embeddings: z.string(), dimensions: z.number().int().positive() }),
  memory: z.object({ kTurnBuffer: z.number().int(), nActiveTurns: z.number().int(), numRecentSessions: z.number().int(), topKFacts: z.number().int() }),
  /** Model calls per operation (`calls`, `failures`, tokens, latency). */
  modelCalls: z.record(z.string(), OperationTotals),
  /** Events the projection could not apply and set aside; each session's status lists its own. */
  projection: z.object({ setAsideEvents: z.number().int().nonnegative() }),
  /**
   * With MEMORY_BUDGET_MB: `ok`, `shedding` (over 80% of the budget: caches dropped) or `overloaded` (over 90%: appends
   * answered 503 `overloaded`), with the budget and the last reading of the resident set, in MB.
   */
  memoryBudget: z.object({ state: z.enum(['ok', 'shedding', 'overloaded']), budgetMb: z.number().int(), rssMb: z.number().int() }).optional(),
});
export type HealthResponse = z.infer<typeof HealthResponse>;
