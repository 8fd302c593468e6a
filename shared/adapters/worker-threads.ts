import { Worker, type WorkerOptions } from 'node:worker_threads';

/** The module `name` beside `importMetaUrl`'s: `.ts` when running from source (tsx, vitest), `.js` when compiled to dist. */
export function siblingModule(importMetaUrl: string, name: string): URL {
  return new URL(`./${name}.${new URL(importMetaUrl).pathname.endsWith('.ts') ? 'ts' : 'js'}`, importMetaUrl);
}

/**
 * For a thread whose objects live no longer than an operation (a parse, a statement): a young generation of 8 MB
 * instead of V8's 48. V8 keeps the young generation a thread grew to; PGlite's thread held 32 MB of it, empty, under a
 * projection backlog (README, Bounded memory).
 */
export const SHORT_LIVED_HEAP = { maxYoungGenerationSizeMb: 8 };

/** A worker thread running `entry`. */
export function startWorker(entry: URL, options: WorkerOptions): Worker {
  if (!entry.pathname.endsWith('.ts')) return new Worker(entry, options);
  // From TypeScript source: a worker does not inherit the main thread's loader hooks, so it registers tsx first.
  const boot = [`import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};`, 'register();', `await import(${JSON.stringify(entry.href)});`].join('\n');
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), options);
}
