/**
 * Fair projection (issue 18 item 4): one user's backlog must not hold up another user's turn. User A's backlog of
 * BENCH_FAIRNESS_EVENTS turns (in one session, or over BENCH_FAIRNESS_SESSIONS, appended 10 turns at a time to each in
 * turn, so that every change-feed batch brings each session less than a slice) is appended while the projection is
 * held back; then the projection starts and, one after another, BENCH_FAIRNESS_PROBES new users append one turn each
 * over HTTP. Prints each new turn's append→projected
 * latency and A's progress meanwhile (events/s), on the local host's own components: PGlite in a temp folder, the
 * change-feed pump, the projection queue with its scheduler loop, and the offline models (USE-lite embeddings and the
 * extractive chat model, warmed up first). Asserts nothing.
 *
 *   npx tsx test/bench/fairness.ts
 *
 * Knobs (env): BENCH_FAIRNESS_EVENTS (100000), BENCH_FAIRNESS_SESSIONS (1), BENCH_FAIRNESS_PROBES (5),
 * BENCH_FAIRNESS_INTERVAL_SECONDS (5: between probes), BENCH_FAIRNESS_TIMEOUT_SECONDS (120: a probe not projected by
 * then is reported as such).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EventDraft } from '../../shared/contracts/events.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { ProjectionControl } from './projection-control.js';
import { now, round, summarize } from './stats.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'memory-fairness-'));
process.env.MEMORY_DATA_DIR = path.join(root, 'host');
process.env.LOG_LEVEL = 'warning';

const envNumber = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};
const EVENTS = Math.round(envNumber('BENCH_FAIRNESS_EVENTS', 100_000));
const SESSIONS = Math.round(envNumber('BENCH_FAIRNESS_SESSIONS', 1));
const PROBES = Math.round(envNumber('BENCH_FAIRNESS_PROBES', 5));
const INTERVAL_MS = envNumber('BENCH_FAIRNESS_INTERVAL_SECONDS', 5) * 1000;
const TIMEOUT_MS = envNumber('BENCH_FAIRNESS_TIMEOUT_SECONDS', 120) * 1000;

const busy = Array.from({ length: SESSIONS }, (_, s) => ({ userId: 'busy-user', sessionId: SESSIONS === 1 ? 'backlog' : `backlog-${s + 1}` }));
const TOPICS = ['the garden plan', 'the mortgage rate', 'a trip to Lisbon', 'the quarterly report', 'a new puppy', 'night shifts'];
const turn = (i: number, session = 0): EventDraft => ({
  type: 'TurnAppended',
  data: { turnId: `t-${i}`, role: i % 2 ? 'assistant' : 'user', content: `Turn ${i}${session ? ` of session ${session}` : ''}: a few words about ${TOPICS[i % TOPICS.length]} and what to do next.`, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 86_400)).toISOString() },
});

/** Events of the session folded into its document (0 before its first projection). */
const projected = async (runtime: Runtime, key: { userId: string; sessionId: string }) => (await runtime.sessions.get(key))?.doc.projectedThroughSeq ?? 0;

/** Events of A's sessions folded into their documents. */
const busyProjected = async (runtime: Runtime) => (await Promise.all(busy.map((key) => projected(runtime, key)))).reduce((a, b) => a + b, 0);

async function main(): Promise<void> {
  const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
  const host = await startLocalHost({ port: 0, timers: false });
  const { runtime } = host;
  const control = new ProjectionControl(runtime);
  try {
    await runtime.embedder.embed(['warm up']);
    await runtime.chat.run('windowMetadata', { conversation: 'user: warm up', previousSummary: '' });
    await control.pause();
    let start = now();
    const perSession = Math.ceil(EVENTS / SESSIONS);
    const step = SESSIONS === 1 ? 1000 : 10;
    for (let i = 0; i < perSession; i += step) {
      for (const [s, key] of busy.entries()) await runtime.events.append(key, Array.from({ length: Math.min(step, perSession - i) }, (_, j) => turn(i + j + 1, SESSIONS === 1 ? 0 : s + 1)), new Date());
    }
    console.log(`A's backlog: ${perSession * SESSIONS} turns over ${SESSIONS} session(s) appended in ${round((now() - start) / 1000, 1)} s with the projection held back`);

    control.resume();
    start = now();
    // When the change-feed pump has read through A's backlog (queueing only): the feed's own lag, apart from projection.
    let feedReadS: number | undefined;
    const feedWatch = (async () => {
      while ((await control.backlog()) - (await runtime.projectionQueue.size()) > 0) await sleep(50);
      feedReadS = (now() - start) / 1000;
    })();
    const latencies: number[] = [];
    const missed: number[] = [];
    for (let p = 1; p <= PROBES; p++) {
      await sleep(p === 1 ? 0 : INTERVAL_MS);
      const key = { userId: `new-user-${p}`, sessionId: 's1' };
      const sent = now();
      const response = await fetch(`${host.url}/v1/users/${key.userId}/sessions/${key.sessionId}/turns`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ turns: [{ role: 'user', content: `Hello, I am new user ${p}.`, turnId: 'hello' }] }),
      });
      if (response.status !== 202) throw new Error(`append answered ${response.status}`);
      // Projected: the turn and the init block the projection decides for it are folded into the session document.
      while ((await projected(runtime, key)) < (await runtime.events.lastSeq(key)) || (await projected(runtime, key)) === 0) {
        if (now() - sent > TIMEOUT_MS) break;
        await sleep(10);
      }
      const ms = now() - sent;
      if (ms > TIMEOUT_MS) missed.push(p);
      else latencies.push(ms);
      const a = await busyProjected(runtime);
      console.log(`probe ${p}: new user's turn projected ${ms > TIMEOUT_MS ? `not within ${TIMEOUT_MS / 1000} s` : `in ${round(ms / 1000, 2)} s`}; A projected ${a} events (${round(a / ((now() - start) / 1000), 1)} events/s since the start)`);
    }
    await feedWatch;
    const seconds = (now() - start) / 1000;
    const aProjected = await busyProjected(runtime);
    const summary = summarize(latencies);
    console.log(
      JSON.stringify({
        backlogEvents: EVENTS,
        backlogSessions: SESSIONS,
        probes: PROBES,
        newTurnLatencyS: { p50: round(summary.p50 / 1000, 2), max: round(summary.max / 1000, 2), samples: latencies.map((ms) => round(ms / 1000, 2)), missed },
        feedReadThroughS: feedReadS === undefined ? null : round(feedReadS, 2),
        busyProjectedEvents: aProjected,
        busyEventsPerSecond: round(aProjected / seconds, 1),
        seconds: round(seconds, 1),
        queued: await runtime.projectionQueue.size(),
        settings: { sliceEvents: runtime.projection.sliceEvents, parallelism: runtime.projection.parallelism },
        models: { embedder: runtime.embedder.model, chat: runtime.chat.model },
        loadAverage: os.loadavg().map((l) => round(l, 2)),
      }),
    );
  } finally {
    control.dispose();
    await host.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
