/**
 * Session-end figures (issue 5): end-to-end latency of the session-end orchestration for a 100-turn session on the
 * local durable runner (in-memory PGlite, offline models), and the model calls one session end makes.
 *
 *   node_modules/.bin/tsx test/bench/session-end.ts      # prints JSON
 *
 * `benchSessionEnd()` returns the figures for `npm run bench`. Knobs (env): BENCH_SESSION_END_TURNS (100),
 * BENCH_SESSION_END_RUNS (5).
 */
import { performance } from 'node:perf_hooks';
import azure from '@azure/functions';
import { pathToFileURL } from 'node:url';
import { appendTurns } from '../../shared/application/append-turns.js';
import { projectSession } from '../../shared/application/project-session.js';
import { createRuntime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { useRuntime } from '../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../shared/platform/durable.js';
import { disableAzureRegistration } from '../../shared/platform/functions.js';
import { LocalDurableRunner } from '../../shared/platform/local-host/durable-runner.js';
import { MemoryDurableStateStore } from '../../shared/platform/local-host/durable-state.js';
import { loadFunctions } from '../../shared/platform/local-host/functions.js';

const LINES = [
  "I'm 45 and married with two kids.",
  'My goal is to retire at 60 and travel.',
  "I'm a conservative investor and can't stomach big losses.",
  "I'm worried that healthcare costs could make us run out of money.",
  'I have $200,000 in my 401k and a mortgage.',
  'Please email me rather than call.',
  'What do you think about index funds for the rest?',
];

export async function benchSessionEnd(): Promise<Record<string, number>> {
  const turnsPerSession = Number(process.env.BENCH_SESSION_END_TURNS ?? 100);
  const runs = Number(process.env.BENCH_SESSION_END_RUNS ?? 5);
  disableAzureRegistration();
  const runtime = await createRuntime(loadSettings({ MEMORY_DATA_DIR: 'memory://', LOG_LEVEL: 'warning' }));
  useRuntime(runtime);
  const runner = new LocalDurableRunner(await loadFunctions(), new MemoryDurableStateStore(), { delayScale: 0 });
  useLocalOrchestrationClient(runner);
  const { handler } = await import('../../functions/http-session-end.js');

  const latencies: number[] = [];
  const calls: number[] = [];
  const chatCalls: number[] = [];
  try {
    await runtime.embedder.embed(['warm up']);
    for (let r = 0; r < runs; r++) {
      const key = { userId: `bench-user-${r}`, sessionId: 'long' };
      for (let i = 0; i < turnsPerSession; i += 50) {
        const turns = Array.from({ length: Math.min(50, turnsPerSession - i) }, (_, j) => {
          const n = i + j;
          return n % 2 === 0 ? { role: 'user' as const, content: `${LINES[(n / 2) % LINES.length]} (${n})`, turnId: `t${n}` } : { role: 'assistant' as const, content: `Noted point ${n}.`, turnId: `t${n}` };
        });
        await appendTurns(runtime, key, { turns });
      }
      // The change feed has projected the full windows before the end (as in steady state).
      await projectSession(runtime, key);
      const before = runtime.meter.snapshot();
      const started = performance.now();
      const req = new azure.HttpRequest({ method: 'POST', url: `http://localhost/api/v1/users/${key.userId}/sessions/long/end`, params: key });
      const ctx = new azure.InvocationContext({ functionName: 'http-session-end', invocationId: `b${r}`, logHandler: () => undefined });
      const res = await handler(req, ctx);
      const { operationId } = res.jsonBody as { operationId: string };
      const done = await runner.waitFor(operationId);
      latencies.push(performance.now() - started);
      if (done.status !== 'completed') throw new Error(`session end failed: ${done.error ?? ''}`);
      const after = runtime.meter.snapshot();
      const delta = (pick: (op: string) => boolean) => Object.entries(after).filter(([op]) => pick(op)).reduce((n, [op, t]) => n + t.calls - (before[op]?.calls ?? 0), 0);
      calls.push(delta(() => true));
      chatCalls.push(delta((op) => op !== 'embed'));
    }
  } finally {
    await runner.stop();
    useLocalOrchestrationClient(undefined);
    await runtime.close();
  }
  const sorted = [...latencies].sort((a, b) => a - b);
  const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return {
    sessionEndTurns: turnsPerSession,
    sessionEndRuns: runs,
    sessionEndLatencyP50Ms: Math.round(pct(0.5)),
    sessionEndLatencyMaxMs: Math.round(sorted.at(-1)!),
    modelCallsPerSessionEnd: calls[0]!,
    chatCallsPerSessionEnd: chatCalls[0]!,
    embedCallsPerSessionEnd: calls[0]! - chatCalls[0]!,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchSessionEnd(), null, 2));
}
