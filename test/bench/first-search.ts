/**
 * `npx tsx test/bench/first-search.ts`: a user's first fact search after a restart, over HTTP (issue 18: ≤ 300 ms for a
 * user of 10k turns). Prints figures, asserts nothing.
 *
 * A store in a temporary folder is seeded with one user of N turns and N interactions (search.ts's corpus and seeding),
 * and closed. The local host then starts on it as `npm start` does: its start
 * builds the most recently written users' snapshots in the background (warmRecent), and a search meanwhile is ranked
 * in SQL. The first search goes as soon as the host listens, the next ones one after another: each is a POST to
 * /facts/search with its query embedded by the offline encoder, as a client's. Printed: how long the host took to
 * listen, the first search, the next ones' p50 / p95 (by hundreds too, when more than a hundred), and the searches
 * answered before the snapshot was held (the host's `warmRecent` timed by a wrapper).
 *
 * Knobs (env): BENCH_FIRST_SEARCH_TURNS (10000), BENCH_FIRST_SEARCH_QUERIES (50), BENCH_FIRST_SEARCH_RESTARTS (3: the
 * host is started again on the same store, each time a first search).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { rng } from './fixtures.js';
import { seed, zipf } from './search.js';
import { now, round, summarize } from './stats.js';

const TURNS = Number(process.env.BENCH_FIRST_SEARCH_TURNS ?? 10_000);
const QUERIES = Number(process.env.BENCH_FIRST_SEARCH_QUERIES ?? 50);
const RESTARTS = Number(process.env.BENCH_FIRST_SEARCH_RESTARTS ?? 3);
const USER = 'bench-user';

// Settings are read once per process: the store's folder is fixed before any project module is loaded.
const root = mkdtempSync(path.join(os.tmpdir(), 'memory-first-search-'));
process.env.MEMORY_DATA_DIR = path.join(root, 'store');
process.env.LOG_LEVEL = 'warning';

try {
  const { createRuntime } = await import('../../shared/platform/composition.js');
  const { loadSettings } = await import('../../shared/platform/config.js');
  const { SnapshotSearchIndex } = await import('../../shared/adapters/postgres/search-snapshot.js');
  const seeding = await createRuntime(loadSettings(process.env));
  let t0 = now();
  await seed(seeding, 0, TURNS);
  console.log(`seeded ${TURNS} turns and ${TURNS} interactions in ${round((now() - t0) / 1000, 1)} s`);
  await seeding.close();

  const next = zipf(rng(11));
  const query = () => Array.from({ length: 6 }, next).join(' ');
  const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
  // When the host's start held the user's snapshot: its warmRecent, timed.
  const warmRecent = SnapshotSearchIndex.prototype.warmRecent;
  let warmedAt = Infinity;
  SnapshotSearchIndex.prototype.warmRecent = function (this: InstanceType<typeof SnapshotSearchIndex>, ...args) {
    return warmRecent.apply(this, args).then((users) => {
      warmedAt = now();
      return users;
    });
  };
  for (let restart = 1; restart <= RESTARTS; restart++) {
    warmedAt = Infinity;
    t0 = now();
    const host = await startLocalHost({ port: 0, timers: false });
    const listening = now() - t0;
    const search = async () => {
      const started = now();
      const response = await fetch(`${host.url}/v1/users/${USER}/facts/search`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: query(), topK: 10 }),
      });
      if (response.status !== 200) throw new Error(`search answered ${response.status}: ${await response.text()}`);
      await response.json();
      return { ms: now() - started, before: started < warmedAt };
    };
    const first = await search();
    const later: number[] = [];
    let beforeSnapshot = first.before ? 1 : 0;
    for (let q = 0; q < QUERIES; q++) {
      const { ms, before } = await search();
      later.push(ms);
      if (before) beforeSnapshot++;
    }
    const held = warmedAt === Infinity ? 'not held' : `held ${round(warmedAt - t0)} ms after the start began`;
    const { p50, p95 } = summarize(later);
    // By hundreds: the first hundred after a start are slower than the later ones, while V8 still optimises the encoder's
    // and the search's code (README, Fact search).
    const hundreds: string[] = [];
    if (later.length > 100) {
      for (let from = 0; from < later.length; from += 100) {
        const { p50, p95 } = summarize(later.slice(from, from + 100));
        hundreds.push(`${from + 1}–${Math.min(from + 100, later.length)}: p50 ${round(p50)}, p95 ${round(p95)} ms`);
      }
    }
    console.log(
      `restart ${restart}: listening after ${round(listening)} ms; first search ${round(first.ms)} ms${first.before ? ' (before the snapshot)' : ''}; ` +
        `the next ${QUERIES}: p50 ${round(p50)} ms, p95 ${round(p95)} ms${hundreds.length ? ` (${hundreds.join('; ')})` : ''}; ${beforeSnapshot} searches before the snapshot (${held})`,
    );
    await host.stop();
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
