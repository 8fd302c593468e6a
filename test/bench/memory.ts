/**
 * `npx tsx test/bench/memory.ts`: the local host's memory under a sustained append load over HTTP (issue 18, bounded
 * memory). Prints, asserts nothing.
 *
 * For each budget in BENCH_MEMORY_BUDGETS (MEMORY_BUDGET_MB values; 0 = no budget), one run on a fresh PGlite store:
 * the service runs in a child process of its own (the local host with the offline models, `--expose-gc` as `npm start`
 * gives it, the models loaded before the first reading), so its resident set holds nothing of the load; a second child sends the load: BENCH_MEMORY_CLIENTS closed-loop clients
 * appending BENCH_MEMORY_BATCH turns per request round-robin over BENCH_MEMORY_USERS users × 4 sessions, plus
 * BENCH_MEMORY_SEARCHERS clients searching those users' facts (the reads that must keep working, and that build search
 * snapshots). A client answered 503 waits what `Retry-After` says, as the TypeScript client does. The projection runs
 * as it would: under this load it falls behind, and the backlog is what grows.
 *
 * Every second the service samples `process.memoryUsage()` (rss, heapUsed, external, arrayBuffers) and PGlite's WASM
 * memory; the run prints start / max / end of each, the RSS growth, appends accepted and shed, searches answered, and
 * the events still waiting for the projection at the end.
 *
 * Knobs (env): BENCH_MEMORY_SECONDS (300), BENCH_MEMORY_BUDGETS (`0,1000`), BENCH_MEMORY_CLIENTS (8),
 * BENCH_MEMORY_BATCH (1), BENCH_MEMORY_USERS (32), BENCH_MEMORY_SEARCHERS (1), BENCH_MEMORY_TRACE (1: print every
 * 10th sample as the run goes). Diagnosis: BENCH_MEMORY_HEAP_PROFILE=1 (what is still live at the end, by allocating
 * function: V8's sampling heap profiler), BENCH_MEMORY_GC_AT_END=1 (a full collection after the load: live vs garbage).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeHttpClient } from './client.js';
import { appendBody } from './fixtures.js';
import { capturePgliteMemory, type MemoryParts } from './pglite-memory.js';
import { round } from './stats.js';

const envNumber = (name: string, fallback: number, min = 1) => {
  const raw = process.env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < min) throw new Error(`${name} must be a number ≥ ${min}`);
  return value;
};
const SECONDS = envNumber('BENCH_MEMORY_SECONDS', 300);
const CLIENTS = Math.round(envNumber('BENCH_MEMORY_CLIENTS', 8));
const BATCH = Math.round(envNumber('BENCH_MEMORY_BATCH', 1));
const USERS = Math.round(envNumber('BENCH_MEMORY_USERS', 32));
const SEARCHERS = Math.round(envNumber('BENCH_MEMORY_SEARCHERS', 1, 0));
const SESSIONS_PER_USER = 4;
const TRACE = process.env.BENCH_MEMORY_TRACE === '1';
const HEAP_PROFILE = process.env.BENCH_MEMORY_HEAP_PROFILE === '1';
/** Diagnosis: a full garbage collection in the service after the load, to tell live memory from garbage not yet collected. */
const GC_AT_END = process.env.BENCH_MEMORY_GC_AT_END === '1';
const BUDGETS = (process.env.BENCH_MEMORY_BUDGETS ?? '0,1000').split(',').map((b) => Number(b.trim()));
const MB = 2 ** 20;

/** One second's reading of the service process. */
interface Sample extends MemoryParts {
  t: number;
  /** The governor's state then (shared/platform/memory-budget.ts), when there is a budget. */
  state: string;
}
interface HostReport {
  samples: Sample[];
  pending: number;
  governor?: { sheds: number; overloads: number };
}
interface LoadReport {
  accepted: number;
  shed: number;
  failed: number;
  turns: number;
  searches: number;
  searchFailures: number;
}

const SELF = fileURLToPath(import.meta.url);
const child = (role: 'host' | 'load', env: Record<string, string>, args: string[] = []): ChildProcess =>
  fork(SELF, [role, ...args], { execArgv: ['--import', 'tsx', ...(role === 'host' ? ['--expose-gc'] : [])], env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const reply = <T>(proc: ChildProcess, kind: string): Promise<T> =>
  new Promise((resolve, reject) => {
    const onMessage = (m: { kind: string; data: T }) => {
      if (m.kind !== kind) return;
      proc.off('message', onMessage);
      resolve(m.data);
    };
    proc.on('message', onMessage);
    proc.once('exit', (code) => reject(new Error(`${kind}: the child exited (${code}) before answering`)));
  });

// ── the service ─────────────────────────────────────────────────────────────────────────────────────────────────────
async function host(): Promise<void> {
  // PGlite's WASM memory, for the breakdown.
  const wasmBytes = await capturePgliteMemory();

  const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
  const { ProjectionControl } = await import('./projection-control.js');
  const service = await startLocalHost({ port: 0, timers: false });
  // The offline models load on first use (their thread and weights are a few hundred MB): loaded before the first
  // reading, so the growth measured is the load's, not the model's.
  await service.runtime.embedder.embed(['warm up']);
  const governor = service.runtime.admission;
  const start = performance.now();
  const samples: Sample[] = [];
  const sample = () => {
    const m = process.memoryUsage();
    const s: Sample = { t: (performance.now() - start) / 1000, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, wasm: wasmBytes(), state: governor?.state ?? '-' };
    samples.push(s);
    if (TRACE && samples.length % 10 === 0) console.log(`    t=${round(s.t, 0)}s ${line(s)}`);
  };
  sample();
  const profiler = HEAP_PROFILE ? await startHeapSampling() : undefined;
  const timer = setInterval(sample, 1_000);
  process.send!({ kind: 'ready', data: { url: service.url } });
  await new Promise<void>((resolve) => process.once('message', () => resolve()));
  clearInterval(timer);
  sample();
  if (profiler) console.log(await profiler());
  const gc = (globalThis as { gc?: () => void }).gc;
  if (GC_AT_END && gc) {
    gc();
    const m = process.memoryUsage();
    console.log(`  service after a full garbage collection: rss ${mb(m.rss)} MB, heapUsed ${mb(m.heapUsed)}, heapTotal ${mb(m.heapTotal)}, external ${mb(m.external)}`);
  }
  const control = new ProjectionControl(service.runtime);
  const pending = await control.backlog();
  control.dispose();
  const report: HostReport = { samples, pending, ...(governor && { governor: { sheds: governor.timesShed, overloads: governor.timesOverloaded } }) };
  process.send!({ kind: 'report', data: report });
  await service.stop();
  process.exit(0);
}

/**
 * V8's sampling heap profiler from the start of the load: at the end, what is still live, by the allocating function
 * (self) and by the deepest project function (under shared/ or functions/) on its stack.
 */
async function startHeapSampling(): Promise<() => Promise<string>> {
  const { Session } = await import('node:inspector/promises');
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.startSampling', { samplingInterval: 64 * 1024 });
  return async () => {
    type Node = { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Node[] };
    const { profile } = (await session.post('HeapProfiler.getSamplingProfile')) as unknown as { profile: { head: Node } };
    await session.post('HeapProfiler.stopSampling');
    const self = new Map<string, number>();
    const cause = new Map<string, number>();
    const where = (f: Node['callFrame']) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(node_modules\/|shared\/|functions\/)/, '$1')}:${f.lineNumber + 1}`;
    const walk = (node: Node, project: string | undefined) => {
      const mine = /\/(shared|functions)\//.test(node.callFrame.url) && !node.callFrame.url.includes('node_modules') ? where(node.callFrame) : project;
      if (node.selfSize > 0) {
        self.set(where(node.callFrame), (self.get(where(node.callFrame)) ?? 0) + node.selfSize);
        cause.set(mine ?? '(outside the project)', (cause.get(mine ?? '(outside the project)') ?? 0) + node.selfSize);
      }
      for (const c of node.children) walk(c, mine);
    };
    walk(profile.head, undefined);
    const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 12).map(([k, v]) => `    ${String(mb(v)).padStart(5)} MB  ${k}`).join('\n');
    return `  live heap by allocating function:\n${top(self)}\n  by the deepest project function on the stack:\n${top(cause)}`;
  };
}

const line = (s: Sample) =>
  `rss ${mb(s.rss)} MB, heap ${mb(s.heapUsed)} of ${mb(s.heapTotal)}, external ${mb(s.external)} (arrayBuffers ${mb(s.arrayBuffers)}), PGlite WASM ${mb(s.wasm)}, state ${s.state}`;
const mb = (bytes: number) => round(bytes / MB, 0);

// ── the load ────────────────────────────────────────────────────────────────────────────────────────────────────────
async function load(url: string, label: string): Promise<void> {
  const client = nodeHttpClient(url, CLIENTS + SEARCHERS);
  const report: LoadReport = { accepted: 0, shed: 0, failed: 0, turns: 0, searches: 0, searchFailures: 0 };
  const deadline = performance.now() + SECONDS * 1000;
  let next = 0;
  const appender = async () => {
    while (performance.now() < deadline) {
      const i = next++;
      const user = `${label}-u${i % USERS}`;
      const session = `s${Math.floor(i / USERS) % SESSIONS_PER_USER}`;
      const first = Math.floor(i / (USERS * SESSIONS_PER_USER)) * BATCH;
      try {
        const res = await client.send('POST', `/v1/users/${user}/sessions/${session}/turns`, appendBody(`${user}-${session}`, first, BATCH));
        if (res.status === 202) {
          report.accepted += 1;
          report.turns += BATCH;
        } else if (res.status === 503) {
          report.shed += 1;
          await sleep(1_000 * Number((JSON.parse(res.body) as { retryAfter?: number }).retryAfter ?? 1));
        } else report.failed += 1;
      } catch {
        report.failed += 1;
      }
    }
  };
  const QUERIES = ['retirement savings rate', 'mortgage years left', 'index funds fees', 'bonds volatility', 'partner income'];
  let searched = 0;
  const searcher = async () => {
    while (performance.now() < deadline) {
      const k = searched++;
      try {
        const res = await client.send('POST', `/v1/users/${label}-u${k % USERS}/facts/search`, JSON.stringify({ query: QUERIES[k % QUERIES.length] }));
        if (res.status === 200) report.searches += 1;
        else report.searchFailures += 1;
      } catch {
        report.searchFailures += 1;
      }
    }
  };
  await Promise.all([...Array.from({ length: CLIENTS }, appender), ...Array.from({ length: SEARCHERS }, searcher)]);
  client.close();
  process.send!({ kind: 'report', data: report });
  process.exit(0);
}

// ── one run per budget ──────────────────────────────────────────────────────────────────────────────────────────────
async function runOnce(budgetMb: number): Promise<{ budgetMb: number; host: HostReport; load: LoadReport; loadAvg: string }> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'memory-bench-'));
  try {
    const service = child('host', { MEMORY_DATA_DIR: path.join(root, 'pglite'), LOG_LEVEL: 'warning', MEMORY_BUDGET_MB: String(budgetMb), AZURITE_DATA_DIR: path.join(root, 'azurite') });
    const { url } = await reply<{ url: string }>(service, 'ready');
    const clients = child('load', {}, [url, `b${budgetMb}`]);
    const loadReport = await reply<LoadReport>(clients, 'report');
    const loadAvg = os.loadavg().map((l) => l.toFixed(2)).join(' ');
    service.send('stop');
    const hostReport = await reply<HostReport>(service, 'report');
    await new Promise((resolve) => service.once('exit', resolve));
    return { budgetMb, host: hostReport, load: loadReport, loadAvg };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function print(run: Awaited<ReturnType<typeof runOnce>>): void {
  const { samples } = run.host;
  const first = samples[0]!;
  const last = samples.at(-1)!;
  const max = (key: keyof Omit<Sample, 'state'>) => samples.reduce((m, s) => Math.max(m, s[key]), 0);
  const peak = samples.reduce((m, s) => (s.rss > m.rss ? s : m), first);
  console.log(`\n${run.budgetMb > 0 ? `MEMORY_BUDGET_MB=${run.budgetMb}` : 'no budget'} (load average at the end: ${run.loadAvg})`);
  for (const key of ['rss', 'heapUsed', 'heapTotal', 'external', 'arrayBuffers', 'wasm'] as const) {
    console.log(`  ${key.padEnd(12)} start ${String(mb(first[key])).padStart(5)} MB   max ${String(mb(max(key))).padStart(5)} MB   end ${String(mb(last[key])).padStart(5)} MB`);
  }
  console.log(`  RSS growth: ${mb(peak.rss - first.rss)} MB at most (t=${round(peak.t, 0)} s), ${mb(last.rss - first.rss)} MB at the end`);
  const { accepted, shed, failed, turns, searches, searchFailures } = run.load;
  console.log(`  appends: ${accepted} accepted (${turns} turns, ${round(turns / SECONDS, 0)} turns/s), ${shed} shed (503), ${failed} failed; searches: ${searches} answered, ${searchFailures} failed`);
  if (run.host.governor) console.log(`  governor: ${run.host.governor.sheds} sheds (caches dropped), ${run.host.governor.overloads} times over the hard mark`);
  const states = samples.reduce<Record<string, number>>((c, s) => ({ ...c, [s.state]: (c[s.state] ?? 0) + 1 }), {});
  if (run.budgetMb > 0) console.log(`  seconds per state: ${Object.entries(states).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`  events pending for the projection at the end: ${run.host.pending}`);
}

async function main(): Promise<void> {
  console.log(
    `memory under sustained append load: ${SECONDS} s, ${CLIENTS} clients × ${BATCH} turn(s) per request over ${USERS} users × ${SESSIONS_PER_USER} sessions, ` +
      `${SEARCHERS} searcher(s); node ${process.version}, ${os.cpus().length} cpus, load average at start ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`,
  );
  for (const budget of BUDGETS) print(await runOnce(budget));
}

const role = process.argv[2];
if (role === 'host') await host();
else if (role === 'load') await load(process.argv[3]!, process.argv[4]!);
else await main();
