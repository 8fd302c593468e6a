import type { Meter, ModelUsage } from './ports.js';

export interface OperationTotals {
  calls: number;
  failures: number;
  inputTokens: number;
  outputTokens: number;
  totalLatencyMs: number;
}

/** Counts every model call per operation, for /health and logs (counts only, never text). */
export class UsageMeter implements Meter {
  private readonly totals = new Map<string, OperationTotals>();

  record(usage: ModelUsage): void {
    const t = this.totals.get(usage.operation) ?? { calls: 0, failures: 0, inputTokens: 0, outputTokens: 0, totalLatencyMs: 0 };
    t.calls += 1;
    if (!usage.ok) t.failures += 1;
    t.inputTokens += usage.inputTokens;
    t.outputTokens += usage.outputTokens;
    t.totalLatencyMs += usage.latencyMs;
    this.totals.set(usage.operation, t);
  }

  snapshot(): Record<string, OperationTotals> {
    return Object.fromEntries([...this.totals].map(([op, t]) => [op, { ...t, totalLatencyMs: Math.round(t.totalLatencyMs) }]));
  }
}
