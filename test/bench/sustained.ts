/**
 * `npx tsx test/bench/sustained.ts`: does the projection keep up (issue 18)? Prints figures, asserts nothing.
 *
 *   hosted   The local host with the OpenAI adapters pointed at a scripted OpenAI-compatible server (in a child
 *            process, model-stand-in.ts) that answers every chat and embedding call after a fixed delay (200 ms; up to
 *            256 texts per embedding call). Appends are offered over HTTP, by a client in another child process, at
 *            a steady rate for a while; every second the backlog (events not yet projected) and the memory (the
 *            service's alone: RSS, this thread's heap, external memory, PGlite's WASM memory) are sampled, from a baseline
 *            read after a full collection (the store made beforehand, so the host reopens it as after a restart), with
 *            the parse threads' start told apart; after the load, the time until
 *            the backlog is drained, every window summarised too; the event loop's delay over it all (how long the
 *            service's thread kept a timer waiting). Then where the time went:
 *            PGlite statements by kind (executed one at a time, so their sum is the database's busy time), model
 *            calls as the scripted server saw them, and insert probes (the turn index's and the interactions' rows inserted with
 *            every index and without each).
 *   offline  The offline models: a backlog appended first, then projected alone by the pump and the queue's timer as
 *            the local host runs them (turns/s; after a warm-up session, as the embedder alone is warmed), against the
 *            embedder's own throughput on the same texts, alone, with MODEL_THREADS right after the projection (both
 *            sides at the same load), then with one model thread.
 *
 * Knobs (env): BENCH_SUSTAINED_PARTS (hosted,offline), BENCH_SUSTAINED_RATE (1000 turns/s), BENCH_SUSTAINED_SECONDS
 * (300), BENCH_SUSTAINED_BATCH (10 turns per request), BENCH_SUSTAINED_USERS (20), BENCH_SUSTAINED_SESSIONS (10 per
 * user), BENCH_SUSTAINED_DELAY_MS (200), BENCH_SUSTAINED_DRAIN_SECONDS (120: the most it waits for the drain),
 * BENCH_OFFLINE_TURNS (2000), BENCH_OFFLINE_RUNS (1: more repeat the offline part, each on a new store, and print the
 * ratios' median; on a shared machine one run's ratio moves by several points), BENCH_CLIENT (fetch | node). Every app
 * setting in the environment reaches the host (PROJECTION_PARALLELISM, PUMP_BATCH_SIZE, EMBEDDING_*, MODEL_THREADS, a
 * memory budget, ...); the bench sets PROJECTION_PARALLELISM=64 and PUMP_BATCH_SIZE=2000 for the hosted part unless
 * they are given.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import v8 from 'node:v8';
import vm from 'node:vm';
import { accountRuntime, formatAccounting } from './accounting.js';
import { LoadClient, type ClientKind } from './load-client.js';
import { capturePgliteMemory, type MemoryParts } from './pglite-memory.js';
import { dbOf, PROJECTOR } from './projection-control.js';
import { now, round, summarize } from './stats.js';
import { startModelStandIn } from './model-stand-in.js';
import type { Runtime } from '../../shared/platform/composition.js';
import type { TimerHandler } from '../../shared/platform/functions.js';

const envNumber = (name: string, fallback: number) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};
const PARTS = (process.env.BENCH_SUSTAINED_PARTS ?? 'hosted,offline').split(',').map((p) => p.trim());
const RATE = envNumber('BENCH_SUSTAINED_RATE', 1000);
const SECONDS = envNumber('BENCH_SUSTAINED_SECONDS', 300);
const BATCH = Math.round(envNumber('BENCH_SUSTAINED_BATCH', 10));
const USERS = Math.round(envNumber('BENCH_SUSTAINED_USERS', 20));
const SESSIONS = Math.round(envNumber('BENCH_SUSTAINED_SESSIONS', 10));
const DELAY_MS = envNumber('BENCH_SUSTAINED_DELAY_MS', 200);
const DRAIN_MS = envNumber('BENCH_SUSTAINED_DRAIN_SECONDS', 120) * 1000;
const OFFLINE_TURNS = Math.round(envNumber('BENCH_OFFLINE_TURNS', 2000));
const OFFLINE_RUNS = Math.round(envNumber('BENCH_OFFLINE_RUNS', 1));
const CLIENT: ClientKind = process.env.BENCH_CLIENT === 'node' ? 'node' : 'fetch';

/** The environment as given: the hosted part sets its own settings in process.env, the offline part starts from this. */
const GIVEN_ENV = { ...process.env };
process.env.LOG_LEVEL = 'warning';
const root = mkdtempSync(path.join(os.tmpdir(), 'memory-sustained-'));
const load1m = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const mb = (bytes: number) => Math.round(bytes / 2 ** 20);
const wall = () => performance.timeOrigin + performance.now();

/** The threads this process started with besides the main one: V8's platform workers (garbage collection, compilers) and libuv's. */
const startupThreads = new Set(existsSync('/proc/self/task') ? readdirSync('/proc/self/task') : []);

/**
 * CPU seconds each thread of this process has used (Linux, `/proc/self/task/<tid>/stat`), summed by thread name, the
 * main thread and the threads it started with apart (Node names every thread "node"): under foreign load wall-clock
 * ratios mislead, core-seconds do not. Empty where there is no /proc.
 */
function threadCpu(): Map<string, number> {
  const cpu = new Map<string, number>();
  const tick = 100; // USER_HZ, 100 on Linux
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name =
        tid === String(process.pid) ? 'main thread' : startupThreads.has(tid) ? 'V8 and libuv helpers' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(name, (cpu.get(name) ?? 0) + (Number(fields[11]) + Number(fields[12])) / tick);
    }
  } catch {
    // No /proc: nothing to add to the figures.
  }
  return cpu;
}
/** The CPU seconds per thread name used between `since` and now (threads ended meanwhile are not counted). */
const cpuSince = (since: Map<string, number>): string =>
  [...threadCpu()]
    .map(([name, s]) => [name, s - (since.get(name) ?? 0)] as const)
    .filter(([, s]) => s >= 0.05)
    .sort((a, b) => b[1] - a[1])
    .map(([name, s]) => `${name} ${s.toFixed(1)} s`)
    .join(', ');

/** The process's memory by part, in MB. */
const readMemory = (wasmBytes: () => number): MemoryParts => {
  const m = process.memoryUsage();
  return { rss: mb(m.rss), heapUsed: mb(m.heapUsed), heapTotal: mb(m.heapTotal), external: mb(m.external), arrayBuffers: mb(m.arrayBuffers), wasm: mb(wasmBytes()) };
};
const formatMemory = (m: MemoryParts) => `rss=${m.rss} heap used/total ${m.heapUsed}/${m.heapTotal} external ${m.external} (array buffers ${m.arrayBuffers}) PGlite WASM ${m.wasm} MB`;
const maxOf = (readings: MemoryParts[]): MemoryParts => {
  const max = { ...readings[0]! };
  for (const r of readings) for (const k of Object.keys(max) as (keyof MemoryParts)[]) max[k] = Math.max(max[k], r[k]);
  return max;
};

/** A full garbage collection of this thread's heap, without `node --expose-gc` (the bench runs under plain tsx). */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}

/** Model calls the meter recorded as failed, over every operation. */
const failedModelCalls = (runtime: Runtime): number => Object.values(runtime.meter.snapshot()).reduce((n, op) => n + (op?.failures ?? 0), 0);

async function hosted(): Promise<void> {
  const server = await startModelStandIn(DELAY_MS);
  Object.assign(process.env, {
    MEMORY_DATA_DIR: path.join(root, 'hosted'),
    LOG_LEVEL: 'warning',
    MODEL_PROVIDER: 'openai',
    OPENAI_BASE_URL: server.baseURL,
    OPENAI_API_KEY: 'bench',
    EMBEDDING_DIMENSIONS: process.env.EMBEDDING_DIMENSIONS ?? '512',
    PROJECTION_PARALLELISM: process.env.PROJECTION_PARALLELISM ?? '64',
    PUMP_BATCH_SIZE: process.env.PUMP_BATCH_SIZE ?? '2000',
  });
  // The store is made first, on a thread of its own that then ends, so the host reopens it as after a restart: PGlite's
  // initdb grows its memory by hundreds of MB that it keeps (the RSS at start moved from 530 to 1,096 MB between runs
  // with it), and a baseline read after that would hide as much growth under the load.
  const { openPglite } = await import('../../shared/adapters/postgres/db.js');
  const { migrate } = await import('../../shared/adapters/postgres/migrations.js');
  const store = await openPglite(process.env.MEMORY_DATA_DIR, { ownThread: true });
  await migrate(store);
  await store.close();
  const wasmBytes = await capturePgliteMemory();
  const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
  const { modelThreads } = await import('../../shared/platform/config.js');
  const host = await startLocalHost({ port: 0, timers: false });
  const { runtime } = host;
  const client = new LoadClient(host.url, 256);
  const s = runtime.settings;
  console.log(
    `\nhosted stand-in: ${RATE} turns/s for ${SECONDS} s (${BATCH} turns/request, ${USERS} users × ${SESSIONS} sessions), models answer after ${DELAY_MS} ms; ` +
      `PROJECTION_PARALLELISM=${s.PROJECTION_PARALLELISM} PUMP_BATCH_SIZE=${s.PUMP_BATCH_SIZE} EMBEDDING_BATCH_TEXTS=${s.EMBEDDING_BATCH_TEXTS ?? 256} ` +
      `EMBEDDING_CONCURRENCY=${s.EMBEDDING_CONCURRENCY ?? 4} EMBEDDING_DIMENSIONS=${s.EMBEDDING_DIMENSIONS}; load average ${load1m()}`,
  );

  // When each (user, session) became projected through which seq: the projection's session write, wrapped. And the
  // windows each session's latest document leaves to decide: its turns are written before their windows' summaries.
  const projected = new Map<string, { seq: number; at: number }[]>();
  const windowsDue = new Map<string, number>();
  const windowsLeft = () => [...windowsDue.values()].reduce((n, w) => n + w, 0);
  const put = runtime.sessions.put;
  runtime.sessions.put = async (doc, expectedVersion) => {
    const version = await put.call(runtime.sessions, doc, expectedVersion);
    const key = `${doc.userId}/${doc.sessionId}`;
    windowsDue.set(key, doc.windowsDue ?? 0);
    const list = projected.get(key) ?? [];
    if (doc.projectedThroughSeq > (list.at(-1)?.seq ?? 0)) list.push({ seq: doc.projectedThroughSeq, at: wall() });
    projected.set(key, list);
    return version;
  };
  // What each session's stream holds (the appends' seqs, the projector's decisions too), seen as the events are written:
  // the backlog is counted in memory, so sampling it costs the database nothing.
  const appendedThrough = new Map<string, number>();
  const append = runtime.events.append;
  runtime.events.append = async (key, drafts, recordedAt) => {
    const outcomes = await append.call(runtime.events, key, drafts, recordedAt);
    const id = `${key.userId}/${key.sessionId}`;
    appendedThrough.set(id, Math.max(appendedThrough.get(id) ?? 0, ...outcomes.map((o) => o.seq)));
    return outcomes;
  };
  /** Events appended but not yet projected: each session's last seq less the seq its document is projected through. */
  const backlog = () => [...appendedThrough].reduce((n, [id, seq]) => n + Math.max(0, seq - (projected.get(id)?.at(-1)?.seq ?? 0)), 0);
  // Garbage collected before each reading of the baseline: what V8 has not yet collected of the start-up varied by
  // more than 200 MB from run to run (external memory), and garbage in the baseline hides as much growth.
  collectGarbage();
  const rssStart = mb(process.memoryUsage.rss());
  // The parse threads start on the first turns with a time word, seconds into any load: started here, one request on
  // each, so the RSS they take at start is told apart from what grows under the load (both are printed).
  await Promise.all(Array.from({ length: modelThreads(s) }, () => runtime.periods.referredPeriods([{ text: 'We met yesterday.', at: new Date().toISOString() }])));
  collectGarbage();
  const rssThreads = mb(process.memoryUsage.rss());
  console.log(`  the ${modelThreads(s)} parse threads started: RSS ${rssStart} → ${rssThreads} MB; load average ${load1m()}`);
  const account = accountRuntime(runtime);
  const cpuStart = threadCpu();
  let cpuLine = cpuStart;
  const samples: { t: number; backlog: number; memory: MemoryParts }[] = [];
  // How long the service's thread kept timers waiting: the sampler below shares it, so a stall also delays a sample.
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const started = now();
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const memory = readMemory(wasmBytes);
      samples.push({ t: (now() - started) / 1000, backlog: backlog(), memory });
      const last = samples.at(-1)!;
      // A line per 10 s crossed (rounding to a multiple of 10 skipped a line whenever a stall of a second or more fell there).
      if (samples.length === 1 || Math.floor(last.t / 10) > Math.floor(samples.at(-2)!.t / 10) || !sampling) {
        // The threads' CPU since the last line: idle cores while a backlog waits mean the projection waits on something else.
        console.log(`  t=${round(last.t, 0)}s backlog=${last.backlog} events, ${windowsLeft()} windows ${formatMemory(memory)} load ${load1m()}; CPU since: ${cpuSince(cpuLine)}`);
        cpuLine = threadCpu();
      }
      await sleep(1000);
    }
  })();

  const requests = Math.round((RATE * SECONDS) / BATCH);
  const result = await client.run({ kind: 'appendSteady', client: CLIENT, label: 'sus', total: requests, periodMs: (1000 * BATCH) / RATE, sessions: SESSIONS, users: USERS, batch: BATCH });
  const loadEnded = now();
  const loadSeconds = result.elapsedMs / 1000;
  console.log(`  load done: ${result.latencies.length * BATCH} turns in ${round(loadSeconds, 1)} s = ${round((result.latencies.length * BATCH) / loadSeconds, 0)} turns/s, ${result.errors} failed requests; load average ${load1m()}`);

  // Drained: every session projected through its last seq and its last acknowledged one, with no window left to decide.
  const lastSeq = new Map<string, number>();
  for (const a of result.appends) lastSeq.set(`${a.user}/${a.session}`, Math.max(lastSeq.get(`${a.user}/${a.session}`) ?? 0, a.seq));
  const caughtUp = () => [...lastSeq].every(([k, seq]) => (projected.get(k)?.at(-1)?.seq ?? 0) >= seq) && windowsLeft() === 0;
  let drained = false;
  while (now() - loadEnded < DRAIN_MS) {
    if (caughtUp() && backlog() === 0) {
      drained = true;
      break;
    }
    await sleep(100);
  }
  const drainSeconds = (now() - loadEnded) / 1000;
  sampling = false;
  await sampler;
  const accounting = account();
  runtime.sessions.put = put;
  runtime.events.append = append;

  const lags: number[] = [];
  for (const a of result.appends) {
    const at = projected.get(`${a.user}/${a.session}`)?.find((w) => w.seq >= a.seq)?.at;
    if (at !== undefined) lags.push(Math.max(0, at - a.acked));
  }
  const lag = summarize(lags);
  const request = summarize(result.latencies);
  const rss = samples.map((x) => x.memory.rss);
  loopDelay.disable();
  const ms = (ns: number) => round(ns / 1e6);
  const longestGap = Math.max(...samples.slice(1).map((x, i) => x.t - samples[i]!.t));
  console.log(
    `  event-loop delay (load and drain): p50 ${ms(loopDelay.percentile(50))} ms, p99 ${ms(loopDelay.percentile(99))} ms, max ${ms(loopDelay.max)} ms; ` +
      `longest time between two once-a-second samples ${round(longestGap, 1)} s`,
  );
  console.log(`  append request latency: p50 ${round(request.p50)} ms, p95 ${round(request.p95)} ms`);
  console.log(`  append→projected lag (from the 202): p50 ${round(lag.p50)} ms, p95 ${round(lag.p95)} ms, max ${round(lag.max)} ms (${lags.length} of ${result.appends.length} requests seen projected)`);
  console.log(
    `  backlog: max ${Math.max(...samples.map((x) => x.backlog))} events; ` +
      (drained ? `drained ${round(drainSeconds, 1)} s after the load (windows summarised too)` : `NOT drained within ${DRAIN_MS / 1000} s (${backlog()} events and ${windowsLeft()} windows left)`),
  );
  console.log(
    `  RSS: start ${rssStart} MB, max ${Math.max(...rss)} MB, end ${rss.at(-1)} MB (growth ${Math.max(...rss) - rssStart} MB; ` +
      `${rssThreads - rssStart} MB of it the parse threads' start, ${Math.max(...rss) - rssThreads} MB under the load)`,
  );
  console.log(`  memory at the RSS's max: ${formatMemory(samples.reduce((a, b) => (b.memory.rss > a.memory.rss ? b : a)).memory)}; each part's max: ${formatMemory(maxOf(samples.map((x) => x.memory)))}`);
  const turns = result.latencies.length * BATCH;
  console.log(formatAccounting(accounting, turns, 'where the time went (load and drain)'));
  console.log(`    CPU by thread (load and drain): ${cpuSince(cpuStart)}`);
  await sleep(600); // the stand-in counts its requests every 500 ms
  const seen = await server.stats();
  console.log(
    `    scripted server: ${seen.embeddingRequests} embedding requests, ${seen.embeddingTexts} texts (mean ${round(seen.embeddingTexts / (seen.embeddingRequests || 1), 1)}, ` +
      `max ${seen.maxTextsPerRequest} per request); ${seen.chatRequests} chat requests; model calls that failed (timeouts included): ${failedModelCalls(runtime)}`,
  );
  await insertProbe(runtime, 'memory_turns', 200, 'seq = seq + 1000000000');
  await insertProbe(runtime, 'interactions', 50, "id = id || ':probe'");
  client.close().catch(() => undefined);
  await host.stop();
  await server.close();
}

/**
 * What a table's rows cost to insert, per index: `rows` stored rows copied (with `renew` making their keys new) and
 * inserted with every index, then without each one in turn, each in a transaction rolled back.
 */
async function insertProbe(runtime: Runtime, table: string, rows: number, renew: string): Promise<void> {
  const db = dbOf(runtime);
  if (!db) return;
  const indexes = (await db.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = $1 AND indexname NOT LIKE '%_pkey' ORDER BY indexname`, [table])).map((i) => i.indexname);
  const [{ n } = { n: 0 }] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
  if (n < rows) return;
  // Generated columns are computed by the insert itself.
  const [{ columns } = { columns: '*' }] = await db.query<{ columns: string }>(
    `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) AS columns FROM information_schema.columns WHERE table_name = $1 AND is_generated = 'NEVER'`,
    [table],
  );
  const insert = async (dropIndex?: string) => {
    let ms = 0;
    await db
      .transaction(async (tx) => {
        await tx.exec(`CREATE TEMP TABLE probe_rows ON COMMIT DROP AS SELECT * FROM ${table} ORDER BY random() LIMIT ${rows}`);
        await tx.exec(`UPDATE probe_rows SET ${renew}`);
        if (dropIndex) await tx.exec(`DROP INDEX ${dropIndex}`);
        const t0 = now();
        await tx.exec(`INSERT INTO ${table} (${columns}) SELECT ${columns} FROM probe_rows`);
        ms = now() - t0;
        throw new Error('rollback');
      })
      .catch((error: unknown) => {
        if (!(error instanceof Error && error.message === 'rollback')) throw error;
      });
    return ms;
  };
  await insert(); // the first pass reads the pages the others find cached
  const all = await insert();
  const without: [string, number][] = [];
  for (const index of indexes) without.push([index, await insert(index)]);
  console.log(
    `    insert probe on ${table} (${n} rows): ${rows} rows in ${round(all, 0)} ms with every index (${round(all / rows, 2)} ms a row); ` +
      without.map(([index, ms]) => `${index} ≈ ${round((all - ms) / rows, 2)}`).join(', ') +
      ' ms a row',
  );
}

/** The texts the last offline run embedded: the next run times the embedder alone on them before its projection. */
let previousTexts: string[] | undefined;

/** One offline run on a new store; returns the projection's throughput as a share of the embedder alone's. */
async function offline(run: number): Promise<number> {
  const { createRuntime, useRuntime } = await import('../../shared/platform/composition.js');
  const { loadSettings, modelThreads } = await import('../../shared/platform/config.js');
  const { disableAzureRegistration } = await import('../../shared/platform/functions.js');
  const { createLocalModels, ModelThreadPool } = await import('../../shared/adapters/local-models/index.js');
  const { EmbeddingBatcher } = await import('../../shared/adapters/batching/embedding-batcher.js');
  const { UsageMeter } = await import('../../shared/application/metering.js');
  const { ChangeFeedPump } = await import('../../shared/platform/local-host/pump.js');
  const { wakeable } = await import('../../shared/platform/local-host/host.js');
  const { LocalTimer } = await import('../../shared/platform/local-host/timers.js');
  const { appendBody } = await import('./fixtures.js');
  disableAzureRegistration();
  const settings = loadSettings({ ...GIVEN_ENV, MODEL_PROVIDER: 'local', EMBEDDING_DIMENSIONS: '512', MEMORY_DATA_DIR: path.join(root, `offline-${run}`) });
  const runtime = await createRuntime(settings);
  useRuntime(runtime);
  const threads = modelThreads(settings);
  console.log(`\noffline models${OFFLINE_RUNS > 1 ? ` (run ${run} of ${OFFLINE_RUNS})` : ''}: a backlog of ${OFFLINE_TURNS} turns over 20 sessions, then projected alone (after a warm-up); MODEL_THREADS=${threads}; load average ${load1m()}`);
  await runtime.embedder.embed(['warm up']);

  // The embedder alone on the texts a projection embedded, as the runtime wires it (batcher over the thread pool).
  const alone = async (size: number, texts: readonly string[]) => {
    const pool = new ModelThreadPool(size);
    const models = createLocalModels(new UsageMeter(), pool);
    const embedder = new EmbeddingBatcher(models.embedder, { maxTexts: settings.EMBEDDING_BATCH_TEXTS ?? 32, concurrency: settings.EMBEDDING_CONCURRENCY ?? 2 * size });
    try {
      await embedder.embed(['warm up']);
      // A thread loads the chat rules once its model is loaded (model-worker.ts): about 0.5 s of this run's wall time if
      // it were timed. A task on every thread waits for them, as the projection's warm-up loaded them before its run.
      await Promise.all(pool.threads.map((thread) => thread.solve('windowMetadata', { conversation: 'User: warm up', previousSummary: '' })));
      const cpu = threadCpu();
      const start = now();
      await embedder.embed(texts);
      const ms = now() - start;
      console.log(`    CPU by thread (embedder alone, ${size} threads): ${cpuSince(cpu)}`);
      return ms;
    } finally {
      await models.close();
    }
  };
  const append = async (userId: string, sessions: number, batches: number, first: number) => {
    for (let i = 0; i < batches; i++) {
      const key = { userId, sessionId: `s${i % sessions}` };
      const { turns } = JSON.parse(appendBody(`${userId}-${i}`, first + i * 10, 10)) as { turns: { role: 'user' | 'assistant'; content: string; turnId: string }[] };
      await runtime.events.append(key, turns.map((t) => ({ type: 'TurnAppended', data: { ...t, timestamp: new Date().toISOString() } })), new Date());
    }
  };
  const { handler } = await import('../../functions/cosmos-events-project.js');
  const { handler: serveQueue } = await import('../../functions/timer-projection-queue.js');
  // As the local host runs them (host.ts): the pump, and the projection queue's timer, on its schedule and woken after
  // each batch; what the change feed's at-once serving leaves queued is served there (without the schedule, nothing was
  // before the first batch ended: README, Scale).
  const queueTimer = () => new LocalTimer('timer-projection-queue', settings.PROJECTION_QUEUE_SCHEDULE, serveQueue as TimerHandler);
  const woken = queueTimer();
  const scheduler = wakeable(() => woken.fire());
  const pump = new ChangeFeedPump(runtime.changeFeed!, handler as never, { name: PROJECTOR, batchSize: settings.PUMP_BATCH_SIZE, intervalMs: settings.PUMP_INTERVAL_MS, afterBatch: scheduler.wake });
  // The projection ends when its last session leaves the queue, not when a poll below sees it gone.
  let lastCaughtUp = 0;
  const done = runtime.projectionQueue.done.bind(runtime.projectionQueue);
  runtime.projectionQueue.done = async (...args) => {
    await done(...args);
    lastCaughtUp = now();
  };
  const project = async () => {
    const t0 = now();
    const timer = queueTimer();
    timer.start();
    await pump.drain();
    const drained = now();
    // Polled every 250 ms: each count is a PGlite statement on the projecting thread (about 0.8 ms), and every 10 ms it
    // took 1.2–1.7 ms a turn of that thread from the embedder.
    while ((await runtime.projectionQueue.size()) > 0) {
      scheduler.wake();
      await sleep(250);
    }
    await timer.stop();
    return Math.max(drained, lastCaughtUp) - t0;
  };
  // Warm, as the embedder alone is below: two sessions of other texts projected first load what the model threads
  // load on their first task and period parse, and run every statement once.
  await append('warm', 2, 4, OFFLINE_TURNS * 10);
  const warmMs = await project();
  console.log(`  warm-up: 40 other turns projected in ${round(warmMs / 1000, 1)} s`);

  await append('off', 20, OFFLINE_TURNS / 10, 0);
  // The machine's speed drifts within a run (the embedder alone took 22.6–33.6 s on the same texts from one run to the
  // next): a run after the first also times the embedder alone just before the projection, on the texts the run before
  // embedded (the same fixture, so the same texts), and the ratio takes the mean of the two sides' times.
  const beforeMs = previousTexts ? await alone(threads, previousTexts) : undefined;
  if (beforeMs !== undefined) console.log(`  embedder alone before the projection, ${threads} threads: ${previousTexts!.length} texts in ${round(beforeMs / 1000, 1)} s; load average ${load1m()}`);
  const texts: string[] = [];
  const embed = runtime.embedder.embed;
  runtime.embedder.embed = (batch) => (texts.push(...batch), embed.call(runtime.embedder, batch));
  const account = accountRuntime(runtime);
  const cpuStart = threadCpu();
  const projectionMs = await project();
  await scheduler.stop();
  const accounting = account();
  runtime.embedder.embed = embed;
  const turnsPerSecond = (OFFLINE_TURNS * 1000) / projectionMs;
  console.log(`  projection: ${OFFLINE_TURNS} turns in ${round(projectionMs / 1000, 1)} s = ${round(turnsPerSecond, 1)} turns/s (${texts.length} texts embedded); load average ${load1m()}`);
  console.log(formatAccounting(accounting, OFFLINE_TURNS, 'where the time went'));
  console.log(`    CPU by thread (projection): ${cpuSince(cpuStart)}`);
  await runtime.close();

  // Every thread first, right after the projection, so the two sides of the ratio see the same load on the machine.
  const allMs = await alone(threads, texts);
  console.log(`  embedder alone, ${threads} threads: ${texts.length} texts in ${round(allMs / 1000, 1)} s = ${round((texts.length * 1000) / allMs, 1)} texts/s; load average ${load1m()}`);
  const both = beforeMs !== undefined && [...previousTexts!].sort().join('\n') === [...texts].sort().join('\n');
  if (beforeMs !== undefined && !both) console.log('  (this run embedded other texts than the run before: its ratio uses the time after it only)');
  previousTexts = texts;
  const aloneMs = both ? (beforeMs + allMs) / 2 : allMs;
  const ratio = (100 * aloneMs) / projectionMs;
  const how = both ? ` (the mean of before and after; after only ${round((100 * allMs) / projectionMs, 0)}%)` : '';
  console.log(`  projection / embedder alone on ${threads} threads: ${round(ratio, 0)}%${how} (target ≥ 90%)`);
  // One thread tells how the embedder scales; once is enough (about 30 s a run).
  if (threads > 1 && run === 1) {
    const oneMs = await alone(1, texts);
    console.log(`  embedder alone, 1 thread: ${round(oneMs / 1000, 1)} s = ${round((texts.length * 1000) / oneMs, 1)} texts/s; load average ${load1m()}`);
  }
  return ratio;
}

try {
  // glibc's arenas change the RSS by tens of MB (README, Bounded memory): the deployment sets MALLOC_ARENA_MAX=2.
  console.log(`environment: node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model.trim() ?? '?'}, MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '(unset)'}, load average ${load1m()}`);
  if (PARTS.includes('hosted')) await hosted();
  if (PARTS.includes('offline')) {
    const ratios: number[] = [];
    for (let run = 1; run <= OFFLINE_RUNS; run++) ratios.push(await offline(run));
    if (ratios.length > 1) {
      console.log(`\noffline, ${ratios.length} runs: ${ratios.map((r) => `${round(r, 0)}%`).join(', ')}; median ${round(summarize(ratios).p50, 0)}% (target ≥ 90%)`);
    }
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
