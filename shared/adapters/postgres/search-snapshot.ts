import type { Retriever } from '../../contracts/facts.js';
import type { IndexedTurn, SearchFilters, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../application/search-ports.js';
import type { Db } from './db.js';
import { BM25 } from '../../domain/ranking.js';
import { TURN_COLUMNS, turnHit, WINDOW_COLUMNS, windowHit, type TurnRow, type WindowRow } from './search-hits.js';

/**
 * In-process search snapshots for PGlite. PGlite runs in this process, one statement at a time on one thread, so the
 * five ranked lists of a fact search are five statements in a row (about 90 ms for a user with 10k turns and 10k
 * interactions). A snapshot holds a user's searchable rows (hits, vectors, term frequencies) in memory and ranks them
 * in JavaScript: exact cosine and the same BM25 as the SQL (bm25Sql, windowBm25Sql), under 10 ms a list at 10k.
 *
 * PostgreSQL stays the source of truth. Every write to memory_turns and interactions takes the next `search_rev`, and
 * deletions record one in `search_purges` (migration 11). Before a search one statement reads the user's newest
 * revisions; the snapshot then loads the rows past the ones it holds, and is rebuilt when a row it holds was
 * rewritten or the user had rows deleted. Revisions are in commit order only when one connection writes, as with
 * PGlite, so snapshots are for PGlite alone (a PostgreSQL server ranks in SQL). Snapshots are kept for the most
 * recently searched users up to a total of `maxRows` rows; a user larger than that is ranked in SQL.
 *
 * SnapshotSearchIndex is the SearchIndex that composition chooses for PGlite when SEARCH_SNAPSHOT_ROWS > 0; it ranks
 * from SearchSnapshots and leaves writes, and users too large to hold, to the SQL index it is given.
 */
export class SnapshotSearchIndex implements SearchIndex {
  private readonly snapshots: SearchSnapshots;

  /**
   * `sql`: the SQL index over the same database (PostgresSearchIndex), which writes the rows the snapshots load and
   * ranks the users they do not hold. `maxRows`: the rows held in all, over the most recently searched users.
   */
  constructor(
    db: Db,
    private readonly sql: SearchIndex,
    { maxRows }: { maxRows: number },
  ) {
    if (db.kind !== 'pglite') throw new Error('Search snapshots need PGlite: with several connections revisions do not commit in order');
    this.snapshots = new SearchSnapshots(db, maxRows);
  }

  indexTurns(turns: readonly IndexedTurn[]): Promise<void> {
    return this.sql.indexTurns(turns);
  }

  /** Forget: drops the user's snapshot (the rows it held). */
  evict(userId: string): number {
    return this.snapshots.evict(userId);
  }

  /** Forget's scan: the rows held for the user in this process. */
  held(userId: string): number {
    return this.snapshots.held(userId);
  }

  speakers(userId: string): Promise<string[]> {
    return this.sql.speakers(userId);
  }

  async turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    const snapshot = await this.snapshots.of(query.userId);
    return snapshot ? snapshot.searchTurns(query, retriever, await this.lexemes(query, retriever)) : this.sql.turns(query, retriever);
  }

  async interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    const snapshot = await this.snapshots.of(query.userId);
    return snapshot ? snapshot.searchWindows(query, retriever, await this.lexemes(query, retriever)) : this.sql.interactions(query, retriever);
  }

  /** Only full text needs the query's lexemes; the vector rankings do not wait for them. */
  private lexemes(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<string[]> {
    return retriever === 'fulltext' ? this.snapshots.lexemes(query) : Promise.resolve([]);
  }
}

/** Users' snapshots, brought up to date before each search; see SnapshotSearchIndex. */
export class SearchSnapshots {
  private readonly snapshots = new Map<string, UserSnapshot>();
  private readonly refreshing = new Map<string, Promise<UserSnapshot | null>>();
  private readonly queryLexemes = new WeakMap<SearchQuery, Promise<string[]>>();

  constructor(
    private readonly db: Db,
    private readonly maxRows: number,
  ) {}

  /**
   * The user's snapshot, brought up to date; null when the user is too large to hold. The lists of one search start
   * together and share one refresh.
   */
  of(userId: string): Promise<UserSnapshot | null> {
    let pending = this.refreshing.get(userId);
    if (!pending) {
      pending = this.refresh(userId).finally(() => this.refreshing.delete(userId));
      this.refreshing.set(userId, pending);
    }
    return pending;
  }

  evict(userId: string): number {
    const rows = this.held(userId);
    this.snapshots.delete(userId);
    return rows;
  }

  held(userId: string): number {
    return this.snapshots.get(userId)?.rows ?? 0;
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

  private async refresh(userId: string): Promise<UserSnapshot | null> {
    const [head] = await this.db.query<{ turns_rev: number | null; windows_rev: number | null; purged_rev: number | null; turns: number | null }>(
      `SELECT (SELECT max(rev) FROM memory_turns WHERE user_id = $1)::float8 AS turns_rev, (SELECT max(rev) FROM interactions WHERE user_id = $1)::float8 AS windows_rev,
              (SELECT rev FROM search_purges WHERE user_id = $1)::float8 AS purged_rev, (SELECT docs FROM memory_turn_stats WHERE user_id = $1) AS turns`,
      [userId],
    );
    const turnsRev = head?.turns_rev ?? 0;
    const windowsRev = head?.windows_rev ?? 0;
    const purgedRev = head?.purged_rev ?? 0;
    let snapshot = this.snapshots.get(userId);
    this.snapshots.delete(userId);
    if (snapshot?.purgedRev !== purgedRev) snapshot = undefined;
    // Interactions are windows of turns, so a user holds at most twice their turns in rows.
    if (!snapshot && 2 * (head?.turns ?? 0) > this.maxRows) return null;
    snapshot ??= new UserSnapshot(purgedRev);
    if (turnsRev > snapshot.turnsRev && !(await this.loadTurns(userId, snapshot))) return this.refresh(userId);
    if (windowsRev > snapshot.windowsRev && !(await this.loadWindows(userId, snapshot))) return this.refresh(userId);
    if (snapshot.rows > this.maxRows) return null;
    // Most recently used last; the least recently used go first when the rows pass the limit.
    this.snapshots.set(userId, snapshot);
    let rows = 0;
    for (const s of this.snapshots.values()) rows += s.rows;
    for (const [id, s] of this.snapshots) {
      if (rows <= this.maxRows || id === userId) break;
      this.snapshots.delete(id);
      rows -= s.rows;
    }
    return snapshot;
  }

  /** Adds the user's turns written since the snapshot's; false when one of them rewrote a turn it holds. */
  private async loadTurns(userId: string, snapshot: UserSnapshot): Promise<boolean> {
    const rows = await this.db.query<TurnRow & Loaded>(
      `SELECT ${TURN_COLUMNS}, t.embedding_model, encode(vector_send(t.vector), 'base64') AS vector, t.doc_len, t.rev::float8 AS rev, t.tsv::text AS tsv
       FROM memory_turns t WHERE t.user_id = $1 AND t.rev > $2 ORDER BY t.rev`,
      [userId, snapshot.turnsRev],
    );
    return snapshot.addTurns(rows);
  }

  /** Adds the user's interactions written since the snapshot's; false when one of them rewrote one it holds. */
  private async loadWindows(userId: string, snapshot: UserSnapshot): Promise<boolean> {
    const rows = await this.db.query<WindowRow & Loaded & { summary_vector: string }>(
      `SELECT ${WINDOW_COLUMNS}, i.embedding_model, encode(vector_send(i.content_vector), 'base64') AS vector, encode(vector_send(i.summary_vector), 'base64') AS summary_vector,
              i.doc_len, i.rev::float8 AS rev, i.tsv::text AS tsv
       FROM interactions i WHERE i.user_id = $1 AND i.rev > $2 ORDER BY i.rev`,
      [userId, snapshot.windowsRev],
    );
    return snapshot.addWindows(rows);
  }
}

/** What a snapshot loads with each row's hit: its (first) vector, its BM25 length and terms, and its revision. */
type Loaded = { embedding_model: string; vector: string; doc_len: number | null; rev: number; tsv: string | null };

/** One searchable row: what a hit shows, and what filters and rankings read. */
interface Entry<H> {
  hit: H;
  sessionId: string;
  agentIds: readonly string[];
  /** Epoch milliseconds of the turn, or of the window's first turn. */
  time: number;
  model: string;
}

/** A user's turns and interactions, each with a BM25 term index; rows are only added (a rewrite rebuilds). */
export class UserSnapshot {
  turnsRev = 0;
  windowsRev = 0;
  private readonly turns = new Collection<TurnHit>(1);
  private readonly windows = new Collection<WindowHit>(2);

  constructor(readonly purgedRev: number) {}

  get rows(): number {
    return this.turns.entries.length + this.windows.entries.length;
  }

  addTurns(rows: readonly (TurnRow & Loaded)[]): boolean {
    this.turns.reserve(rows.length);
    for (const r of rows) {
      const hit = turnHit(r);
      const entry = { hit, sessionId: r.session_id, agentIds: r.agent_id ? [r.agent_id] : [], time: Date.parse(hit.timestamp), model: r.embedding_model };
      if (!this.turns.add(`${r.session_id}#${r.seq}`, entry, [r.vector], r.tsv ?? '', r.doc_len ?? 0)) return false;
      this.turnsRev = r.rev;
    }
    return true;
  }

  addWindows(rows: readonly (WindowRow & Loaded & { summary_vector: string })[]): boolean {
    this.windows.reserve(rows.length);
    for (const r of rows) {
      const hit = windowHit(r);
      const entry = { hit, sessionId: r.session_id, agentIds: hit.agentIds, time: Date.parse(hit.timestamp), model: r.embedding_model };
      if (!this.windows.add(r.id, entry, [r.vector, r.summary_vector], r.tsv ?? '', r.doc_len ?? 0)) return false;
      this.windowsRev = r.rev;
    }
    return true;
  }

  searchTurns(query: SearchQuery, retriever: Retriever, lexemes: readonly string[]): TurnHit[] {
    return retriever === 'vector' ? this.turns.nearest(query, 0) : this.turns.bm25(query, lexemes);
  }

  searchWindows(query: SearchQuery, retriever: Retriever | 'summaryVector', lexemes: readonly string[]): WindowHit[] {
    if (retriever === 'fulltext') return this.windows.bm25(query, lexemes);
    return this.windows.nearest(query, retriever === 'vector' ? 0 : 1);
  }
}

/**
 * Calls `term` with each lexeme of a tsvector's text form and how often it occurs (`'lake':3,7 'paint':1A`: each
 * lexeme quoted, a quote in it doubled and a backslash escaped, then its positions; a lexeme without positions counts
 * once, as in bm25Sql). Scanned by hand: a user's snapshot reads a few million of them.
 */
export function forEachTerm(tsv: string, term: (lexeme: string, tf: number) => void): void {
  let i = tsv.indexOf("'");
  while (i >= 0) {
    let lexeme = '';
    let start = i + 1;
    let j = start;
    for (;;) {
      const c = tsv.charCodeAt(j);
      if (c === 92 /* \ */) {
        lexeme += tsv.slice(start, j);
        start = j + 1;
        j += 2;
      } else if (c === 39 /* ' */) {
        if (tsv.charCodeAt(j + 1) !== 39) break;
        lexeme += tsv.slice(start, j + 1);
        start = j += 2;
      } else if (Number.isNaN(c)) {
        return;
      } else j++;
    }
    lexeme += tsv.slice(start, j);
    let tf = 1;
    let k = j + 1;
    if (tsv.charCodeAt(k) === 58 /* : */) {
      for (k++; k < tsv.length && tsv.charCodeAt(k) !== 32 /* space */; k++) if (tsv.charCodeAt(k) === 44 /* , */) tf++;
    }
    term(lexeme, tf);
    i = tsv.indexOf("'", k);
  }
}

/**
 * pgvector's binary form (`vector_send`: dimensions and a reserved word as 16-bit integers, then big-endian float4s)
 * into `matrix` at `offset`; returns the vector's norm, 0 when it is not `dims` long (another model's: never ranked).
 */
function readVector(binary: Buffer, dims: number, matrix: Float32Array, offset: number): number {
  if (binary.readUInt16BE(0) !== dims) return 0;
  let norm = 0;
  for (let i = 0; i < dims; i++) {
    const x = binary.readFloatBE(4 + 4 * i);
    matrix[offset + i] = x;
    norm += x * x;
  }
  return Math.sqrt(norm);
}

/** Row `row` of a row-major matrix of `dims` columns, times `q`; four sums, which the JIT runs side by side. */
function dotRow(matrix: Float32Array, row: number, q: Float32Array, dims: number): number {
  const offset = row * dims;
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i + 3 < dims; i += 4) {
    s0 += matrix[offset + i]! * q[i]!;
    s1 += matrix[offset + i + 1]! * q[i + 1]!;
    s2 += matrix[offset + i + 2]! * q[i + 2]!;
    s3 += matrix[offset + i + 3]! * q[i + 3]!;
  }
  for (; i < dims; i++) s0 += matrix[offset + i]! * q[i]!;
  return s0 + s1 + s2 + s3;
}

/**
 * Rows of one kind: their vectors (one row-major matrix per vector column, contiguous, so a scan reads memory in
 * order) and their postings: per lexeme, the rows that hold it and how often.
 */
class Collection<H> {
  readonly entries: Entry<H>[] = [];
  private readonly keys = new Set<string>();
  /** Set by the first row; a vector of another size (another model's) is kept as zeros, with norm 0: never ranked. */
  private dims = 0;
  private matrices: Float32Array[];
  /** Rows the matrices have room for, and rows announced by reserve. */
  private capacity = 0;
  private expected = 0;
  private readonly norms: number[][];
  /** Each row's embedding model, as an index into `models`: the scan compares numbers, not the rows' strings. */
  private readonly models: string[] = [];
  private readonly modelOf: number[] = [];
  /** Per lexeme: row, tf, row, tf, … */
  private readonly postings = new Map<string, number[]>();
  private readonly lengths: number[] = [];
  private totalLength = 0;

  constructor(vectorColumns: number) {
    this.matrices = Array.from({ length: vectorColumns }, () => new Float32Array(0));
    this.norms = Array.from({ length: vectorColumns }, () => []);
  }

  /**
   * Adds a row with its vectors (base64 of pgvector's binary form, one per column) and its tsvector's text form. False
   * when the key is held already: a rewritten row, which the caller answers with a rebuild.
   */
  add(key: string, entry: Entry<H>, vectors: readonly string[], tsv: string, length: number): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    const row = this.entries.push(entry) - 1;
    if (!this.models.includes(entry.model)) this.models.push(entry.model);
    this.modelOf.push(this.models.indexOf(entry.model));
    const binaries = vectors.map((base64) => Buffer.from(base64, 'base64'));
    this.dims ||= binaries[0]?.readUInt16BE(0) ?? 0;
    if (row >= this.capacity) this.grow(Math.max(this.expected, 2 * row, 64));
    binaries.forEach((binary, column) => this.norms[column]!.push(readVector(binary, this.dims, this.matrices[column]!, row * this.dims)));
    this.lengths.push(length);
    this.totalLength += length;
    forEachTerm(tsv, (lexeme, tf) => {
      const list = this.postings.get(lexeme);
      if (list) list.push(row, tf);
      else this.postings.set(lexeme, [row, tf]);
    });
    return true;
  }

  /** Rows about to be added: the matrices grow once for all of them. */
  reserve(more: number): void {
    this.expected = this.entries.length + more;
  }

  private grow(rows: number): void {
    this.matrices = this.matrices.map((matrix) => {
      const grown = new Float32Array(rows * this.dims);
      grown.set(matrix);
      return grown;
    });
    this.capacity = rows;
  }

  /**
   * Okapi BM25 as bm25Sql computes it: idf from the postings of all the user's rows, length from each row, filters on
   * the scored rows; ties go to the later row.
   */
  bm25(query: SearchQuery, lexemes: readonly string[]): H[] {
    const n = Math.max(this.entries.length, 1);
    const avgdl = Math.max(this.totalLength / n, 1);
    const scores = new Map<number, number>();
    for (const lexeme of lexemes) {
      const list = this.postings.get(lexeme);
      if (!list) continue;
      const df = list.length / 2;
      const idf = Math.log(1 + (n - df + 0.5) / (df + 0.5));
      for (let i = 0; i < list.length; i += 2) {
        const row = list[i]!;
        const tf = list[i + 1]!;
        const score = (idf * (tf * (BM25.k1 + 1))) / (tf + BM25.k1 * (1 - BM25.b + (BM25.b * this.lengths[row]!) / avgdl));
        scores.set(row, (scores.get(row) ?? 0) + score);
      }
    }
    const ranked = [...scores].filter(([row]) => matches(this.entries[row]!, query.filters));
    ranked.sort(([a, x], [b, y]) => y - x || this.entries[b]!.time - this.entries[a]!.time);
    return ranked.slice(0, query.limit).map(([row]) => this.entries[row]!.hit);
  }

  /** The `limit` rows of the query's model nearest by cosine, exactly. */
  nearest(query: SearchQuery, column: number): H[] {
    if (!query.vector || query.vector.values.length !== this.dims) return [];
    const { model, values } = query.vector;
    const q = Float32Array.from(values);
    const qNorm = Math.hypot(...values) || 1;
    const matrix = this.matrices[column]!;
    const norms = this.norms[column]!;
    const filtered = hasFilters(query.filters);
    const best = new BoundedHeap(query.limit);
    const modelId = this.models.indexOf(model);
    const modelOf = this.modelOf;
    for (let row = 0; row < this.entries.length; row++) {
      if (norms[row] === 0 || modelOf[row] !== modelId || (filtered && !matches(this.entries[row]!, query.filters))) continue;
      best.offer(row, dotRow(matrix, row, q, this.dims) / (qNorm * norms[row]!));
    }
    return best.sorted().map((row) => this.entries[row]!.hit);
  }
}

const hasFilters = (f: SearchFilters) => Boolean(f.sessionId || f.agentId || f.from || f.to);

function matches(entry: Entry<unknown>, f: SearchFilters): boolean {
  return (
    (!f.sessionId || entry.sessionId === f.sessionId) &&
    (!f.agentId || entry.agentIds.includes(f.agentId)) &&
    (!f.from || entry.time >= Date.parse(f.from)) &&
    (!f.to || entry.time <= Date.parse(f.to))
  );
}

/** The `size` highest-scored rows seen, as a min-heap: most rows are turned away by one comparison with the root. */
class BoundedHeap {
  private readonly rows: number[] = [];
  private readonly scores: number[] = [];

  constructor(private readonly size: number) {}

  offer(row: number, score: number): void {
    if (this.size <= 0) return;
    if (this.rows.length < this.size) {
      this.rows.push(row);
      this.scores.push(score);
      this.up(this.rows.length - 1);
    } else if (score > this.scores[0]!) {
      this.rows[0] = row;
      this.scores[0] = score;
      this.down(0);
    }
  }

  /** Highest score first. */
  sorted(): number[] {
    return this.rows.map((row, i) => ({ row, score: this.scores[i]! })).sort((a, b) => b.score - a.score).map((e) => e.row);
  }

  private swap(i: number, j: number): void {
    [this.rows[i], this.rows[j]] = [this.rows[j]!, this.rows[i]!];
    [this.scores[i], this.scores[j]] = [this.scores[j]!, this.scores[i]!];
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.scores[parent]! <= this.scores[i]!) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let least = i;
      if (left < this.rows.length && this.scores[left]! < this.scores[least]!) least = left;
      if (right < this.rows.length && this.scores[right]! < this.scores[least]!) least = right;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
