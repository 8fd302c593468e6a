/**
 * `npx tsx test/bench/turn-index-cost.ts`: where the turn index's PGlite time goes per projected turn (issue 18), at
 * growing row counts. Prints figures, asserts nothing.
 *
 * A PGlite store (in a temporary folder, with the service's migrations) is filled through
 * `PostgresSearchIndex.indexTurns` in 500-turn calls (20 users × 10 sessions). At each size, 200 more turns are indexed
 * in 10-turn calls (as a projection slice writes them) inside a transaction that is rolled back, once as the service
 * does and once with a part taken away (its index or constraint dropped, its triggers disabled), so each part's cost is
 * the difference: wall and CPU milliseconds per turn (CPU from `process.cpuUsage`, which foreign load does not inflate;
 * PGlite runs on this thread). Then the SQL path's vector search of a large user (the scan of the binary codes, the
 * nearest re-ranked, as `memory_nearest` runs it) against the exact scan: recall@10 and @100 over 60 queries, each for
 * one of the 20 users, and its latency.
 *
 * Vectors and texts: with BENCH_VECTORS_STORE (a store written by the offline encoder, e.g. a LoCoMo evaluation store;
 * it is copied first, never opened in place), its turns' texts and vectors, each new vector a real one plus a third of
 * another and a little noise (so 45k rows keep the real ones' clusters), and queries the real vectors; without it,
 * seeded random vectors around 64 centres and the fixtures' sentences.
 *
 * Knobs (env): BENCH_TURN_ROWS (10000,45000), BENCH_VECTORS_STORE.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openPglite, type Db, type Queryable } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import type { IndexedTurn } from '../../shared/application/search-ports.js';
import { appendBody, rng } from './fixtures.js';
import { round, summarize } from './stats.js';

const MODEL = 'use-lite-512';
const DIMS = 512;
const USERS = 20;
const STOPS = (process.env.BENCH_TURN_ROWS ?? '10000,45000').split(',').map(Number);
const load = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const random = rng(42);
const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

/** The real texts and vectors, or synthetic ones. */
async function corpus(): Promise<{ texts: string[]; vectors: number[][]; source: string }> {
  const store = process.env.BENCH_VECTORS_STORE;
  if (store) {
    const copy = mkdtempSync(path.join(os.tmpdir(), 'turn-index-cost-src-'));
    cpSync(store, copy, { recursive: true });
    const db = await openPglite(copy);
    try {
      const rows = await db.query<{ text: string; v: string }>(`SELECT text, vector::text AS v FROM memory_turns WHERE vector_dims(vector) = ${DIMS} ORDER BY user_id, session_id, seq`);
      return { texts: rows.map((r) => r.text), vectors: rows.map((r) => JSON.parse(r.v) as number[]), source: `${rows.length} turns of ${store}` };
    } finally {
      await db.close();
      rmSync(copy, { recursive: true, force: true });
    }
  }
  const centres = Array.from({ length: 64 }, () => Array.from({ length: DIMS }, gauss));
  const texts = Array.from({ length: 200 }, (_, i) => (JSON.parse(appendBody(`c${i}`, i, 1)) as { turns: { content: string }[] }).turns[0]!.content);
  return { texts, vectors: Array.from({ length: 2000 }, (_, i) => unit(centres[i % 64]!.map((x) => x + 0.8 * gauss()))), source: 'synthetic (64 centres)' };
}

const { texts, vectors, source } = await corpus();
/** A vector near the corpus's: one of them, a third of another, a little noise. */
const nearby = () => {
  const a = vectors[Math.floor(random() * vectors.length)]!;
  const b = vectors[Math.floor(random() * vectors.length)]!;
  return unit(a.map((x, i) => x + 0.35 * b[i]! + 0.02 * gauss()));
};
let made = 0;
const seqs = new Map<string, number>();
/** The next turn of a user's session, matched with the two texts before it as projection does. */
function turn(user: number, session: number): IndexedTurn {
  const k = made++;
  const key = `${user}/${session}`;
  const seq = (seqs.get(key) ?? 0) + 1;
  seqs.set(key, seq);
  const at = (i: number) => texts[(k + i + texts.length) % texts.length]!;
  return {
    userId: `u${user}`,
    sessionId: `s${session}`,
    seq,
    turnId: `t${k}`,
    speaker: at(0).split(':')[0]!.slice(0, 40),
    text: at(0),
    matchText: [at(-2), at(-1), at(0)].join('\n'),
    timestamp: new Date(Date.UTC(2026, 0, 1) + k * 1000).toISOString(),
    embeddingModel: MODEL,
    vector: nearby(),
  };
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'turn-index-cost-'));
const db = await openPglite(dir);
await migrate(db);
console.log(`turn index cost: vectors ${source}; load average ${load()}`);

/** 200 turns indexed in 10-turn calls after `prepare`, rolled back: wall and CPU ms per turn, and per statement kind. */
async function indexCost(prepare: string[]): Promise<{ wall: number; cpu: number; statements: Map<string, number> }> {
  const statements = new Map<string, number>();
  const result = { wall: 0, cpu: 0, statements };
  const calls = Array.from({ length: 20 }, (_, c) => Array.from({ length: 10 }, () => turn(c % USERS, 10 + (c % 10))));
  await db
    .transaction(async (tx) => {
      for (const sql of prepare) await tx.exec(sql);
      const timed: Queryable = {
        query: async (sql, params) => {
          const t0 = performance.now();
          const rows = await tx.query(sql, params);
          const kind = /INSERT INTO memory_turn_stats/.test(sql) ? 'stats' : 'rows';
          statements.set(kind, (statements.get(kind) ?? 0) + performance.now() - t0);
          return rows as never;
        },
        exec: (sql) => tx.exec(sql),
      };
      const index = new PostgresSearchIndex({ kind: 'pglite', ...timed, transaction: (fn) => fn(timed), close: async () => undefined } satisfies Db, { exactScanMaxRows: 0 });
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      for (const call of calls) await index.indexTurns(call);
      result.wall = (performance.now() - t0) / 200;
      const used = process.cpuUsage(cpu);
      result.cpu = (used.user + used.system) / 1000 / 200;
      throw new Error('rollback');
    })
    .catch((error: unknown) => {
      if (!(error instanceof Error && error.message === 'rollback')) throw error;
    });
  for (const [k, ms] of statements) statements.set(k, ms / 200);
  return result;
}

/** The vector parameter alone: 10 vectors as text cast to vector, against one binary float4[] sliced (vectorsParam). */
async function vectorParsing(): Promise<void> {
  const { vectorAt, vectorsParam } = await import('../../shared/adapters/postgres/vector-params.js');
  const batches = Array.from({ length: 40 }, () => Array.from({ length: 10 }, nearby));
  for (const [label, run] of [
    ['as text (::vector)', (b: number[][]) => db.query(`SELECT count(*) FROM unnest($1::text[]) v WHERE v::vector IS NOT NULL`, [b.map((v) => JSON.stringify(v))])],
    ['as one binary float4[]', (b: number[][]) => {
      const p = vectorsParam(b);
      return db.query(`SELECT count(*) FROM unnest($2::int[], $3::int[]) r(o, s) WHERE ${vectorAt('$1', 'o', 's')} IS NOT NULL`, [p.values, p.offsets, p.sizes]);
    }],
  ] as const) {
    const cpu = process.cpuUsage();
    const t0 = performance.now();
    for (const b of batches) await run(b);
    const used = process.cpuUsage(cpu);
    console.log(`    vector parameter ${label.padEnd(24)} ${round((performance.now() - t0) / 400, 3)} ms/turn wall, ${round((used.user + used.system) / 1000 / 400, 3)} CPU`);
  }
}

const codesPath = new PostgresSearchIndex(db, { exactScanMaxRows: 0 });
const exactPath = new PostgresSearchIndex(db, { exactScanMaxRows: 2 ** 31 - 1 });
const bulk = new PostgresSearchIndex(db, { exactScanMaxRows: 0 });
let rows = 0;
for (const stop of STOPS) {
  const t0 = performance.now();
  while (rows < stop) {
    const call: IndexedTurn[] = [];
    for (; call.length < 500 && rows < stop; rows++) call.push(turn(rows % USERS, Math.floor(rows / USERS) % 10));
    await bulk.indexTurns(call);
  }
  await db.exec('ANALYZE');
  console.log(`\n  ${rows} turn rows (filled in ${round((performance.now() - t0) / 1000, 1)} s); load average ${load()}`);
  const parts: [string, string[]][] = [
    ['as the service does', []],
    ["without the codes' foreign key", ['ALTER TABLE memory_turn_bits DROP CONSTRAINT memory_turn_bits_user_id_session_id_seq_fkey']],
    ['without the full-text index', ['DROP INDEX memory_turns_user_tsv']],
    ['without row triggers (forget guard)', ['ALTER TABLE memory_turns DISABLE TRIGGER USER']],
    ['without the by-time and by-rev indexes', ['DROP INDEX memory_turns_by_time', 'DROP INDEX memory_turns_by_rev']],
  ];
  for (let pass = 1; pass <= 2; pass++) {
    for (const [label, prepare] of parts) {
      const c = await indexCost(prepare);
      const kinds = [...c.statements].map(([k, ms]) => `${k} ${round(ms, 3)}`).join(', ');
      console.log(`    ${label.padEnd(40)} ${round(c.wall, 3)} ms/turn wall, ${round(c.cpu, 3)} CPU (${kinds}); load ${load()}`);
    }
  }
  await vectorParsing();
  for (const k of [10, 100]) {
    let found = 0;
    let wanted = 0;
    const latencies: number[] = [];
    for (let q = 0; q < 60; q++) {
      const query = { userId: `u${q % USERS}`, text: '', vector: { model: MODEL, values: vectors[(q * 37) % vectors.length]! }, limit: k, filters: {} };
      const exact = new Set((await exactPath.turns(query, 'vector')).map((h) => `${h.sessionId}/${h.seq}`));
      const t1 = performance.now();
      const approximate = await codesPath.turns(query, 'vector');
      latencies.push(performance.now() - t1);
      found += approximate.filter((h) => exact.has(`${h.sessionId}/${h.seq}`)).length;
      wanted += exact.size;
    }
    const s = summarize(latencies);
    console.log(`    SQL path (binary codes) recall@${k} ${round(found / wanted, 4)}, p50 ${round(s.p50, 1)} ms, p95 ${round(s.p95, 1)} ms; load ${load()}`);
  }
}
await db.close();
rmSync(dir, { recursive: true, force: true });
