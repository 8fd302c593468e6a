import type { Runtime } from '../../shared/platform/composition.js';
import type { Db, Queryable } from '../../shared/adapters/postgres/db.js';
import { PriorityGate } from '../../shared/adapters/postgres/priority-gate.js';
import { dbOf } from './projection-control.js';
import { PGlite } from '@electric-sql/pglite';
import { now } from './stats.js';

/** What each statement the adapters send is for (matched on the SQL text; anything else is named by its table). */
const CATEGORIES: [string, RegExp][] = [
  ['append: append_events()', /append_events\(/],
  ['pump: readFeed', /WHERE \(tx_id, position\) >.*pg_snapshot_xmin/s],
  ['pump: load checkpoint', /SELECT cursor FROM feed_checkpoints/],
  ['pump: save checkpoint', /INSERT INTO feed_checkpoints/],
  ['projection/context: sessions.get', /SELECT doc, version FROM sessions/],
  ['projection: sessions.put', /(INSERT INTO|UPDATE) sessions\b/],
  ['projection/context: events.read', /FROM events WHERE user_id = \$1 AND session_id = \$2 AND seq > \$3/],
  ['projection/context: readLastTurns', /type = 'TurnAppended' (ORDER BY seq DESC|AND seq < \$4)/],
  ['projection: interactions.upsert', /INSERT INTO interactions\b/],
  ['status: lastSeq', /FROM session_heads/],
  ['projection: turn index write (rows, codes, full text, statistics)', /INSERT INTO memory_turns\b/],
  ['bench: backlog / checkpoint', /SELECT count\(\*\)::int AS n FROM events|ORDER BY tx_id DESC, position DESC LIMIT 1/],
];

function categorize(sql: string): string {
  const known = CATEGORIES.find(([, re]) => re.test(sql));
  if (known) return known[0];
  const table = /\b(INSERT INTO|UPDATE|DELETE FROM|FROM)\s+([a-z_]+)/i.exec(sql);
  return table ? `other: ${table[1]!.split(' ')[0]!.toLowerCase()} ${table[2]}` : `other: ${sql.trim().slice(0, 30)}`;
}

/** Wall time during which at least one call was running (overlapping calls are counted once). */
class Busy {
  calls = 0;
  ms = 0;
  private active = 0;
  private since = 0;
  enter() {
    this.calls += 1;
    if (this.active++ === 0) this.since = now();
  }
  leave() {
    if (--this.active === 0) this.ms += now() - this.since;
  }
  /** Busy time so far, including a call still running. */
  elapsed() {
    return this.ms + (this.active > 0 ? now() - this.since : 0);
  }
  async time<T>(work: () => Promise<T>): Promise<T> {
    this.enter();
    try {
      return await work();
    } finally {
      this.leave();
    }
  }
}

export interface Accounting {
  wallMs: number;
  /**
   * Per category: statements, milliseconds from start to answer (other work of the thread may interleave), and
   * milliseconds inside PGlite's synchronous execution (`execProtocolRawSync`: Postgres in WASM, nothing interleaves).
   */
  byCategory: Map<string, { count: number; ms: number; wasmMs: number }>;
  totalMs: number;
  /** Milliseconds inside PGlite's synchronous execution, all statements. */
  wasmMs: number;
  /** Model calls: count and busy wall time (union of overlapping calls). `chat` includes the embeddings it asks for itself. */
  models: { embed: { calls: number; ms: number }; chat: { calls: number; ms: number }; any: { ms: number } };
  /** Interaction documents written (one per full window). */
  windows: number;
}

/**
 * Counts and times, until the returned function is called: every statement through the runtime's `db.query` and
 * `db.transaction`, every model call, and every window written. Statements pass one at a time through a gate in front of PGlite (which
 * runs one at a time anyway), so each duration is execution — Postgres in WASM plus PGlite's protocol encoding and row
 * parsing — and not time queued behind other statements. With PGlite on its own thread (PGLITE_THREAD=own) they are
 * queued there: each duration includes that wait, and no WASM time is seen.
 */
export function accountRuntime(runtime: Runtime): () => Accounting {
  const db = dbOf(runtime);
  const undo: (() => void)[] = [];
  const byCategory = new Map<string, { count: number; ms: number; wasmMs: number }>();
  const entry = (category: string) => {
    const c = byCategory.get(category) ?? { count: 0, ms: 0, wasmMs: 0 };
    byCategory.set(category, c);
    return c;
  };
  // The statement running (statements pass one at a time through the FIFO below), so PGlite's synchronous execution is
  // charged to it.
  const IDLE = 'other: outside a statement';
  let running = IDLE;
  const ownThread = runtime.settings.PGLITE_THREAD === 'own';
  const inFlight = new Busy();
  const embedBusy = new Busy();
  const chatBusy = new Busy();
  const anyBusy = new Busy();
  if (db) {
    const query = db.query;
    const timed = async <T>(sql: string, run: () => Promise<T>): Promise<T> => {
      const category = categorize(sql);
      const c = entry(category);
      const t0 = now();
      const outer = running;
      running = category;
      try {
        return await run();
      } finally {
        running = outer;
        c.count += 1;
        c.ms += now() - t0;
      }
    };
    // Every statement ends in this synchronous call (the wire protocol run by Postgres in WASM): its time is the
    // statement's own, whatever the thread does between the statement's start and its answer. On a thread of its own
    // PGlite is not seen from here: no WASM time, and PGlite's busy time is the time any operation is in flight.
    const sync = PGlite.prototype.execProtocolRawSync;
    PGlite.prototype.execProtocolRawSync = function (this: PGlite, message: Uint8Array) {
      const t0 = now();
      try {
        return sync.call(this, message);
      } finally {
        entry(running).wasmMs += now() - t0;
      }
    };
    undo.push(() => (PGlite.prototype.execProtocolRawSync = sync));
    // Ordered as the PGlite adapter orders them (requests first, background work after an event-loop turn): a FIFO
    // here put appends behind every queued projection statement and, chained in microtasks, kept the service from
    // reading requests under a backlog. On its own thread PGlite orders them there, so they go as they come.
    const gate = new PriorityGate();
    const queued = <T>(work: () => Promise<T>): Promise<T> => (ownThread ? inFlight.time(work) : gate.run(work));
    db.query = (<T>(sql: string, params?: unknown[]): Promise<T[]> => queued(() => timed(sql, () => query.call(db, sql, params) as Promise<T[]>))) as typeof db.query;
    // A transaction holds PGlite for its duration: it is queued whole, and each of its statements timed.
    const transaction = db.transaction;
    // Its BEGIN and COMMIT are charged to the transactions' own row.
    db.transaction = <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
      queued<T>(async () => {
        running = 'transactions: BEGIN, COMMIT';
        try {
          return await transaction.call<Db, [(tx: Queryable) => Promise<T>], Promise<T>>(db, (tx) =>
            fn({ query: (sql, params) => timed(sql, () => tx.query(sql, params)), exec: (sql) => timed(sql, () => tx.exec(sql)) }),
          );
        } finally {
          running = IDLE;
        }
      });
    undo.push(() => (db.query = query), () => (db.transaction = transaction));
  }

  const { embedder, chat, interactions } = runtime;
  const embed = embedder.embed;
  embedder.embed = (texts) => anyBusy.time(() => embedBusy.time(() => embed.call(embedder, texts)));
  const run = chat.run;
  chat.run = ((task, input) => anyBusy.time(() => chatBusy.time(() => run.call(chat, task, input)))) as typeof chat.run;
  let windows = 0;
  const upsert = interactions.upsert;
  interactions.upsert = (docs) => {
    windows += docs.length;
    return upsert.call(interactions, docs);
  };
  undo.push(
    () => (embedder.embed = embed),
    () => (chat.run = run),
    () => (interactions.upsert = upsert),
  );

  const start = now();
  return () => {
    undo.reverse().forEach((u) => u());
    const totalMs = ownThread ? inFlight.elapsed() : [...byCategory].reduce((s, [k, c]) => (k.startsWith('bench:') ? s : s + c.ms), 0);
    const wasmMs = [...byCategory].reduce((s, [k, c]) => (k.startsWith('bench:') ? s : s + c.wasmMs), 0);
    return {
      wallMs: now() - start,
      byCategory,
      totalMs,
      wasmMs,
      models: { embed: { calls: embedBusy.calls, ms: embedBusy.elapsed() }, chat: { calls: chatBusy.calls, ms: chatBusy.elapsed() }, any: { ms: anyBusy.elapsed() } },
      windows,
    };
  };
}

/** One line per category, normalised per appended turn. */
export function formatAccounting(a: Accounting, turns: number, title: string): string {
  const rows = [...a.byCategory].filter(([k]) => !k.startsWith('bench:')).sort((x, y) => y[1].wasmMs - x[1].wasmMs || y[1].ms - x[1].ms);
  const perTurn = (ms: number) => (ms / turns).toFixed(3);
  const lines = [
    `  ${title}: ${turns} turns, ${a.windows} windows, ${(a.wallMs / 1000).toFixed(2)} s from first append until projected`,
    `    PGlite busy ${(a.totalMs / 1000).toFixed(2)} s = ${perTurn(a.totalMs)} ms/turn, of which executing in WASM ${(a.wasmMs / 1000).toFixed(2)} s = ${perTurn(a.wasmMs)} ms/turn; model calls busy ${(a.models.any.ms / 1000).toFixed(2)} s = ${perTurn(a.models.any.ms)} ms/turn ` +
      `(embed: ${a.models.embed.calls} calls, ${perTurn(a.models.embed.ms)} ms/turn; chat: ${a.models.chat.calls} calls, ${perTurn(a.models.chat.ms)} ms/turn incl. its own embeds)`,
    `    ${'statement'.padEnd(40)} ${'per turn'.padStart(9)} ${'≈ms/stmt'.padStart(8)} ${'≈ms/turn'.padStart(8)} ${'wasm/stmt'.padStart(9)} ${'wasm/turn'.padStart(9)} ${'share'.padStart(6)}   (≈: start to answer, other work of this thread may interleave; wasm: executing, of all wasm)`,
  ];
  for (const [name, c] of rows) {
    lines.push(
      `    ${name.padEnd(40)} ${(c.count / turns).toFixed(3).padStart(9)} ${(c.ms / (c.count || 1)).toFixed(3).padStart(8)} ${perTurn(c.ms).padStart(8)} ${(c.wasmMs / (c.count || 1)).toFixed(3).padStart(9)} ${perTurn(c.wasmMs).padStart(9)} ${`${((100 * c.wasmMs) / (a.wasmMs || 1)).toFixed(0)}%`.padStart(6)}`,
    );
  }
  return lines.join('\n');
}

export const accountingJson = (a: Accounting, turns: number) => ({
  turns,
  windows: a.windows,
  wallMs: Math.round(a.wallMs),
  pgliteMsPerTurn: Number((a.totalMs / turns).toFixed(4)),
  pgliteWasmMsPerTurn: Number((a.wasmMs / turns).toFixed(4)),
  modelMsPerTurn: Number((a.models.any.ms / turns).toFixed(4)),
  embedCalls: a.models.embed.calls,
  chatCalls: a.models.chat.calls,
  statementsPerTurn: Object.fromEntries(
    [...a.byCategory].filter(([k]) => !k.startsWith('bench:')).map(([k, c]) => [k, { statements: Number((c.count / turns).toFixed(3)), ms: Number((c.ms / turns).toFixed(4)), wasmMs: Number((c.wasmMs / turns).toFixed(4)) }]),
  ),
});
