/**
 * Fact-search latency (issue 4): the search use case for one user holding N interactions and N indexed turns, on
 * in-memory PGlite, at N = 1k, 10k and 100k. Two figures per size: with the query embedding (the offline encoder runs
 * per query, as in production: each such query is a text not embedded before) and without it (a precomputed query
 * vector: the store's share alone).
 *
 *   node_modules/.bin/tsx test/bench/search.ts      # prints JSON
 *
 * The corpus is synthetic so that it scales. Words: a Zipf law (s = 1) over 50,000 pseudo-words with the 100
 * commonest left out, as PostgreSQL's english configuration drops stop words, so the commonest word is in about 4% of
 * turns. A turn is 25 words, matched by full text together with the two turns of its session before it (as projection
 * does); an interaction has 80 words of content and a 20-word summary. Vectors: random 512-d unit vectors, the
 * offline encoder's size. Random vectors have no clusters, a hard case for binary codes (their recall on real
 * embeddings is higher). Queries: 6 words from the same law, embedded by the offline encoder. seed<N>Seconds is the
 * rows' writing (with their binary codes).
 * Ranking: the runtime's (PGlite's in-process snapshots up to SEARCH_SNAPSHOT_ROWS rows, search-snapshot.ts) beside the
 * baseline of every list ranked in SQL, with their p95 ratio. With a fresh snapshot index (as after a start):
 * coldFirstSearch<N>Ms is the first search (ranked in SQL while the snapshot is built in the background),
 * snapshotBuild<N>Ms the rest of that build, snapshotMB<N> and snapshotBytesPerRow<N> the memory it holds (heap growth
 * after a full garbage collection, plus its typed arrays).
 * A user larger than SEARCH_SNAPSHOT_ROWS is ranked in SQL in both.
 * Knobs (env): BENCH_SEARCH_SIZES (1000,10000,100000), BENCH_SEARCH_QUERIES (200), BENCH_SEARCH_SNAPSHOT_ROWS (the
 * setting's default; 200000 holds a 100k-turn user), BENCH_SEARCH_SQL (1; 0 leaves out the SQL baseline and the cold
 * first search, which the SQL ranks).
 */
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Embedder } from '../../shared/application/ports.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import type { Db } from '../../shared/adapters/postgres/db.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import { SnapshotSearchIndex } from '../../shared/adapters/postgres/search-snapshot.js';
import type { SearchIndex } from '../../shared/application/search-ports.js';
import { createRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { rng } from './fixtures.js';
import { now, round, summarize } from './stats.js';

const USER = 'bench-user';
/** A full garbage collection, so that memory figures count what is held rather than what is not yet collected. */
setFlagsFromString('--expose_gc');
const collectGarbage = runInNewContext('gc') as () => void;
/** Word ranks of the Zipf law; the first STOP_WORDS ranks are left out, as PostgreSQL's english config drops stop words. */
const VOCABULARY = 50_000;
const STOP_WORDS = 100;
const BATCH = 500;

/** Pronounceable pseudo-words, so the English stemmer treats them as ordinary words. */
const SYLLABLES = ['ka', 'lo', 'mi', 'ner', 'tas', 'vo', 'ri', 'den', 'sul', 'pa', 'gor', 'bel', 'tin', 'mar', 'fe', 'zu'];
const word = (i: number) => {
  let w = '';
  for (let n = i + SYLLABLES.length; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
};

/**
 * Zipf (s = 1) sampling over ranks STOP_WORDS + 1 .. VOCABULARY by inverting the cumulative weights: content words
 * only, so the commonest word is in about 4% of 25-word turns (as in natural text once stop words are gone) rather
 * than in nearly all of them.
 */
export function zipf(random: () => number): () => string {
  const cumulative: number[] = [];
  let total = 0;
  for (let r = STOP_WORDS + 1; r <= VOCABULARY; r++) cumulative.push((total += 1 / r));
  return () => {
    const x = random() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return word(lo);
  };
}

function unitVector(random: () => number, dimensions: number): number[] {
  const v = Array.from({ length: dimensions }, () => random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => Number((x / norm).toFixed(5)));
}

export async function seed(runtime: Runtime, from: number, to: number): Promise<void> {
  const random = rng(from + 1);
  const next = zipf(random);
  const sentence = (words: number) => Array.from({ length: words }, next).join(' ');
  const dims = runtime.embedder.dimensions;
  const model = runtime.embedder.model;
  let previous: string[] = [];
  for (let start = from; start < to; start += BATCH) {
    const ids = Array.from({ length: Math.min(BATCH, to - start) }, (_, k) => start + k);
    const at = (i: number) => new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
    await runtime.search.indexTurns(
      ids.map((i) => {
        const text = `user: ${sentence(25)}`;
        // As in projection: full text matches a turn with the two turns of its session before it.
        const matchText = [...previous.slice(-2), text].join('\n');
        previous = i % 100 === 99 ? [] : [...previous.slice(-1), text];
        return { userId: USER, sessionId: `s${Math.floor(i / 100)}`, seq: (i % 100) + 1, turnId: `t${i}`, speaker: 'user', text, matchText, timestamp: at(i), embeddingModel: model, vector: unitVector(random, dims) };
      }),
    );
    await runtime.interactions.upsert(
      ids.map((i): InteractionDocument => ({
        schemaVersion: 1,
        id: `w${i}`,
        userId: USER,
        sessionId: `s${Math.floor(i / 100)}`,
        agentIds: [],
        turnIds: [`t${i}`],
        seqRange: [(i % 100) + 1, (i % 100) + 1],
        startedAt: at(i),
        endedAt: at(i),
        content: sentence(80),
        summary: sentence(20),
        topics: [],
        entities: [],
        embeddingModel: model,
        contentVector: unitVector(random, dims),
        summaryVector: unitVector(random, dims),
        createdAt: at(i),
      })),
    );
  }
}

export async function benchSearch(): Promise<Record<string, number>> {
  const sizes = (process.env.BENCH_SEARCH_SIZES ?? '1000,10000,100000').split(',').map(Number);
  const queries = Number(process.env.BENCH_SEARCH_QUERIES ?? 200);
  const withSql = process.env.BENCH_SEARCH_SQL !== '0';
  const runtime = await createRuntime(
    loadSettings({ MEMORY_DATA_DIR: 'memory://', LOG_LEVEL: 'warning', SEARCH_SNAPSHOT_ROWS: process.env.BENCH_SEARCH_SNAPSHOT_ROWS }),
  );
  const figures: Record<string, number> = {};
  try {
    const random = rng(7);
    const next = zipf(random);
    const query = () => Array.from({ length: 6 }, next).join(' ');
    const texts = Array.from({ length: queries }, query);
    // Also loads the model before any timing. These texts' vectors are now remembered (EmbeddingBatcher), so the
    // searches with the query embedding ask for new texts, each size its own: their embedding is really computed.
    const vectors = await runtime.embedder.embed(texts);
    const { db } = runtime as Runtime & { db?: Db };
    if (!db) throw new Error('The search bench needs the PGlite store');
    let seeded = 0;
    for (const size of sizes) {
      let t0 = now();
      await seed(runtime, seeded, size);
      seeded = size;
      figures[`seed${size}Seconds`] = round((now() - t0) / 1000, 1);
      // The runtime's own snapshot is built off the request path: built here before the timed searches.
      if (runtime.search instanceof SnapshotSearchIndex) await runtime.search.warm(USER);
      const variants: [string, SearchIndex, boolean][] = [
        ['WithEmbedding', runtime.search, true],
        ['StoreOnly', runtime.search, false],
      ];
      // N turns and N interactions: held in a snapshot when 2N rows fit.
      if (2 * size <= runtime.settings.SEARCH_SNAPSHOT_ROWS) {
        // A fresh index builds the user's snapshot on its first search: the cost after a restart, and its memory.
        const cold = new SnapshotSearchIndex(db, new PostgresSearchIndex(db), { maxRows: runtime.settings.SEARCH_SNAPSHOT_ROWS });
        // The heap (after a full garbage collection) and the snapshot's typed arrays, counted exactly: the process's
        // array buffers also hold PGlite's WebAssembly memory, which grows while rows are read.
        const heap = () => {
          collectGarbage();
          return process.memoryUsage().heapUsed;
        };
        const before = heap();
        if (withSql) {
          // The first search meets no snapshot: it is ranked in SQL while the build starts in the background.
          t0 = now();
          await searchFacts({ ...runtime, search: cold, embedder: { model: runtime.embedder.model, dimensions: runtime.embedder.dimensions, embed: async () => [vectors[0]!] } }, USER, {
            query: texts[0]!,
            topK: 10,
            mode: 'search',
            sources: ['turns', 'interactions'],
          });
          figures[`coldFirstSearch${size}Ms`] = round(now() - t0);
        }
        t0 = now();
        await cold.warm(USER);
        figures[`snapshotBuild${size}Ms`] = round(now() - t0);
        const bytes = heap() - before + cold.arrayBytes(USER);
        figures[`snapshotMB${size}`] = round(bytes / 1e6);
        figures[`snapshotBytesPerRow${size}`] = Math.round(bytes / cold.held(USER));
        await cold.close();
        // The baseline: every list ranked in SQL by PGlite, as without snapshots (SEARCH_SNAPSHOT_ROWS=0).
        if (withSql) variants.push(['SqlStoreOnly', new PostgresSearchIndex(db), false]);
      }
      const fresh = Array.from({ length: queries + 1 }, query);
      for (const [label, search, withEmbedding] of variants) {
        const latencies: number[] = [];
        for (let q = -1; q < queries; q++) {
          const precomputed: Embedder = { model: runtime.embedder.model, dimensions: runtime.embedder.dimensions, embed: async () => [vectors[Math.max(q, 0)]!] };
          const started = now();
          await searchFacts({ ...runtime, search, embedder: withEmbedding ? runtime.embedder : precomputed }, USER, {
            query: withEmbedding ? fresh[q + 1]! : texts[Math.max(q, 0)]!,
            topK: 10,
            mode: 'search',
            sources: ['turns', 'interactions'],
          });
          if (q >= 0) latencies.push(now() - started); // q = -1 warms up: the runtime's snapshot loads the rows seeded since
        }
        const s = summarize(latencies);
        figures[`p50Ms${size}${label}`] = round(s.p50);
        figures[`p95Ms${size}${label}`] = round(s.p95);
      }
      if (variants.length === 3) figures[`sqlOverSnapshotP95x${size}`] = round(figures[`p95Ms${size}SqlStoreOnly`]! / figures[`p95Ms${size}StoreOnly`]!, 1);
    }
  } finally {
    await runtime.close();
  }
  return figures;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(JSON.stringify(await benchSearch(), null, 2));
