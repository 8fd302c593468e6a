import { appendTurns } from '../../shared/application/append-turns.js';
import { projectSession } from '../../shared/application/project-session.js';
import { createRuntime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';

/**
 * Offline model figures: sentence-encoder throughput for turn-sized and window-sized texts, the longest this thread
 * went without running a 5 ms timer while the model thread embedded (the request-serving thread stays free), and model
 * calls per 100 ingested turns when the projection runs after every 10-turn append (as the pump does).
 */
export async function benchModels(): Promise<Record<string, number>> {
  const runtime = await createRuntime(loadSettings({ ...process.env, MEMORY_DATA_DIR: 'memory://' }));
  try {
    const sentence = (i: number) => `Turn ${i}: we talked about the budget for the trip to Lisbon and the dog sitter.`;
    await runtime.embedder.embed(['warm up']);
    const short = Array.from({ length: 64 }, (_, i) => sentence(i));
    let t0 = performance.now();
    const stallMs = await longestStall(() => runtime.embedder.embed(short));
    const shortPerSecond = short.length / ((performance.now() - t0) / 1000);
    const windows = Array.from({ length: 8 }, (_, w) => Array.from({ length: 10 }, (_, i) => `user: ${sentence(w * 10 + i)} ${sentence(i)}`).join('\n'));
    t0 = performance.now();
    await runtime.embedder.embed(windows);
    const windowPerSecond = windows.length / ((performance.now() - t0) / 1000);

    const before = runtime.meter.snapshot();
    const key = { userId: 'bench-models', sessionId: 's1' };
    for (let i = 0; i < 100; i += 10) {
      await appendTurns(runtime, key, { turns: Array.from({ length: 10 }, (_, j) => ({ role: j % 2 ? 'assistant' : 'user', content: sentence(i + j) })) });
      await projectSession(runtime, key);
    }
    const after = runtime.meter.snapshot();
    const calls = (op: string) => (after[op]?.calls ?? 0) - (before[op]?.calls ?? 0);
    return {
      embedShortTextsPerSecond: Math.round(shortPerSecond),
      embedLongestStallMs: Math.round(stallMs),
      embedWindowTextsPerSecond: Number(windowPerSecond.toFixed(1)),
      chatCallsPer100Turns: calls('windowMetadata'),
      embedCallsPer100Turns: calls('embed'),
      windowsPer100Turns: 100 / runtime.memory.kTurnBuffer,
    };
  } finally {
    await runtime.close();
  }
}

/** The longest this thread went without running a 5 ms interval timer while `work` ran (ms). */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let stallMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    await work();
    return Math.max(stallMs, performance.now() - last);
  } finally {
    clearInterval(tick);
  }
}
