import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';

/** The subset of a V8 .cpuprofile the summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

let session: Session | undefined;

/**
 * With BENCH_PROFILE_DIR set, records a CPU profile of the main thread (where the service, PGlite and the pump run)
 * around `fn` and writes `<dir>/<name>.cpuprofile` (open it in Chrome DevTools, or `tsx test/bench/profile-summary.ts`).
 */
export async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_PROFILE_DIR;
  if (!dir) return fn();
  if (!session) {
    session = new Session();
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
  }
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    const file = path.join(dir, `${name.replace(/[^A-Za-z0-9._-]+/g, '_')}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    const { summarizeProfile, formatSummary } = await import('./profile-summary.js');
    console.log(formatSummary(summarizeProfile(profile as unknown as CpuProfile), `  profile ${file}`, 8));
  }
}
