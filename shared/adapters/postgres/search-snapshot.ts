import type { Retriever } from '../../contracts/facts.js';
import type { IndexedTurn, SearchFilters, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../application/search-ports.js';
import type { Db } from './db.js';
import { CopyRows, forEachLexeme } from './copy-binary.js';
import { BM25 } from '../../domain/ranking.js';
import { asksQuestion } from '../../domain/fact-ranking.js';
import { Int8Matrix, quantise, rerankPool } from './compact-vectors.js';
import { Lexicon, Numbers, Postings } from './search-postings.js';
import { asVector, vectorParam } from './vector-params.js';
import { sqlLiteral } from './search.js';

/**
 * In-process search snapshots for PGlite. PGlite runs in this process, one statement at a time on one thread, so the
 * five ranked lists of a fact search are five statements in a row (about 90 ms for a user with 10k turns and 10k
 * interactions). A snapshot holds what ranking reads of a user's searchable rows, compactly: their vectors as int8
 * codes (compact-vectors.ts), their BM25 postings packed in 32-bit integers (search-postings.ts), and per row the few fields the filters
 * and fusion read (a turn's speaker, an interaction's seq range). It ranks in JavaScript: the same BM25 as the SQL
 * (bm25Sql, windowBm25Sql), and cosine over the codes. A vector list's candidates, the codes' best, are re-ranked by
 * their exact cosine distance to the query over the full-precision vectors (pgvector's `<=>`, as the SQL ranking), which
 * the vector lists of a search read together, one statement per table and nothing else of the rows; so a vector list is
 * the exact one whenever its rows are among the candidates. Hits leave out what their facts show (text, turn ids,
 * summary): reading it for every row of every list cost more than the ranking, so the use case reads it (`show`) for
 * the facts it returns only. A row costs about 1.1 kB on LoCoMo's turns, 1.35 kB on the bench's (see README).
 *
 * PostgreSQL stays the source of truth. Every write to memory_turns and interactions takes the next `search_rev`, and
 * deletions record one in `search_purges` (migration 11). Before a search one statement reads the user's newest
 * revisions; a held snapshot then loads the rows past the ones it holds. Revisions are in commit order only when one
 * connection writes, as with PGlite, so snapshots are for PGlite alone (a PostgreSQL server ranks in SQL).
 *
 * A snapshot is never built on the request path: a search for a user without one (after a start, a rewritten row, a
 * deletion, or an eviction) is ranked in SQL while the snapshot is built in the background, in chunks of rows, so the
 * statements of searches run between them (before each chunk, a build waits for the lists in flight). At start, the
 * most recently written users are built (warmRecent). Snapshots are kept for the most recently searched users up to a
 * total of `maxRows` rows; a user larger than that is ranked in SQL.
 *
 * SnapshotSearchIndex is the SearchIndex that composition chooses for PGlite when SEARCH_SNAPSHOT_ROWS > 0; it ranks
 * from SearchSnapshots and leaves writes, and users it does not hold, to the SQL index it is given.
 */
export class SnapshotSearchIndex implements SearchIndex {
  private readonly snapshots: SearchSnapshots;
  /** The reads of each search's lists, gathered until the next turn of the event loop. */
  private readonly batches = new WeakMap<SearchQuery, ReadBatch>();

  /**
   * `sql`: the SQL index over the same database (PostgresSearchIndex), which writes the rows the snapshots load and
   * ranks the users they do not hold. `maxRows`: the rows held in all, over the most recently searched users.
   * `onError`: told when a background build fails (searches go on in SQL, and the next one starts another build).
   */
  constructor(
    private readonly db: Db,
    private readonly sql: SearchIndex,
    { maxRows, onError }: { maxRows: number; onError?: (error: unknown) => void },
  ) {
    if (db.kind !== 'pglite' || !db.copyBinary) throw new Error('Search snapshots need PGlite: with several connections revisions do not commit in order');
    this.snapshots = new SearchSnapshots(db, db.copyBinary.bind(db), maxRows, onError ?? (() => undefined));
  }

  indexTurns(turns: readonly IndexedTurn[]): Promise<void> {
    return this.sql.indexTurns(turns);
  }

  turnVectors(key: { userId: string; sessionId: string }, seqs: readonly number[], model: string): Promise<Map<number, Float32Array>> {
    return this.sql.turnVectors(key, seqs, model);
  }

  /** Forget: drops the user's snapshot (the rows it held), and any build of it under way. */
  evict(userId: string): number {
    return this.snapshots.evict(userId);
  }

  /** Forget's scan: the rows held for the user in this process. */
  held(userId: string): number {
    return this.snapshots.held(userId);
  }

  /**
   * The memory budget's soft mark (shared/platform/memory-budget.ts): drops snapshots, largest first, until about
   * `bytes` are freed, then the builds under way; returns the bytes reckoned freed. Their users' next searches rank in
   * SQL while the snapshots are built again.
   */
  shed(bytes: number): number {
    return this.snapshots.shed(bytes);
  }

  /** The bytes of the typed arrays held for the user (vectors' codes, postings): what a heap count leaves out. */
  arrayBytes(userId: string): number {
    return this.snapshots.arrayBytes(userId);
  }

  /** Builds the user's snapshot now (or waits for the build under way); false when the user is too large to hold. */
  async warm(userId: string): Promise<boolean> {
    return (await this.snapshots.build(userId)) !== null;
  }

  /** At start: builds the snapshots of the most recently written users, up to `users` of them and the row limit. */
  warmRecent(users = WARM_USERS): Promise<string[]> {
    return this.snapshots.warmRecent(users);
  }

  /** Stops the builds under way (at the next chunk) and waits for them; later searches rank in SQL. */
  close(): Promise<void> {
    return this.snapshots.close();
  }

  speakers(userId: string): Promise<string[]> {
    return this.sql.speakers(userId);
  }

  turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    return this.snapshots.searching(() => this.rankTurns(query, retriever));
  }

  interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    return this.snapshots.searching(() => this.rankWindows(query, retriever));
  }

  /** Hits are ranked without what their facts show; this reads it, for the facts returned only (see search-hits.ts). */
  show(userId: string, hits: { turns: readonly TurnHit[]; interactions: readonly WindowHit[] }): Promise<{ turns: TurnHit[]; interactions: WindowHit[] }> {
    return this.sql.show(userId, hits);
  }

  private async rankTurns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    if (retriever === 'vector') {
      const snapshot = await this.snapshots.ready(query);
      if (!snapshot) return this.sql.turns(query, retriever);
      const turns = snapshot.turns;
      return (await this.rerank(query, 'turns', turns, turns.candidates(query, 0, rerankPool(query.limit)), 0)).map((row) => turns.turnHit(row));
    }
    const [snapshot, lexemes] = await Promise.all([this.snapshots.ready(query), this.snapshots.lexemes(query)]);
    if (!snapshot) return this.sql.turns(query, retriever);
    const turns = snapshot.turns;
    return turns.bm25(query, lexemes).map((row) => turns.turnHit(row));
  }

  private async rankWindows(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    if (retriever !== 'fulltext') {
      const snapshot = await this.snapshots.ready(query);
      if (!snapshot) return this.sql.interactions(query, retriever);
      const column = retriever === 'vector' ? 0 : 1;
      const windows = snapshot.windows;
      return (await this.rerank(query, 'windows', windows, windows.candidates(query, column, rerankPool(query.limit)), column)).map((row) => windows.windowHit(row));
    }
    const [snapshot, lexemes] = await Promise.all([this.snapshots.ready(query), this.snapshots.lexemes(query)]);
    if (!snapshot) return this.sql.interactions(query, retriever);
    const windows = snapshot.windows;
    return windows.bm25(query, lexemes).map((row) => windows.windowHit(row));
  }

  /**
   * The `limit` rows of `rows` (a vector list's candidates) nearest the query by exact cosine over their full-precision
   * vectors in `column` (0: the turn's or the content's, 1: the summary's; pgvector's `<=>`): the re-rank. Ties keep the
   * candidates' order; a row deleted meanwhile is left out. The vector lists of one search ranked by then read their
   * distances together, one statement per table, and nothing else of the rows.
   */
  private rerank(query: SearchQuery, table: 'turns' | 'windows', collection: Collection, rows: readonly number[], column: number): Promise<number[]> {
    if (rows.length === 0 || !query.vector) return Promise.resolve([]);
    let batch = this.batches.get(query);
    if (!batch) {
      const created: ReadBatch = { turns: [], windows: [] };
      batch = created;
      this.batches.set(query, created);
      setImmediate(() => {
        if (this.batches.get(query) === created) this.batches.delete(query);
        void this.flush(query, created);
      });
    }
    const reads = batch[table];
    return new Promise<number[]>((done, fail) => reads.push({ collection, rows, column, limit: query.limit, done, fail }));
  }

  private async flush(query: SearchQuery, batch: ReadBatch): Promise<void> {
    const vector = vectorParam(query.vector!.values);
    await Promise.all([
      this.flushTable(batch.turns, (keys) =>
        this.db.query<{ key: string; d0: number | null }>(
          `SELECT k.session_id || '#' || k.seq AS key, t.vector <=> ${asVector('$4')} AS d0 FROM unnest($2::text[], $3::int[]) AS k(session_id, seq)
           JOIN memory_turns t ON t.user_id = $1 AND t.session_id = k.session_id AND t.seq = k.seq`,
          [query.userId, keys.map((k) => k.sessionId), keys.map((k) => k.ref), vector],
        ),
      ),
      // Each interaction's distance only for the vectors whose lists it is a candidate of (`columns`: bit 0 the
      // content's, bit 1 the summary's), so the other vector is not read.
      this.flushTable(batch.windows, (keys, columns) =>
        this.db.query<{ key: string; d0: number | null; d1: number | null }>(
          `SELECT i.id AS key, CASE WHEN k.columns & 1 <> 0 THEN i.content_vector <=> ${asVector('$4')} END AS d0, CASE WHEN k.columns & 2 <> 0 THEN i.summary_vector <=> ${asVector('$4')} END AS d1
           FROM unnest($2::text[], $3::int[]) AS k(id, columns) JOIN interactions i ON i.user_id = $1 AND i.id = k.id`,
          [query.userId, keys.map((k) => String(k.ref)), columns, vector],
        ),
      ),
    ]);
  }

  /** One statement for the re-ranks of one table (`select`: the rows' keys and, per row, its columns' bits), then each one's rows. */
  private async flushTable(reads: Rerank[], select: (keys: RowKey[], columns: number[]) => Promise<({ key: string } & Distances)[]>): Promise<void> {
    if (reads.length === 0) return;
    // A turn's key is its session and seq, an interaction's its id (as the statements return them).
    const keyOf = (k: RowKey) => (typeof k.ref === 'number' ? `${k.sessionId}#${k.ref}` : k.ref);
    try {
      // Per row, its key and the vector columns it is a candidate for (a bit each).
      const keys = new Map<string, { key: RowKey; columns: number }>();
      for (const read of reads) {
        for (const row of read.rows) {
          const key = read.collection.key(row);
          const held = keys.get(keyOf(key));
          if (held) held.columns |= 1 << read.column;
          else keys.set(keyOf(key), { key, columns: 1 << read.column });
        }
      }
      const wanted = [...keys.values()];
      const found = new Map((await select(wanted.map((k) => k.key), wanted.map((k) => k.columns))).map((r) => [r.key, r]));
      for (const read of reads) {
        const distance = new Map<number, number>();
        for (const row of read.rows) {
          const r = found.get(keyOf(read.collection.key(row)));
          if (!r) continue;
          const d = read.column === 0 ? r.d0 : r.d1;
          distance.set(row, d == null || Number.isNaN(d) ? Infinity : d);
        }
        // Stable: ties keep the candidates' order.
        read.done(read.rows.filter((row) => distance.has(row)).sort((a, b) => distance.get(a)! - distance.get(b)!).slice(0, read.limit));
      }
    } catch (error) {
      for (const read of reads) read.fail(error);
    }
  }
}

/** A vector list's re-rank, waiting for its batch: its candidates (rows of `collection`) and their vector column. */
interface Rerank {
  collection: Collection;
  rows: readonly number[];
  column: number;
  limit: number;
  done: (rows: number[]) => void;
  fail: (error: unknown) => void;
}
interface ReadBatch {
  turns: Rerank[];
  windows: Rerank[];
}
/** The distances to the query a batch reads: `d0` the turn's or the content's vector, `d1` the summary's. */
type Distances = { d0?: number | null; d1?: number | null };

/**
 * A snapshot's heap a row besides its typed arrays, as measured on LoCoMo (README, Fact search; the most of four runs,
 * 128–203): the memory budget's reckoning.
 */
const HEAP_BYTES_PER_ROW = 203;
/** Users warmed at start, at most. */
const WARM_USERS = 16;
/** Rows loaded per statement while building or bringing a snapshot up to date. */
const CHUNK = 1_000;
/** How long a build waits for the searches in flight to finish before its next chunk, at most (so it never starves). */
const YIELD_MS = 100;

/** A held snapshot, and a build under way (cancelled by an eviction: it then installs nothing). */
interface Build {
  cancelled: boolean;
  done: Promise<UserSnapshot | null>;
}

/** Users' snapshots: built in the background, brought up to date before each search; see SnapshotSearchIndex. */
class SearchSnapshots {
  private readonly snapshots = new Map<string, UserSnapshot>();
  private readonly refreshing = new Map<string, Promise<UserSnapshot | null>>();
  /** Each search's refresh (SearchQuery.search), for its later lists. */
  private readonly searches = new WeakMap<object, Promise<UserSnapshot | null>>();
  private readonly builds = new Map<string, Build>();
  private readonly warming = new Set<Promise<string[]>>();
  /** Lists of searches in flight, and builds waiting for them to finish. */
  private lists = 0;
  private readonly idle: (() => void)[] = [];
  private readonly queryLexemes = new WeakMap<SearchQuery, Promise<string[]>>();
  private closed = false;

  /** `copy`: the rows of a statement in binary COPY format (Db.copyBinary), how a snapshot loads its rows. */
  constructor(
    private readonly db: Db,
    private readonly copy: (select: string) => Promise<Uint8Array>,
    private readonly maxRows: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /**
   * The query's user's snapshot, brought up to date; null when it is not held: a build then starts in the background,
   * and the caller ranks in SQL. The lists of one search share one refresh: those in flight together, and those of the
   * same `query.search` (a search's vector lists start after its query is embedded, when the full-text lists' refresh
   * is done), unless the snapshot was dropped meanwhile (a forget evicts it).
   */
  ready({ userId, search }: SearchQuery): Promise<UserSnapshot | null> {
    const earlier = search && this.searches.get(search);
    if (earlier) return earlier.then((held) => (held && this.snapshots.get(userId) === held ? held : this.refreshed(userId)));
    const pending = this.refreshed(userId);
    if (search) this.searches.set(search, pending);
    return pending;
  }

  private refreshed(userId: string): Promise<UserSnapshot | null> {
    const snapshot = this.snapshots.get(userId);
    if (!snapshot) {
      this.startBuild(userId);
      return Promise.resolve(null);
    }
    let pending = this.refreshing.get(userId);
    if (!pending) {
      pending = this.refresh(userId, snapshot).finally(() => this.refreshing.delete(userId));
      this.refreshing.set(userId, pending);
    }
    return pending;
  }

  /** Builds the user's snapshot (or joins the build under way); null when too large to hold, or cancelled. */
  build(userId: string): Promise<UserSnapshot | null> {
    const held = this.snapshots.get(userId);
    if (held) return Promise.resolve(held);
    const under = this.builds.get(userId);
    if (under) return under.done;
    const build: Build = { cancelled: false, done: Promise.resolve(null) };
    build.done = this.load(userId, build).finally(() => {
      if (this.builds.get(userId) === build) this.builds.delete(userId);
    });
    this.builds.set(userId, build);
    return build.done;
  }

  warmRecent(users: number): Promise<string[]> {
    const warming = this.warmUsers(users);
    this.warming.add(warming);
    return warming.finally(() => this.warming.delete(warming));
  }

  private async warmUsers(users: number): Promise<string[]> {
    // Users by their newest turn's revision (memory_turns_by_rev), most recent first.
    const recent = await this.db.query<{ user_id: string; docs: number }>(
      `SELECT s.user_id, s.docs FROM memory_turn_stats s ORDER BY (SELECT max(t.rev) FROM memory_turns t WHERE t.user_id = s.user_id) DESC NULLS LAST LIMIT $1`,
      [users],
    );
    const warmed: string[] = [];
    let rows = 0;
    for (const { user_id: userId, docs } of recent) {
      if (this.closed) break;
      // Interactions are windows of turns, so a user holds at most twice their turns in rows.
      if (rows + 2 * docs > this.maxRows) continue;
      rows += 2 * docs;
      if (await this.build(userId)) warmed.push(userId);
    }
    return warmed;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.warming, ...[...this.builds.values()].map((b) => b.done)]);
  }

  evict(userId: string): number {
    const rows = this.held(userId);
    this.snapshots.delete(userId);
    const build = this.builds.get(userId);
    if (build) build.cancelled = true;
    this.builds.delete(userId);
    return rows;
  }

  held(userId: string): number {
    return this.snapshots.get(userId)?.rows ?? 0;
  }

  shed(bytes: number): number {
    let freed = 0;
    for (const [userId, snapshot] of [...this.snapshots].sort(([, a], [, b]) => b.bytes - a.bytes)) {
      if (freed >= bytes) return freed;
      this.evict(userId);
      freed += snapshot.bytes;
    }
    // Still short: a build would soon hold as much again.
    if (freed < bytes) for (const userId of [...this.builds.keys()]) this.evict(userId);
    return freed;
  }

  arrayBytes(userId: string): number {
    return this.snapshots.get(userId)?.arrayBytes ?? 0;
  }

  /** The query's lexemes, by PostgreSQL's english configuration as the stored tsvectors; once per query. */
  lexemes(query: SearchQuery): Promise<string[]> {
    let lexemes = this.queryLexemes.get(query);
    if (!lexemes) {
      lexemes = this.db
        .query<{ lexemes: string[] }>(`SELECT coalesce(array_agg(DISTINCT lexeme), '{}') AS lexemes FROM unnest(to_tsvector('english', $1))`, [query.text])
        .then(([row]) => row?.lexemes ?? []);
      this.queryLexemes.set(query, lexemes);
    }
    return lexemes;
  }

  /** Runs one list of a search; a build in the background lets the lists in flight go first (yieldToSearches). */
  async searching<T>(list: () => Promise<T>): Promise<T> {
    this.lists++;
    try {
      return await list();
    } finally {
      if (--this.lists === 0) for (const resume of this.idle.splice(0)) resume();
    }
  }

  /**
   * Before each chunk of a build: waits until no list of a search is in flight (at most YIELD_MS), so that a search
   * answered in SQL meanwhile waits behind one chunk at most, not behind the whole build.
   */
  private async yieldToSearches(): Promise<void> {
    if (this.lists === 0) return;
    await new Promise<void>((resume) => {
      const done = () => {
        clearTimeout(timer);
        const at = this.idle.indexOf(done);
        if (at >= 0) this.idle.splice(at, 1);
        resume();
      };
      const timer = setTimeout(done, YIELD_MS);
      this.idle.push(done);
    });
  }

  private startBuild(userId: string): void {
    if (this.closed || this.builds.has(userId)) return;
    // In the background: the search that asked goes on in SQL, and so do the next ones until this one is held.
    this.build(userId).catch(this.onError);
  }

  private async head(userId: string): Promise<{ turnsRev: number; windowsRev: number; purgedRev: number; turns: number }> {
    const [head] = await this.db.query<{ turns_rev: number | null; windows_rev: number | null; purged_rev: number | null; turns: number | null }>(
      `SELECT (SELECT max(rev) FROM memory_turns WHERE user_id = $1)::float8 AS turns_rev, (SELECT max(rev) FROM interactions WHERE user_id = $1)::float8 AS windows_rev,
              (SELECT rev FROM search_purges WHERE user_id = $1)::float8 AS purged_rev, (SELECT docs FROM memory_turn_stats WHERE user_id = $1) AS turns`,
      [userId],
    );
    return { turnsRev: head?.turns_rev ?? 0, windowsRev: head?.windows_rev ?? 0, purgedRev: head?.purged_rev ?? 0, turns: head?.turns ?? 0 };
  }

  /** A new snapshot of the user, loaded chunk by chunk; held unless cancelled, closed, or too large. */
  private async load(userId: string, build: Build): Promise<UserSnapshot | null> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const head = await this.head(userId);
      // Interactions are windows of turns, so a user holds at most twice their turns in rows.
      if (2 * head.turns > this.maxRows) return null;
      const snapshot = new UserSnapshot(head.purgedRev);
      const stop = () => build.cancelled || this.closed || snapshot.rows > this.maxRows;
      // False: a row was rewritten while loading; start over.
      if (!(await this.catchUp(userId, snapshot, stop, true))) continue;
      if (stop()) return null;
      snapshot.trim();
      this.install(userId, snapshot);
      return snapshot;
    }
    return null;
  }

  /** A held snapshot brought up to date; null (and a build in the background) when it can no longer be. */
  private async refresh(userId: string, snapshot: UserSnapshot): Promise<UserSnapshot | null> {
    const head = await this.head(userId);
    if (this.snapshots.get(userId) !== snapshot) return null; // evicted meanwhile
    const stale = () => this.snapshots.get(userId) !== snapshot;
    let current = head.purgedRev === snapshot.purgedRev;
    if (current && (head.turnsRev > snapshot.turnsRev || head.windowsRev > snapshot.windowsRev)) current = await this.catchUp(userId, snapshot, stale);
    if (stale()) return null;
    if (!current || snapshot.rows > this.maxRows) {
      // Rows were deleted or rewritten (or the user outgrew the limit): rebuilt off the request path.
      this.snapshots.delete(userId);
      if (snapshot.rows <= this.maxRows) this.startBuild(userId);
      return null;
    }
    this.install(userId, snapshot);
    return snapshot;
  }

  /** Most recently used last; the least recently used go first when the rows pass the limit. */
  private install(userId: string, snapshot: UserSnapshot): void {
    this.snapshots.delete(userId);
    this.snapshots.set(userId, snapshot);
    let rows = 0;
    for (const s of this.snapshots.values()) rows += s.rows;
    for (const [id, s] of this.snapshots) {
      if (rows <= this.maxRows || id === userId) break;
      this.snapshots.delete(id);
      rows -= s.rows;
    }
  }

  /**
   * Loads the user's rows written since the snapshot's, a chunk at a time until `stop` says so; false when one of them
   * rewrote a row it holds. Each chunk is one statement read in binary COPY format, its vectors' codes and tsvectors in
   * their binary forms (COPY takes no parameters: the user and the revision are written into it). A full chunk's
   * successor is asked for as soon as it arrives, from its last revision, so that PGlite reads it while this thread
   * adds the rows: the two took about as long, one after the other.
   */
  private async catchUp(userId: string, snapshot: UserSnapshot, stop: () => boolean, background = false): Promise<boolean> {
    for (const kind of [TURNS, WINDOWS]) {
      const chunk = (after: number) =>
        this.copy(`SELECT ${kind.columns} FROM ${kind.from} WHERE ${kind.alias}.user_id = ${sqlLiteral(userId)} AND ${kind.alias}.rev > ${revLiteral(after)} ORDER BY ${kind.alias}.rev LIMIT ${CHUNK}`);
      if (background) await this.yieldToSearches();
      let next: Promise<Uint8Array> | undefined = chunk(kind.rev(snapshot));
      while (next) {
        const rows = new CopyRows(await next);
        next = undefined;
        if (stop()) return true;
        if (rows.count() === CHUNK) {
          if (background) await this.yieldToSearches();
          if (!stop()) next = chunk(rows.lastInt8(kind.revField)!);
        }
        if (kind.add(snapshot, rows) === false) {
          await next?.catch(() => undefined);
          return false;
        }
      }
    }
    return true;
  }
}

/**
 * What a snapshot loads of each row, in this order (UserSnapshot reads the fields by position): what filters and
 * rankings read, and its revision (never the text). A turn's `last_char` is its text's last character, trailing
 * whitespace aside (asksQuestion's): enough to tell whether the turn asks. A vector comes as its codes (migration 27),
 * or for a row written without them as the vector itself, which the load quantises.
 */
const TURN_COLUMNS = `t.session_id, t.seq, t.agent_id, t.speaker, t.occurred_at, t.refers_from, t.refers_to, right(rtrim(t.text, ' \t\n\r\f\v'), 1) AS last_char,
  t.embedding_model, t.vector_codes, CASE WHEN t.vector_codes IS NULL THEN t.vector END, t.doc_len, t.rev, t.tsv`;
const WINDOW_COLUMNS = `i.id, i.session_id, d."agentIds", d."seqRange", d."startedAt", i.embedding_model, i.content_codes, i.summary_codes,
  CASE WHEN i.content_codes IS NULL THEN i.content_vector END, CASE WHEN i.summary_codes IS NULL THEN i.summary_vector END, i.doc_len, i.rev, i.tsv`;

/** How a snapshot loads each kind of row: the statement's parts, the revision's field, and the snapshot's own. */
interface RowLoad {
  columns: string;
  from: string;
  alias: string;
  revField: number;
  rev(snapshot: UserSnapshot): number;
  add(snapshot: UserSnapshot, rows: CopyRows): number | false;
}
const TURNS: RowLoad = { columns: TURN_COLUMNS, from: 'memory_turns t', alias: 't', revField: 12, rev: (s) => s.turnsRev, add: (s, rows) => s.addTurns(rows) };
const WINDOWS: RowLoad = {
  columns: WINDOW_COLUMNS,
  // An interaction's document is read once for the three fields (each `doc->` read, and decompressed, all of it again).
  from: `interactions i, jsonb_to_record(i.doc) AS d("agentIds" jsonb, "seqRange" jsonb, "startedAt" text)`,
  alias: 'i',
  revField: 11,
  rev: (s) => s.windowsRev,
  add: (s, rows) => s.addWindows(rows),
};

const revLiteral = (rev: number): string => {
  if (!Number.isSafeInteger(rev)) throw new Error(`A search revision is an integer: ${rev}`);
  return String(rev);
};

/** How a ranked row is read back: its session, and its seq (a turn) or id (an interaction). */
interface RowKey {
  sessionId: string;
  ref: number | string;
}

/** A user's turns and interactions, each with a BM25 term index over one lexicon; rows are only added (a rewrite rebuilds). */
class UserSnapshot {
  turnsRev = 0;
  windowsRev = 0;
  private readonly lexicon = new Lexicon();
  readonly turns = new Collection(1, this.lexicon);
  readonly windows = new Collection(2, this.lexicon);

  constructor(readonly purgedRev: number) {}

  get rows(): number {
    return this.turns.rows + this.windows.rows;
  }

  /** Bytes held in typed arrays (vectors' codes and norms, packed postings); the rest is in the JavaScript heap. */
  get arrayBytes(): number {
    return this.turns.arrayBytes + this.windows.arrayBytes + this.lexicon.byteLength;
  }

  /** What the snapshot holds in all, reckoned: its typed arrays and HEAP_BYTES_PER_ROW a row. */
  get bytes(): number {
    return this.arrayBytes + this.rows * HEAP_BYTES_PER_ROW;
  }

  /** After a build: the postings are laid out, and give back their spare room. */
  trim(): void {
    this.lexicon.trim();
    this.turns.trim();
    this.windows.trim();
  }

  /** Adds the turns of a chunk (TURN_COLUMNS); how many, or false when one rewrote a row held. */
  addTurns(rows: CopyRows): number | false {
    this.turns.reserve(rows.count());
    let added = 0;
    while (rows.next()) {
      const agentId = rows.text(2);
      const refersFrom = rows.timestamptz(5);
      const refersTo = rows.timestamptz(6);
      const ok = this.turns.add(rows.text(0)!, rows.int4(1)!, agentId ? [agentId] : [], rows.timestamptz(4)!, rows.text(8)!, [codesOf(rows.binary(9), rows.binary(10))], rows.binary(13), rows.int4(11) ?? 0, {
        speaker: rows.text(3)!,
        ...(refersFrom !== null && refersTo !== null && { refers: [refersFrom, refersTo] as const }),
        asks: asksQuestion(rows.text(7) ?? ''),
      });
      if (!ok) return false;
      this.turnsRev = rows.int8(12)!;
      added++;
    }
    return added;
  }

  /** Adds the interactions of a chunk (WINDOW_COLUMNS); how many, or false when one rewrote a row held. */
  addWindows(rows: CopyRows): number | false {
    this.windows.reserve(rows.count());
    let added = 0;
    while (rows.next()) {
      const ok = this.windows.add(
        rows.text(1)!,
        rows.text(0)!,
        (rows.jsonb(2) as string[] | null) ?? [],
        Date.parse(rows.text(4)!),
        rows.text(5)!,
        [codesOf(rows.binary(6), rows.binary(8)), codesOf(rows.binary(7), rows.binary(9))],
        rows.binary(12),
        rows.int4(10) ?? 0,
        { seqRange: rows.jsonb(3) as [number, number] },
      );
      if (!ok) return false;
      this.windowsRev = rows.int8(11)!;
      added++;
    }
    return added;
  }
}

/**
 * A vector's int8 codes: a view of `stored` (vectorCodes'), or for a row written without them new codes quantised from
 * `vector`, pgvector's binary form; empty for a NULL vector (never ranked).
 */
function codesOf(stored: Buffer | null, vector: Buffer | null): Int8Array {
  if (stored) return new Int8Array(stored.buffer, stored.byteOffset, stored.byteLength);
  // vector_send: dimensions and a reserved word as 16-bit integers, then big-endian float4s.
  if (!vector || vector.length < 4 || vector.length !== 4 + 4 * vector.readUInt16BE(0)) return NO_CODES;
  const floats = new Float32Array(vector.readUInt16BE(0));
  const bytes = Buffer.from(floats.buffer);
  bytes.set(vector.subarray(4));
  if (LITTLE_ENDIAN) bytes.swap32();
  const codes = new Int8Array(floats.length);
  quantise(floats, codes, 0);
  return codes;
}
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;
const NO_CODES = new Int8Array(0);

/** Postings pack a row and a term frequency into one 32-bit integer: a row below 2^20, a frequency below 2^12. */
const TF_BITS = 12;
const TF_CAP = 2 ** TF_BITS - 1;
/** Rows one collection can hold. */
const MAX_COLLECTION_ROWS = 2 ** (32 - TF_BITS);
/**
 * Rows of one kind: per row, what the filters read (session, agents, time: small numbers and shared strings), the
 * embedding model, the BM25 length, the key to read the row back with; per vector column, the int8 codes; and the
 * postings: per lexeme, the rows that hold it and how often.
 */
export class Collection {
  private readonly keys = new Set<string | number>();
  private readonly refs: (number | string)[] = [];
  private readonly sessionOf = new Numbers('int');
  private readonly sessions: string[] = [];
  private readonly sessionIndex = new Map<string, number>();
  /** Each row's agents, as an index into `agentSets` (most rows share a handful of sets). */
  private readonly agentsOf = new Numbers('int');
  private readonly agentSets: (readonly string[])[] = [];
  private readonly agentSetIndex = new Map<string, number>();
  private readonly times = new Numbers('float');
  /**
   * Each row's speaker (a turn's), as an index into `speakers`, the period it refers to (a turn's; NaN for none),
   * whether it asks (a turn's; 1 or 0), and seq range (an interaction's): what ranking reads.
   */
  private readonly speakerOf = new Numbers('int');
  private readonly speakers: string[] = [];
  private readonly speakerIndex = new Map<string, number>();
  private readonly refersFrom = new Numbers('float');
  private readonly refersTo = new Numbers('float');
  private readonly asks = new Numbers('int');
  private readonly seqStarts = new Numbers('int');
  private readonly seqEnds = new Numbers('int');
  /** Each row's embedding model, as an index into `models`: the scan compares numbers, not the rows' strings. */
  private readonly modelOf = new Numbers('int');
  private readonly models: string[] = [];
  private readonly lengths = new Numbers('int');
  private totalLength = 0;
  /** One per vector column, made by the first row (its size); a vector of another size is never ranked. */
  private matrices: Int8Matrix[] = [];
  /** Per lexeme (its number in `lexicon`, which the user's other collection shares), the rows that hold it. */
  private readonly postings: Postings;
  /** Frequencies above TF_CAP, by row and lexeme (hardly ever used). */
  private readonly largeTf = new Map<number, number>();
  private expected = 0;

  constructor(
    private readonly vectorColumns: number,
    private readonly lexicon = new Lexicon(),
  ) {
    this.postings = new Postings(lexicon);
  }

  get rows(): number {
    return this.refs.length;
  }

  get arrayBytes(): number {
    let bytes = this.matrices.reduce((sum, m) => sum + m.byteLength, 0);
    for (const numbers of this.perRow()) bytes += numbers.byteLength;
    bytes += this.postings.byteLength;
    return bytes;
  }

  /**
   * Adds a row with its vectors' int8 codes (one per column; empty: none), its tsvector's binary form (null: none),
   * and what ranking reads of it: a turn's speaker, the period it refers to (milliseconds) and whether it asks, an
   * interaction's seq range. False when the key is held already: a rewritten row, which the caller answers with a rebuild.
   */
  add(
    sessionId: string,
    ref: number | string,
    agentIds: readonly string[],
    time: number,
    model: string,
    vectors: readonly Int8Array[],
    tsv: Buffer | null,
    length: number,
    { speaker = '', refers = [NaN, NaN], asks = false, seqRange = [0, 0] }: { speaker?: string; refers?: readonly [number, number]; asks?: boolean; seqRange?: readonly [number, number] } = {},
  ): boolean {
    let session = this.sessionIndex.get(sessionId);
    if (session === undefined) {
      session = this.sessions.push(sessionId) - 1;
      this.sessionIndex.set(sessionId, session);
    }
    // A turn's key: its session's index and seq as one number; an interaction's: its id.
    const key = typeof ref === 'number' ? session * 2 ** 32 + ref : ref;
    if (this.keys.has(key)) return false;
    const row = this.refs.length;
    if (row >= MAX_COLLECTION_ROWS) throw new Error(`A search snapshot holds at most ${MAX_COLLECTION_ROWS} rows of a kind`);
    this.keys.add(key);
    this.refs.push(ref);
    this.sessionOf.push(session);
    const agentsKey = agentIds.join('\n');
    let agents = this.agentSetIndex.get(agentsKey);
    if (agents === undefined) {
      agents = this.agentSets.push([...agentIds]) - 1;
      this.agentSetIndex.set(agentsKey, agents);
    }
    this.agentsOf.push(agents);
    this.times.push(time);
    let speakerId = this.speakerIndex.get(speaker);
    if (speakerId === undefined) {
      speakerId = this.speakers.push(speaker) - 1;
      this.speakerIndex.set(speaker, speakerId);
    }
    this.speakerOf.push(speakerId);
    this.refersFrom.push(refers[0]);
    this.refersTo.push(refers[1]);
    this.asks.push(asks ? 1 : 0);
    this.seqStarts.push(seqRange[0]);
    this.seqEnds.push(seqRange[1]);
    let modelId = this.models.indexOf(model);
    if (modelId < 0) modelId = this.models.push(model) - 1;
    this.modelOf.push(modelId);
    vectors.forEach((codes, column) => {
      if (this.matrices.length === 0) {
        this.matrices = Array.from({ length: this.vectorColumns }, () => new Int8Matrix(codes.length));
        this.matrices.forEach((m) => m.reserve(Math.max(this.expected, 64)));
      }
      this.matrices[column]!.addCodes(codes);
    });
    this.lengths.push(length);
    this.totalLength += length;
    if (tsv) forEachLexeme(tsv, (bytes, start, end, tf) => this.post(this.lexicon.intern(bytes, start, end), row, tf));
    return true;
  }

  private perRow(): Numbers[] {
    return [this.sessionOf, this.agentsOf, this.times, this.speakerOf, this.refersFrom, this.refersTo, this.asks, this.seqStarts, this.seqEnds, this.modelOf, this.lengths];
  }

  /** Rows about to be added: the matrices grow once for all of them. */
  reserve(more: number): void {
    this.expected = this.rows + more;
    for (const m of this.matrices) m.reserve(this.expected);
  }

  private post(lexeme: number, row: number, tf: number): void {
    if (tf >= TF_CAP) this.largeTf.set(row * 2 ** 32 + lexeme, tf);
    this.postings.push(lexeme, row * 2 ** TF_BITS + Math.min(tf, TF_CAP));
  }

  /** After a build: the postings are laid out, and the per-row numbers give back their spare room. */
  trim(): void {
    this.postings.layOut();
    for (const numbers of this.perRow()) numbers.trim();
    for (const matrix of this.matrices) matrix.trim();
  }

  /** How a ranked row is read back. */
  key(row: number): RowKey {
    return { sessionId: this.sessions[this.sessionOf.values[row]!]!, ref: this.refs[row]! };
  }

  /** A turn's row as a hit, without what its fact shows (`shown`: read for the facts returned only). */
  turnHit(row: number): TurnHit {
    const [agentId] = this.agentSets[this.agentsOf.values[row]!]!;
    const from = this.refersFrom.values[row]!;
    const to = this.refersTo.values[row]!;
    return {
      kind: 'turn',
      sessionId: this.sessions[this.sessionOf.values[row]!]!,
      seq: this.refs[row] as number,
      ...(agentId && { agentId }),
      speaker: this.speakers[this.speakerOf.values[row]!]!,
      timestamp: new Date(this.times.values[row]!).toISOString(),
      ...(!Number.isNaN(from) && { refers: { from: new Date(from).toISOString(), to: new Date(to).toISOString() } }),
      ...(this.asks.values[row] === 1 && { asks: true }),
    };
  }

  /** An interaction's row as a hit, without what its fact shows (as turnHit). */
  windowHit(row: number): WindowHit {
    return {
      kind: 'interaction',
      id: this.refs[row] as string,
      sessionId: this.sessions[this.sessionOf.values[row]!]!,
      seqRange: [this.seqStarts.values[row]!, this.seqEnds.values[row]!],
      agentIds: [...this.agentSets[this.agentsOf.values[row]!]!],
      timestamp: new Date(this.times.values[row]!).toISOString(),
    };
  }

  /** The filters as a test of a row, with what they name looked up once per query rather than once per row. */
  private filter(f: SearchFilters): (row: number) => boolean {
    const session = f.sessionId ? (this.sessionIndex.get(f.sessionId) ?? -1) : undefined;
    const from = f.from ? Date.parse(f.from) : -Infinity;
    const to = f.to ? Date.parse(f.to) : Infinity;
    return (row) =>
      (session === undefined || this.sessionOf.values[row] === session) &&
      (!f.agentId || this.agentSets[this.agentsOf.values[row]!]!.includes(f.agentId)) &&
      this.times.values[row]! >= from &&
      this.times.values[row]! <= to;
  }

  /**
   * Okapi BM25 as bm25Sql computes it: idf from the postings of all the user's rows, length from each row, filters on
   * the scored rows; ties go to the later row. The `limit` best rows.
   */
  bm25(query: SearchQuery, lexemes: readonly string[]): number[] {
    const n = Math.max(this.rows, 1);
    const avgdl = Math.max(this.totalLength / n, 1);
    const scores = new Map<number, number>();
    for (const lexeme of lexemes.map((l) => this.lexicon.find(l))) {
      if (lexeme < 0) continue;
      const df = this.postings.count(lexeme);
      if (df === 0) continue;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      this.postings.forEach(lexeme, (code) => {
        const row = Math.floor(code / 2 ** TF_BITS);
        let tf = code % 2 ** TF_BITS;
        if (tf === TF_CAP) tf = this.largeTf.get(row * 2 ** 32 + lexeme) ?? tf;
        const score = (idf * (tf * (BM25.k1 + 1))) / (tf + BM25.k1 * (1 - BM25.b + (BM25.b * this.lengths.values[row]!) / avgdl));
        scores.set(row, (scores.get(row) ?? 0) + score);
      });
    }
    const matches = this.filter(query.filters);
    const ranked = [...scores].filter(([row]) => matches(row));
    ranked.sort(([a, x], [b, y]) => y - x || this.times.values[b]! - this.times.values[a]!);
    return ranked.slice(0, query.limit).map(([row]) => row);
  }

  /**
   * The `pool` rows of the query's model nearest by the codes' cosine: the candidates of the exact re-rank. Nothing
   * when the query has no vector or one of another size.
   */
  candidates(query: SearchQuery, column: number, pool: number): number[] {
    const matrix = this.matrices[column];
    if (!query.vector || !matrix || query.vector.values.length !== matrix.dims) return [];
    const modelId = this.models.indexOf(query.vector.model);
    if (modelId < 0) return [];
    const matches = hasFilters(query.filters) ? this.filter(query.filters) : undefined;
    const modelOf = this.modelOf.values;
    return matrix.nearest(query.vector.values, pool, (row) => modelOf[row] === modelId && (!matches || matches(row)));
  }
}

const hasFilters = (f: SearchFilters) => Boolean(f.sessionId || f.agentId || f.from || f.to);
