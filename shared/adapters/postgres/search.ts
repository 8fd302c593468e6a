import { createHash } from 'node:crypto';
import type { Retriever } from '../../contracts/facts.js';
import type { IndexedTurn, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../application/search-ports.js';
import { BM25 } from '../../domain/ranking.js';
import { CopyRows } from './copy-binary.js';
import type { Db, Queryable } from './db.js';
import { asVector, vectorAt, vectorParam, vectorsParam } from './vector-params.js';
import { codesAt, storedCodes } from './compact-vectors.js';
import { showHits, TURN_COLUMNS, turnHit, WINDOW_COLUMNS, windowHit, type TurnRow, type WindowRow } from './search-hits.js';

/**
 * A user with at most this many turns is searched by exact scan, turns and interactions alike (interactions are windows
 * of turns, never more): about as fast as an HNSW walk at that size on PGlite (vectors stored in the row), and exact.
 * Above it the HNSW index answers (README, Fact search). So a user's rows enter the HNSW indexes only once the user has
 * more (`vector_indexed`, see PostgresSearchIndex.indexTurns): most users never pay the inserts.
 */
export const EXACT_SCAN_MAX_ROWS = 2_000;

/**
 * Runs `write`, one statement, with the writes of these users' search rows serialised, so that none is written outside
 * the HNSW indexes beside the turn write that takes its user past EXACT_SCAN_MAX_ROWS (which puts the user's earlier
 * rows in). PGlite runs one statement at a time already, so it needs no transaction (on its own thread, a transaction
 * would hold it while each statement comes from the service's thread); a server takes a transaction lock per user, in
 * order, first.
 */
export async function writeUsersRows(db: Db, users: readonly string[], write: (q: Queryable) => Promise<unknown>): Promise<void> {
  if (db.kind === 'pglite') return void (await write(db));
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('search-rows:' || u, 0)) FROM unnest($1::text[]) u ORDER BY u`, [[...new Set(users)]]);
    await write(tx);
  });
}

/**
 * Whether a user's search rows go in the HNSW indexes, in SQL: the user's turns (`userId` an SQL expression), with the
 * `added` ones of the write, past `max`.
 */
export const indexedForUser = (userId: string, max: string, added = '0') =>
  `coalesce((SELECT s.docs FROM memory_turn_stats s WHERE s.user_id = ${userId}), 0) + ${added} > ${max}`;

/**
 * HNSW candidate list (`hnsw.ef_search`) for a walk that yields `candidates` rows. On the bench's random 512-d vectors
 * at 10k, 2 × 100 gave recall@100 0.7 against 0.5 for 100, for about the same time (the walk must yield 100 rows either
 * way).
 */
const efSearch = (candidates: number) => Math.min(1_000, Math.max(100, 2 * candidates));
/** pgvector's `vector` type holds up to 16,000 dimensions: no larger vector is stored. */
const VECTOR_MAX_DIMENSIONS = 16_000;
/**
 * Vectors of at least this many dimensions are indexed by their binary quantisation (a bit a dimension, its sign), and
 * a search re-ranks the BINARY_RERANK × limit nearest by Hamming distance (at least BINARY_MIN_CANDIDATES) by their exact
 * cosine distance. An insert compares bits instead of floats: on LoCoMo's vectors (USE Lite, 512-d) at 10k turns, a
 * turn's row cost 0.6 ms instead of 3.9 (with BINARY_BUILD), and the SQL path's recall against the exact scan rose
 * (README, Fact search). Below it, too few bits tell vectors apart, and the index holds the vectors themselves.
 */
export const BINARY_INDEX_MIN_DIMENSIONS = 256;
const BINARY_RERANK = 3;
const BINARY_MIN_CANDIDATES = 100;
/**
 * A binary index's: half the insert of pgvector's defaults (neighbour-list pruning grows with m²) and, its candidates
 * re-ranked exactly, the same recall on LoCoMo's vectors at 10k and 45k turns (README, Tests and benchmarks).
 */
const BINARY_BUILD = 'm = 8, ef_construction = 32';
/** Iterative index scans (`hnsw.iterative_scan`), which keep a user's top-k from being lost to other users' vectors. */
const MIN_PGVECTOR = [0, 8] as const;

/** Filters shared by every query; `$1` is the user, the rest are appended after the query's own parameters. */
function filterSql(query: SearchQuery, params: unknown[], alias: string, timeColumn: string, agentColumn: string): string {
  const clauses: string[] = [];
  const add = (sql: (n: number) => string, value: unknown) => {
    params.push(value);
    clauses.push(sql(params.length));
  };
  if (query.filters.sessionId) add((n) => `${alias}.session_id = $${n}`, query.filters.sessionId);
  if (query.filters.agentId) add((n) => agentColumn.replace('$?', `$${n}`), query.filters.agentId);
  if (query.filters.from) add((n) => `${timeColumn} >= $${n}::timestamptz`, query.filters.from);
  if (query.filters.to) add((n) => `${timeColumn} <= $${n}::timestamptz`, query.filters.to);
  return clauses.map((c) => ` AND ${c}`).join('');
}

/**
 * Vectors are only comparable within one embedding model. A store written by another model is refused at start with
 * a clear error rather than searched with half its vectors silently ignored (there is no re-embedding yet).
 */
export async function assertOneEmbeddingModel(db: Db, model: string): Promise<void> {
  const rows = await db.query<{ model: string; vectors: string }>(
    `SELECT embedding_model AS model, count(*)::text AS vectors FROM (
       SELECT embedding_model FROM memory_turns UNION ALL SELECT embedding_model FROM interactions
     ) v WHERE embedding_model <> $1 GROUP BY embedding_model`,
    [model],
  );
  if (rows.length > 0) {
    const found = rows.map((r) => `${r.vectors} from ${r.model}`).join(', ');
    throw new Error(`The store holds vectors of another embedding model (${found}); the configured embedder is ${model}. Use the settings that wrote them, or a new MEMORY_DATA_DIR / DATABASE_URL.`);
  }
}

/** How an HNSW index holds vectors of one size: its expression of a vector, operator class and distance operator. */
export interface HnswKind {
  /** The indexed expression of a vector-valued SQL expression (the column, or the query's parameter). */
  key: (vector: string) => string;
  ops: string;
  operator: string;
  /** The index's build parameters, when not pgvector's defaults (m 16, ef_construction 64). */
  build?: string;
  /** Rows the index walk yields for a top-`limit` search, re-ranked by exact cosine distance. */
  candidates: (limit: number) => number;
}

/** How vectors of this size are indexed, or null when no vector of it can be stored. */
export function hnswKind(dimensions: number): HnswKind | null {
  if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > VECTOR_MAX_DIMENSIONS) return null;
  if (dimensions < BINARY_INDEX_MIN_DIMENSIONS) {
    return { key: (v) => `(${v})::vector(${dimensions})`, ops: 'vector_cosine_ops', operator: '<=>', candidates: (limit) => limit };
  }
  const candidates = (limit: number) => Math.max(BINARY_MIN_CANDIDATES, BINARY_RERANK * limit);
  return { key: (v) => `(binary_quantize(${v}))::bit(${dimensions})`, ops: 'bit_hamming_ops', operator: '<~>', build: BINARY_BUILD, candidates };
}

/**
 * The vector columns searched by cosine distance, each with one HNSW index per embedding model, of the rows searched
 * through it (`vector_indexed`: the rows of users past EXACT_SCAN_MAX_ROWS, migration 25).
 */
const VECTOR_COLUMNS = [
  { table: 'memory_turns', column: 'vector' },
  { table: 'interactions', column: 'content_vector' },
  { table: 'interactions', column: 'summary_vector' },
] as const;
const INDEXED_ONLY = 'vector_indexed';

/** A string as an SQL literal, for the statements that take no parameters (standard_conforming_strings: only a quote is doubled). */
export const sqlLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * The index name: deterministic per model, size, kind and predicate, so a restart finds it and another embedder gets its
 * own. `binary` false names the index of the vectors themselves, which a binary one replaces (their names before binary
 * indexes); `partial` false the index of every row, which one of the rows searched through it replaces (their names
 * before migration 25).
 */
export function hnswIndexName(table: string, column: string, model: string, dimensions: number, { binary = hnswKind(dimensions)?.ops === 'bit_hamming_ops', partial = true } = {}): string {
  const kind = `${binary ? '\nbinary' : ''}${partial ? `\n${INDEXED_ONLY}` : ''}`;
  return `${table}_${column}_hnsw_${createHash('sha256').update(`${model}\n${dimensions}${kind}`).digest('hex').slice(0, 12)}`;
}

/**
 * The vector columns are untyped (`vector`: the size depends on the embedder), and HNSW needs a typed expression, so
 * each is indexed as one of the configured size (hnswKind), partial to the configured model's rows of that size:
 * `((binary_quantize(vector))::bit(512)) bit_hamming_ops WHERE embedding_model = '<model>' AND vector_dims(vector) =
 * 512`, or below BINARY_INDEX_MIN_DIMENSIONS `((vector)::vector(n)) vector_cosine_ops`. Searches order by the very same
 * expression under the same predicate, so the planner can use it. Created at start, idempotently (IF NOT EXISTS, under
 * an advisory lock so concurrent starters do not race); building over existing rows happens once, on the first start
 * with a new embedder, and the index the model's vectors had before binary indexes (the vectors themselves, as
 * `vector` or `halfvec`) is dropped then. Needs pgvector 0.8 for iterative scans.
 */
export async function ensureVectorIndexes(db: Db, model: string, dimensions: number): Promise<void> {
  await db.transaction(async (tx) => {
    const [row] = await tx.query<{ version: string }>("SELECT extversion AS version FROM pg_extension WHERE extname = 'vector'");
    const [major = 0, minor = 0] = (row?.version ?? '0').split('.').map(Number);
    if (major < MIN_PGVECTOR[0] || (major === MIN_PGVECTOR[0] && minor < MIN_PGVECTOR[1])) {
      throw new Error(`pgvector ${MIN_PGVECTOR.join('.')} or later is needed (iterative HNSW scans); the database has ${row?.version ?? 'none'}: ALTER EXTENSION vector UPDATE`);
    }
    const kind = hnswKind(dimensions);
    if (!kind) return;
    await tx.query('SELECT pg_advisory_xact_lock(7071002)');
    for (const { table, column } of VECTOR_COLUMNS) {
      const name = hnswIndexName(table, column, model, dimensions);
      await tx.exec(
        `CREATE INDEX IF NOT EXISTS ${name} ON ${table} USING hnsw ((${kind.key(column)}) ${kind.ops})${kind.build ? ` WITH (${kind.build})` : ''}
         WHERE embedding_model = ${sqlLiteral(model)} AND vector_dims(${column}) = ${dimensions} AND ${INDEXED_ONLY}`,
      );
      const replaced = [{ binary: false, partial: false }, { partial: false }].map((was) => hnswIndexName(table, column, model, dimensions, was));
      for (const old of new Set(replaced)) if (old !== name) await tx.exec(`DROP INDEX IF EXISTS ${old}`);
    }
  });
}

/** Drops every vector column's HNSW indexes, of any model (PGLITE_VECTOR_INDEXES=none): vector searches then scan exactly. */
export async function dropVectorIndexes(db: Db): Promise<void> {
  const tables = [...new Set(VECTOR_COLUMNS.map((c) => c.table))];
  const indexes = await db.query<{ name: string }>(`SELECT indexname AS name FROM pg_indexes WHERE tablename = ANY($1::text[]) AND indexname LIKE '%\\_hnsw\\_%'`, [tables]);
  for (const { name } of indexes) await db.exec(`DROP INDEX IF EXISTS ${name}`);
}

/** One vector search: the table, its vector column, the columns to return and the filters. */
interface NearestSpec {
  from: string;
  alias: string;
  column: string;
  select: string;
  filters: (params: unknown[]) => string;
}


/**
 * A turn's length for BM25: the words (runs of non-space) of its matched text. Counted here: a regular expression
 * split in PGlite's WASM cost 0.04–0.13 ms a turn of its one thread.
 */
const wordCount = (text: string): number => text.match(/\S+/g)?.length ?? 0;

/**
 * What is left of each turn's match text after the texts of the two turns before it in the call and its own, each
 * ending at a line break or at the end (as projection writes a slice's turns): null for a turn whose match text does not
 * start so. PostgreSQL then parses each such turn's text once, not three times: a tsvector of lines joined holds the
 * same lexemes, each as often, as theirs concatenated (`||`; only positions differ, which BM25 does not read).
 */
function matchRests(turns: readonly IndexedTurn[]): (string | null)[] {
  return turns.map((turn, i) => {
    if (i < 2) return null;
    const start = `${turns[i - 2]!.text}\n${turns[i - 1]!.text}\n${turn.text}`;
    if (!turn.matchText.startsWith(start)) return null;
    const rest = turn.matchText.slice(start.length);
    return rest === '' ? '' : rest.startsWith('\n') ? rest.slice(1) : null;
  });
}

/** PGlite analyzes the search tables once this many turns have been indexed, then each time they double. */
const ANALYZE_FIRST_AFTER_TURNS = 1_000;

/**
 * The search index on PostgreSQL: every ranked list is one SQL statement. On PGlite, composition may put a
 * SnapshotSearchIndex (search-snapshot.ts) in front of it, which ranks in process and leaves the writes to this one.
 */
export class PostgresSearchIndex implements SearchIndex {
  private readonly exactScanMaxRows: number;
  /** Turns indexed by this process: in all, and when the tables were last analyzed (PGlite). */
  private indexed = 0;
  private analyzedAt = 0;

  /** `exactScanMaxRows` (default EXACT_SCAN_MAX_ROWS) lets a test reach the HNSW path with few rows. */
  constructor(
    private readonly db: Db,
    options: { exactScanMaxRows?: number } = {},
  ) {
    this.exactScanMaxRows = options.exactScanMaxRows ?? EXACT_SCAN_MAX_ROWS;
  }

  /**
   * Upserts turns and the user's BM25 statistics, in one statement. A turn enters the HNSW index (`vector_indexed`)
   * when its user has more than exactScanMaxRows turns with it, the size from which searches walk the indexes; the write
   * that takes a user past it puts the user's earlier turns and interactions in (writeUsersRows).
   */
  async indexTurns(turns: readonly IndexedTurn[]): Promise<void> {
    if (turns.length === 0) return;
    const vectors = vectorsParam(turns.map((t) => t.vector));
    const rests = matchRests(turns);
    await writeUsersRows(this.db, turns.map((t) => t.userId), (q) =>
      q.query(
        `WITH input AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::int[], $10::text[], $11::text[],
                                $12::timestamptz[], $13::timestamptz[], $14::int[], $16::int[], $17::text[], $18::bool[]) WITH ORDINALITY
             AS r(user_id, session_id, seq, turn_id, agent_id, text, occurred_at, model, vector_offset, match_text, speaker, refers_from, refers_to, vector_size, doc_len,
                  match_rest, own_needed, n)
         ), own AS MATERIALIZED (
           SELECT n, to_tsvector('english', text) AS tsv FROM input WHERE own_needed
         ), old AS (
           SELECT m.user_id, m.doc_len FROM memory_turns m JOIN input i USING (user_id, session_id, seq)
         ), grown AS (
           SELECT i.user_id, ${indexedForUser('i.user_id', '$19::int', 'count(*) - (SELECT count(*) FROM old o WHERE o.user_id = i.user_id)')} AS indexed
           FROM input i GROUP BY i.user_id
         ), upserted AS (
           INSERT INTO memory_turns (user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, refers_from, refers_to, tsv, doc_len, embedding_model, vector, vector_codes, vector_indexed)
           SELECT user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, refers_from, refers_to,
                  CASE WHEN match_rest IS NULL THEN to_tsvector('english', match_text) ELSE o2.tsv || o1.tsv || o0.tsv || to_tsvector('english', match_rest) END,
                  doc_len, model, ${vectorAt('$15', 'vector_offset', 'vector_size')}, ${codesAt('$20', 'vector_offset', 'vector_size')}, g.indexed
           FROM input i JOIN grown g USING (user_id) LEFT JOIN own o0 ON o0.n = i.n LEFT JOIN own o1 ON o1.n = i.n - 1 LEFT JOIN own o2 ON o2.n = i.n - 2
           ON CONFLICT (user_id, session_id, seq) DO UPDATE SET turn_id = EXCLUDED.turn_id, agent_id = EXCLUDED.agent_id, speaker = EXCLUDED.speaker, text = EXCLUDED.text,
             occurred_at = EXCLUDED.occurred_at, refers_from = EXCLUDED.refers_from, refers_to = EXCLUDED.refers_to, tsv = EXCLUDED.tsv, doc_len = EXCLUDED.doc_len,
             embedding_model = EXCLUDED.embedding_model, vector = EXCLUDED.vector, vector_codes = EXCLUDED.vector_codes, vector_indexed = EXCLUDED.vector_indexed
           RETURNING user_id, doc_len
         ), added AS (
           SELECT u.user_id, (count(*) - (SELECT count(*) FROM old o WHERE o.user_id = u.user_id))::int AS docs,
                  (sum(u.doc_len) - coalesce((SELECT sum(o.doc_len) FROM old o WHERE o.user_id = u.user_id), 0))::int AS len,
                  (SELECT array_agg(DISTINCT i.speaker) FROM input i WHERE i.user_id = u.user_id) AS speakers
           FROM upserted u GROUP BY u.user_id
         ), stats AS (
           INSERT INTO memory_turn_stats (user_id, docs, total_len, speakers) SELECT user_id, docs, len, speakers FROM added
           ON CONFLICT (user_id) DO UPDATE SET docs = memory_turn_stats.docs + EXCLUDED.docs, total_len = memory_turn_stats.total_len + EXCLUDED.total_len,
             speakers = ARRAY(SELECT DISTINCT s FROM unnest(memory_turn_stats.speakers || EXCLUDED.speakers) AS s ORDER BY 1)
           RETURNING user_id, docs
         ), crossed AS (
           -- Past the exact scan's size with this write: searches walk the indexes from now on, so they get the user's
           -- earlier rows too (this write's own rows are written with the flag above).
           SELECT s.user_id FROM stats s JOIN added a USING (user_id) WHERE s.docs > $19 AND s.docs - a.docs <= $19
         ), earlier_turns AS (
           -- EXISTS first, a one-time filter, so that neither table is read unless someone crossed (the planner may
           -- choose a scan of the whole table for the rest, and did, on every write).
           UPDATE memory_turns m SET vector_indexed = true
           WHERE EXISTS (SELECT FROM crossed) AND m.user_id IN (SELECT user_id FROM crossed) AND NOT m.vector_indexed
             AND NOT EXISTS (SELECT 1 FROM input i WHERE (i.user_id, i.session_id, i.seq) = (m.user_id, m.session_id, m.seq))
         ), earlier_windows AS (
           UPDATE interactions w SET vector_indexed = true
           WHERE EXISTS (SELECT FROM crossed) AND w.user_id IN (SELECT user_id FROM crossed) AND NOT w.vector_indexed
         )
         SELECT count(*)::int AS users FROM stats`,
        [
          turns.map((t) => t.userId),
          turns.map((t) => t.sessionId),
          turns.map((t) => t.seq),
          turns.map((t) => t.turnId),
          turns.map((t) => t.agentId ?? null),
          turns.map((t) => t.text),
          turns.map((t) => t.timestamp),
          turns.map((t) => t.embeddingModel),
          vectors.offsets,
          turns.map((t) => t.matchText),
          turns.map((t) => t.speaker),
          turns.map((t) => t.refers?.from ?? null),
          turns.map((t) => t.refers?.to ?? null),
          vectors.sizes,
          vectors.values,
          turns.map((t) => wordCount(t.matchText)),
          rests,
          rests.map((_, i) => rests.slice(i, i + 3).some((rest) => rest !== null)),
          this.exactScanMaxRows,
          storedCodes(this.db, turns.map((t) => t.vector)),
        ],
      ),
    );
    await this.analyzeAsTheyGrow(turns.length);
  }

  /**
   * PostgreSQL's autovacuum keeps planner statistics current; PGlite has none, and a planner without statistics takes
   * every user for a handful of rows (it then scans a user's interactions in full rather than through the full-text
   * index). So on PGlite the search tables are analyzed after the first ANALYZE_FIRST_AFTER_TURNS turns and then
   * whenever the turns indexed since start have doubled: a bounded sample each time, O(log n) times.
   */
  private async analyzeAsTheyGrow(count: number): Promise<void> {
    if (this.db.kind !== 'pglite') return;
    this.indexed += count;
    if (this.indexed < Math.max(ANALYZE_FIRST_AFTER_TURNS, 2 * this.analyzedAt)) return;
    this.analyzedAt = this.indexed;
    await this.db.exec('ANALYZE memory_turns, memory_turn_stats, interactions');
  }

  /** One read by primary key; on PGlite in binary COPY format, as PGlite writes a vector as text in about 1 ms. */
  async turnVectors(key: { userId: string; sessionId: string }, seqs: readonly number[], model: string): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    if (seqs.length === 0) return vectors;
    if (!this.db.copyBinary) {
      const rows = await this.db.query<{ seq: number; vector: number[] }>(
        'SELECT seq, vector::float4[] AS vector FROM memory_turns WHERE user_id = $1 AND session_id = $2 AND seq = ANY($3::int[]) AND embedding_model = $4',
        [key.userId, key.sessionId, [...seqs], model],
      );
      for (const row of rows) vectors.set(row.seq, Float32Array.from(row.vector));
      return vectors;
    }
    const rows = new CopyRows(
      await this.db.copyBinary(
        `SELECT seq, vector FROM memory_turns WHERE user_id = ${sqlLiteral(key.userId)} AND session_id = ${sqlLiteral(key.sessionId)}
           AND seq IN (${seqs.map((seq) => Math.trunc(seq)).join(', ')}) AND embedding_model = ${sqlLiteral(model)}`,
      ),
    );
    while (rows.next()) {
      const vector = rows.vector(1);
      if (vector) vectors.set(rows.int4(0)!, vector);
    }
    return vectors;
  }

  /** Kept with the BM25 statistics by indexTurns: one primary-key read. */
  async speakers(userId: string): Promise<string[]> {
    const [row] = await this.db.query<{ speakers: string[] }>('SELECT speakers FROM memory_turn_stats WHERE user_id = $1', [userId]);
    return row?.speakers ?? [];
  }

  show(userId: string, hits: { turns: readonly TurnHit[]; interactions: readonly WindowHit[] }): Promise<{ turns: TurnHit[]; interactions: WindowHit[] }> {
    return showHits(this.db, userId, hits);
  }

  async turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    const filters = (params: unknown[]) => filterSql(query, params, 't', 't.occurred_at', 't.agent_id = $?');
    let rows: TurnRow[];
    if (retriever === 'vector') {
      if (!query.vector) return [];
      rows = await this.nearest<TurnRow>(query, {
        from: 'memory_turns t',
        alias: 't',
        column: 't.vector',
        select: TURN_COLUMNS,
        filters,
      });
    } else {
      const params: unknown[] = [query.userId, query.text, query.limit];
      rows = await this.db.query<TurnRow>(bm25Sql(filters(params)), params);
    }
    return rows.map(turnHit);
  }

  async interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    const time = `(i.doc->>'startedAt')::timestamptz`;
    const agent = `i.doc->'agentIds' ? $?`;
    let rows: WindowRow[];
    if (retriever === 'fulltext') {
      const params: unknown[] = [query.userId, query.text, query.limit];
      rows = await this.db.query<WindowRow>(windowBm25Sql(filterSql(query, params, 'i', time, agent)), params);
    } else {
      if (!query.vector) return [];
      rows = await this.nearest<WindowRow>(query, {
        from: 'interactions i',
        alias: 'i',
        column: retriever === 'vector' ? 'i.content_vector' : 'i.summary_vector',
        select: WINDOW_COLUMNS,
        filters: (params) => filterSql(query, params, 'i', time, agent),
      });
    }
    return rows.map(windowHit);
  }

  /**
   * The user's `limit` nearest rows by cosine distance, best first, in one round trip (memory_nearest, migration 21).
   * A small user (at most exactScanMaxRows turns) or a one-session search is scanned exactly. A larger user is searched
   * with the model's HNSW index (see ensureVectorIndexes) as an iterative scan (`relaxed_order`): the index walk goes
   * on past other users' vectors and filtered-out rows until `limit` rows of this user are found, and the candidates
   * are re-sorted by exact distance. If the walk gives up (hnsw.max_scan_tuples) with fewer rows, e.g. under a narrow
   * agent or time filter, the exact scan answers instead.
   */
  private async nearest<T>(query: SearchQuery, spec: NearestSpec): Promise<T[]> {
    const { model, values } = query.vector!;
    // $2, the query vector, is memory_nearest's own argument (sent in binary); its slot here stays empty.
    const params: unknown[] = [query.userId, '', model, query.limit];
    const where = `${spec.alias}.user_id = $1 AND ${spec.alias}.embedding_model = $3${spec.filters(params)}`;
    // The statements run inside memory_nearest, where their parameters are the elements of one text array ($1) and
    // the query vector ($2).
    const inner = (sql: string) => sql.replace(/\$(\d+)/g, (placeholder, n: string) => (n === '2' ? placeholder : `($1)[${n}]`));
    const exact = inner(`SELECT ${spec.select} FROM ${spec.from} WHERE ${where} ORDER BY ${spec.column} <=> $2::vector LIMIT $4::int`);
    const kind = hnswKind(values.length);
    // The walk yields the kind's candidates, nearest by the index's distance, and the exact distance ranks them. The
    // predicate and the ORDER BY repeat the index's expression and predicate (the model as a literal), so the planner
    // proves the partial index applies whatever the plan's parameters.
    const hnsw =
      kind && !query.filters.sessionId
        ? `SELECT * FROM (${inner(
            `SELECT ${spec.select}, ${spec.column} <=> $2::vector AS distance FROM ${spec.from}
             WHERE ${where} AND vector_dims(${spec.column}) = ${values.length} AND ${spec.alias}.${INDEXED_ONLY} AND ${spec.alias}.embedding_model = `,
          )}${sqlLiteral(model)} ORDER BY ${kind.key(spec.column)} ${kind.operator} ${inner(`${kind.key('$2::vector')} LIMIT ${kind.candidates(query.limit)}) c ORDER BY distance LIMIT $4::int`)}`
        : null;
    const rows = await this.db.query<{ row: T }>(`SELECT row FROM memory_nearest($1, $2, $3, $4, $5, $6, $7, ${asVector('$8')}) WITH ORDINALITY AS r(row, n) ORDER BY n`, [
      // The user's turns, also for interactions: windows of turns, so never more; counting them would read a page a row.
      inner('SELECT docs FROM memory_turn_stats WHERE user_id = $1'),
      this.exactScanMaxRows,
      hnsw,
      exact,
      efSearch(kind?.candidates(query.limit) ?? query.limit),
      query.limit,
      params.map(String),
      vectorParam(values),
    ]);
    return rows.map((r) => r.row);
  }
}

/** One query term's BM25 weight in a document: its `tf` and `doc_len` on `row`, its `df` on `df`, N and avgdl on `s`. */
const bm25Term = (row: string) =>
  `ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * (${row}.tf * ${BM25.k1 + 1}::float8) / (${row}.tf + ${BM25.k1}::float8 * (1 - ${BM25.b}::float8 + ${BM25.b}::float8 * ${row}.doc_len / s.avgdl))`;

/**
 * Okapi BM25 over one user's documents, turns or interactions (`table`, keyed within the user by `key`), with the
 * user's corpus statistics (`stats`: N and the total length): idf = ln(1 + (N - df + 0.5) / (df + 0.5)), df counted over
 * the user's documents. The documents holding a query lexeme come from the (user_id, tsv) full-text index (migration
 * 24), so the cost grows with the query terms' matches in this user's documents, not with the user's size nor with
 * other users'. Each one's frequencies of the query lexemes come from its tsvector (the query lexemes weighted A, then
 * only A kept: the stored tsvectors carry the default weight D); its length is `doc_len`. `$1` user, `$2` query text.
 * test/integration/postgres-search.test.ts checks the scores against an independent computation.
 */
function bm25Scored(table: string, key: readonly string[], stats: string): string {
  const columns = (alias: string) => key.map((k) => `${alias}.${k}`).join(', ');
  return `WITH q AS MATERIALIZED (
      SELECT coalesce(array_agg(DISTINCT lexeme), '{}') AS lexemes FROM unnest(to_tsvector('english', $2)) AS u(lexeme, positions, weights)
    ), stats AS MATERIALIZED (
      SELECT greatest(docs, 1)::float8 AS n, greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl FROM ${stats} WHERE user_id = $1
    ), matched AS MATERIALIZED (
      SELECT ${columns('d')}, d.doc_len, l.lexeme, coalesce(array_length(l.positions, 1), 1) AS tf
      FROM ${table} d CROSS JOIN LATERAL unnest(ts_filter(setweight(d.tsv, 'A', (SELECT lexemes FROM q)), '{a}')) AS l(lexeme, positions, weights)
      WHERE d.user_id = $1 AND d.tsv @@ (SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme), ' | '), '')) FROM q CROSS JOIN unnest(q.lexemes) AS lexeme)
    ), df AS (
      SELECT lexeme, count(*)::float8 AS df FROM matched GROUP BY lexeme
    ), scored AS (
      SELECT ${columns('m')}, sum(${bm25Term('m')}) AS score
      FROM matched m JOIN df USING (lexeme) CROSS JOIN stats s GROUP BY ${columns('m')}
    )`;
}

/**
 * BM25 over the user's turns (bm25Scored). Without filters only the top `limit` scores (with their ties) are joined to
 * their turns, for the tie-break and the columns. `$3` limit; `where` holds the filters on `t` (parameters 4 and up).
 * Rows: the turn's columns and its `score`.
 */
export function bm25Sql(where: string): string {
  const scored = bm25Scored('memory_turns', ['session_id', 'seq'], 'memory_turn_stats');
  // One primary-key probe per scored turn (a lateral subquery: the planner, blind to the user's size, would rather
  // hash the user's whole table).
  const turn = (filters: string) =>
    `CROSS JOIN LATERAL (SELECT ${TURN_COLUMNS} FROM memory_turns t WHERE t.user_id = $1 AND t.session_id = top.session_id AND t.seq = top.seq${filters} OFFSET 0) t`;
  return where
    ? `${scored} SELECT t.*, top.score FROM scored top ${turn(where)} ORDER BY top.score DESC, t.occurred_at DESC LIMIT $3`
    : `${scored}, top AS (SELECT * FROM scored ORDER BY score DESC FETCH FIRST $3 ROWS WITH TIES)
       SELECT t.*, top.score FROM top ${turn('')} ORDER BY top.score DESC, t.occurred_at DESC LIMIT $3`;
}

/** BM25 over the user's interactions (bm25Scored), as bm25Sql over turns; `where` holds the filters on `i`. */
export function windowBm25Sql(where: string): string {
  const scored = bm25Scored('interactions', ['id'], 'interaction_stats');
  const window = `JOIN interactions i ON i.user_id = $1 AND i.id = top.id`;
  return where
    ? `${scored} SELECT ${WINDOW_COLUMNS}, top.score FROM scored top ${window} WHERE true${where}
       ORDER BY top.score DESC, (i.doc->>'startedAt')::timestamptz DESC LIMIT $3`
    : `${scored}, top AS (SELECT * FROM scored ORDER BY score DESC FETCH FIRST $3 ROWS WITH TIES)
       SELECT ${WINDOW_COLUMNS}, top.score FROM top ${window} ORDER BY top.score DESC, (i.doc->>'startedAt')::timestamptz DESC LIMIT $3`;
}
