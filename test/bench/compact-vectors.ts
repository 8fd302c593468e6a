/**
 * Compact vectors in PGlite's search snapshots (compact-vectors.ts, search-snapshot.ts), on real text vectors: the
 * LoCoMo turns and interactions of an evaluation store, embedded by the offline encoder, and the LoCoMo questions as
 * queries (embedded here by the same encoder).
 *
 *   EVAL_DATA_DIR=/tmp/locomo-store npm run bench:vectors      # prints JSON; the store is copied, never written
 *
 * Figures:
 * - recall@100 of the compact ranking (int8 codes, cosine) against exact cosine over the full-precision vectors, per
 *   user as a search ranks (`perUser`) and over every user's rows at once (`pooled`, a larger corpus); and after the
 *   exact re-rank of the compact ranking's best rerankPool(100) candidates (`reranked`, 1 when the re-rank is exact);
 * - bytes a row of the snapshots of every user in the store: the heap grown by building them (read after a full
 *   garbage collection) plus their typed arrays; and what a row's full-precision vectors alone took before.
 * Make the store with `EVAL_DATA_DIR=<folder> npm run eval:locomo` (see README, Fact search).
 */
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Db } from '../../shared/adapters/postgres/db.js';
import { Int8Matrix, rerankPool } from '../../shared/adapters/postgres/compact-vectors.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import { SnapshotSearchIndex } from '../../shared/adapters/postgres/search-snapshot.js';
import { createRuntime, type Runtime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { cosine, rerank } from '../support/vectors.js';
import { round } from './stats.js';

setFlagsFromString('--expose_gc');
const collectGarbage = runInNewContext('gc') as () => void;
const K = 100;

interface Corpus {
  users: string[];
  /** Per vector column: the user of each row, and its full-precision vector. */
  columns: Record<string, { user: string; vector: Float32Array }[]>;
}

function decode(base64: string): Float32Array {
  const binary = Buffer.from(base64, 'base64');
  return Float32Array.from({ length: binary.readUInt16BE(0) }, (_, i) => binary.readFloatBE(4 + 4 * i));
}

async function readCorpus(db: Db): Promise<Corpus> {
  const turns = await db.query<{ user_id: string; v: string }>(`SELECT user_id, encode(vector_send(vector), 'base64') AS v FROM memory_turns ORDER BY user_id, session_id, seq`);
  const windows = await db.query<{ user_id: string; c: string; s: string }>(
    `SELECT user_id, encode(vector_send(content_vector), 'base64') AS c, encode(vector_send(summary_vector), 'base64') AS s FROM interactions ORDER BY user_id, id`,
  );
  return {
    users: [...new Set(turns.map((t) => t.user_id))],
    columns: {
      turns: turns.map((t) => ({ user: t.user_id, vector: decode(t.v) })),
      interactionContent: windows.map((w) => ({ user: w.user_id, vector: decode(w.c) })),
      interactionSummary: windows.map((w) => ({ user: w.user_id, vector: decode(w.s) })),
    },
  };
}

/** Recall@K of the compact ranking and of its exact re-rank, against exact cosine, averaged over queries. */
function recall(rows: Float32Array[], queries: Float32Array[]): { compact: number; reranked: number } {
  const matrix = new Int8Matrix(rows[0]!.length);
  for (const v of rows) matrix.add(v);
  const k = Math.min(K, rows.length);
  let compact = 0;
  let reranked = 0;
  for (const q of queries) {
    const exact = new Set(
      rows
        .map((v, row) => ({ row, score: cosine(v, q) }))
        .sort((a, b) => b.score - a.score)
        .slice(0, k)
        .map((e) => e.row),
    );
    compact += matrix.nearest(q, k, () => true).filter((row) => exact.has(row)).length / k;
    const candidates = matrix.nearest(q, rerankPool(k), () => true);
    reranked += rerank(candidates, (row) => rows[row]!, q, k).filter((row) => exact.has(row)).length / k;
  }
  return { compact: compact / queries.length, reranked: reranked / queries.length };
}

export async function benchCompactVectors(): Promise<Record<string, number>> {
  const source = process.env.EVAL_DATA_DIR ?? '/tmp/locomo-store';
  if (!existsSync(join(source, 'PG_VERSION'))) throw new Error(`No PGlite store in ${source}: make one with EVAL_DATA_DIR=${source} npm run eval:locomo`);
  const copy = mkdtempSync(join(tmpdir(), 'compact-vectors-'));
  cpSync(source, copy, { recursive: true });
  // Rankings in SQL for the runtime: this bench builds its own snapshots.
  const runtime = await createRuntime(loadSettings({ ...process.env, MEMORY_DATA_DIR: copy, SEARCH_SNAPSHOT_ROWS: '0', LOG_LEVEL: 'warning' }));
  const figures: Record<string, number> = {};
  try {
    const { db } = runtime as Runtime & { db?: Db };
    if (!db) throw new Error('This bench needs the PGlite store');
    // Memory first, before this process holds anything else: every user's snapshot, built as a search would.
    const users = (await db.query<{ user_id: string }>('SELECT DISTINCT user_id FROM memory_turns ORDER BY 1')).map((r) => r.user_id);
    const snapshots = new SnapshotSearchIndex(db, new PostgresSearchIndex(db), { maxRows: 1_000_000 });
    // The heap (after a full garbage collection) and the snapshots' typed arrays, counted exactly: the process's array
    // buffers also hold PGlite's WebAssembly memory, which grows while rows are read.
    const heap = () => {
      collectGarbage();
      return process.memoryUsage().heapUsed;
    };
    const before = heap();
    for (const user of users) await snapshots.warm(user);
    const grown = heap() - before;
    const rows = users.reduce((n, u) => n + snapshots.held(u), 0);
    const arrays = users.reduce((n, u) => n + snapshots.arrayBytes(u), 0);
    figures.snapshotRows = rows;
    figures.snapshotBytesPerRow = Math.round((grown + arrays) / rows);
    figures.snapshotHeapBytesPerRow = Math.round(grown / rows);
    figures.snapshotArrayBytesPerRow = Math.round(arrays / rows);
    await snapshots.close();
    const corpus = await readCorpus(db);
    const dims = corpus.columns.turns![0]!.vector.length;
    // As before: float32 vectors, one per turn and two per interaction.
    figures.float32VectorBytesPerRow = Math.round((4 * dims * (corpus.columns.turns!.length + 2 * corpus.columns.interactionContent!.length)) / figures.snapshotRows!);
    const dataPath = new URL('../../../shared/data/locomo/locomo-dev.json', import.meta.url).pathname;
    const data = JSON.parse(readFileSync(dataPath, 'utf8')) as { sample_id: string; qa: { question: string; category: number }[] }[];
    const questions = data.flatMap((c) => c.qa.filter((q) => q.category >= 1 && q.category <= 4).map((q) => ({ user: c.sample_id, text: q.question })));
    const embedded = await runtime.embedder.embed(questions.map((q) => q.text));
    const queries = questions.map((q, i) => ({ user: q.user, vector: Float32Array.from(embedded[i]!) }));
    figures.questions = queries.length;
    for (const [column, rows] of Object.entries(corpus.columns)) {
      figures[`${column}Rows`] = rows.length;
      const pooled = recall(
        rows.map((r) => r.vector),
        queries.map((q) => q.vector),
      );
      let perUser = { compact: 0, reranked: 0 };
      for (const user of corpus.users) {
        const mine = queries.filter((q) => q.user === user).map((q) => q.vector);
        const r = recall(
          rows.filter((row) => row.user === user).map((row) => row.vector),
          mine,
        );
        perUser = { compact: perUser.compact + (r.compact * mine.length) / queries.length, reranked: perUser.reranked + (r.reranked * mine.length) / queries.length };
      }
      figures[`${column}RecallAt100PerUser`] = round(perUser.compact, 4);
      figures[`${column}RecallAt100Pooled`] = round(pooled.compact, 4);
      figures[`${column}RecallAt100PerUserReranked`] = round(perUser.reranked, 4);
      figures[`${column}RecallAt100PooledReranked`] = round(pooled.reranked, 4);
    }

  } finally {
    await runtime.close();
    rmSync(copy, { recursive: true, force: true });
  }
  return figures;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(JSON.stringify(await benchCompactVectors(), null, 2));
