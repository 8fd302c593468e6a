/**
 * Where the main thread's time went in a .cpuprofile: self time by component, and the inclusive time of the
 * project's own functions. `npx tsx test/bench/profile-summary.ts <file.cpuprofile> [top]`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { CpuProfile } from './profile.js';

export interface ProfileSummary {
  totalMs: number;
  byComponent: [string, number][];
  topSelf: [string, number][];
  projectInclusive: [string, number][];
}

/** A WebAssembly module's owner, from the JavaScript that calls into it (PGlite's Postgres, TensorFlow.js, …). */
function wasmOwner(callerUrl: string): string {
  if (callerUrl.includes('@electric-sql/pglite')) return 'PGlite: Postgres in WASM';
  if (callerUrl.includes('@energetic-ai') || callerUrl.includes('tensorflow')) return 'TensorFlow.js WASM (sentence encoder)';
  return `WASM called from ${callerUrl.split('/node_modules/').at(-1)!.split('/')[0] ?? '?'}`;
}

function component(functionName: string, url: string, wasmOwners: Map<string, string>): string {
  if (functionName === '(idle)') return 'idle (waiting)';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'V8/native (program)';
  if (url.startsWith('wasm://')) return wasmOwners.get(url) ?? 'WASM (unknown module)';
  if (url.includes('@energetic-ai') || url.includes('tensorflow')) return 'TensorFlow.js JS (sentence encoder)';
  if (url.includes('@electric-sql/pglite')) return 'PGlite: JS glue (protocol, parsing)';
  if (url.includes('/zod/')) return 'zod';
  if (url.includes('/undici/') || url.includes('node:internal/deps/undici')) return 'undici (Request/Headers/fetch)';
  if (url.includes('@azure/functions')) return '@azure/functions';
  if (url.includes('gpt-tokenizer')) return 'gpt-tokenizer';
  if (url.includes('/node_modules/')) return `other package: ${url.split('/node_modules/').at(-1)!.split('/').slice(0, url.includes('/node_modules/@') ? 2 : 1).join('/')}`;
  if (url.includes('/test/bench/')) return 'bench harness';
  for (const dir of ['shared/domain', 'shared/application', 'shared/contracts', 'shared/adapters', 'shared/platform', 'functions']) {
    if (url.includes(`/${dir}/`)) return `project: ${dir}`;
  }
  if (url.startsWith('node:') || url === '') return 'Node internals (http, streams, timers, JSON, …)';
  return `other: ${url}`;
}

const short = (url: string) => url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(shared|functions|test)\//, '$1/');

export function summarizeProfile(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Samples under node:inspector are the profiler stopping itself: left out.
  const profilerIds = new Set<number>();
  for (const n of profile.nodes) {
    for (let p: number | undefined = n.id; p !== undefined; p = parent.get(p)) {
      if (byId.get(p)!.callFrame.url === 'node:inspector') {
        profilerIds.add(n.id);
        break;
      }
    }
  }
  const self = new Map<number, number>();
  let totalMs = 0;
  profile.samples.forEach((id, i) => {
    if (profilerIds.has(id)) return;
    const ms = (profile.timeDeltas[i] ?? 0) / 1000;
    self.set(id, (self.get(id) ?? 0) + ms);
    totalMs += ms;
  });

  // Each WASM module is named after the JavaScript that calls into it most.
  const votes = new Map<string, Map<string, number>>();
  for (const n of profile.nodes) {
    if (!n.callFrame.url.startsWith('wasm://')) continue;
    // Past the WASM frames and the unnamed JS-to-WASM trampolines (a side module such as pgvector is entered through them).
    let p = parent.get(n.id);
    while (p !== undefined && /^(wasm:\/\/|$)/.test(byId.get(p)!.callFrame.url)) p = parent.get(p);
    const caller = p === undefined ? '' : byId.get(p)!.callFrame.url;
    if (!caller) continue;
    const owner = wasmOwner(caller);
    const v = votes.get(n.callFrame.url) ?? new Map<string, number>();
    v.set(owner, (v.get(owner) ?? 0) + 1);
    votes.set(n.callFrame.url, v);
  }
  const wasmOwners = new Map([...votes].map(([url, v]) => [url, [...v].sort((a, b) => b[1] - a[1])[0]![0]]));

  const byComponent = new Map<string, number>();
  const topSelf = new Map<string, number>();
  for (const [id, ms] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const c = component(functionName, url, wasmOwners);
    byComponent.set(c, (byComponent.get(c) ?? 0) + ms);
    const key = `${functionName || '(anonymous)'} ${short(url)}${url ? `:${lineNumber + 1}` : ''}`;
    topSelf.set(key, (topSelf.get(key) ?? 0) + ms);
  }

  // Inclusive time of project functions: a sample counts once for every distinct project function on its stack.
  const inclusive = new Map<string, number>();
  const stackCache = new Map<number, string[]>();
  const projectStack = (id: number): string[] => {
    const cached = stackCache.get(id);
    if (cached) return cached;
    const keys = new Set<string>();
    for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
      const { functionName, url } = byId.get(n)!.callFrame;
      if (functionName && /\/(shared|functions)\//.test(url) && !url.includes('/node_modules/')) keys.add(`${functionName} (${short(url)})`);
    }
    const list = [...keys];
    stackCache.set(id, list);
    return list;
  };
  profile.samples.forEach((id, i) => {
    if (profilerIds.has(id)) return;
    for (const key of projectStack(id)) inclusive.set(key, (inclusive.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });

  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]);
  return { totalMs, byComponent: sorted(byComponent), topSelf: sorted(topSelf), projectInclusive: sorted(inclusive) };
}

export function formatSummary(s: ProfileSummary, title: string, top = 15): string {
  const pct = (ms: number) => `${((100 * ms) / s.totalMs).toFixed(1).padStart(5)}%`;
  const lines = [`${title} — ${(s.totalMs / 1000).toFixed(2)} s of main-thread time`];
  lines.push('    self time by component:');
  for (const [k, ms] of s.byComponent.slice(0, top)) lines.push(`      ${pct(ms)}  ${k}`);
  lines.push('    inclusive time of project functions:');
  for (const [k, ms] of s.projectInclusive.slice(0, top)) lines.push(`      ${pct(ms)}  ${k}`);
  lines.push('    top self time:');
  for (const [k, ms] of s.topSelf.slice(0, top)) lines.push(`      ${pct(ms)}  ${k}`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: tsx test/bench/profile-summary.ts <file.cpuprofile> [top]');
    process.exit(2);
  }
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  console.log(formatSummary(summarizeProfile(profile), file, Number(top ?? 20)));
}
