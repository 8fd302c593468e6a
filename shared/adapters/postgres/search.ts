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
 * of turns, never more): exact, and fast enough at that size (vectors stored in the row). Above it the scan of the
 * vectors' binary codes answers (memory_nearest, migration 29; README, Fact search).
 */
export const EXACT_SCAN_MAX_ROWS = 2_000;

/**
 * Runs `write`, one statement, with the writes of these users' search rows serialised: a statement that upserts a turn
 * another writer inserted after it began would count it again in the user's BM25 statistics. PGlite runs one statement
 * at a time already, so it needs no transaction (on its own thread, a transaction would hold it while each statement
 * comes from the service's thread); a server takes a transaction lock per user, in order, first.
 */
export async function writeUsersRows(db: Db, users: readonly string[], write: (q: Queryable) => Promise<unknown>): Promise<void> {
  if (db.kind === 'pglite') return void (await write(db));
  await db.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('search-rows:' || u, 0)) FROM unnest($1::text[]) u ORDER BY u`, [[...new Set(users)]]);
    await write(tx);
  });
}

/**
 * Vectors of at least this many dimensions are searched, for a user past EXACT_SCAN_MAX_ROWS, by their binary codes
 * (a bit a dimension, its sign; `memory_turn_bits`, `interaction_bits`): the BINARY_RERANK × limit rows nearest by
 * Hamming distance (at least BINARY_MIN_CANDIDATES), every one of the user's rows that pass the filters considered,
 * ranked by their exact cosine distance. Below it too few bits tell vectors apart, and the exact scan answers.
 */
export const BINARY_MIN_DIMENSIONS = 256;
const BINARY_RERANK = 3;
const BINARY_MIN_CANDIDATES = 100;
/** The rows a code scan hands to the exact re-rank for a top-`limit` search. */
const binaryCandidates = (limit: number) => Math.max(BINARY_MIN_CANDIDATES, BINARY_RERANK * limit);
/** pgvector's `binary_quantize` and Hamming distance on bit strings (`<~>`). */
const MIN_PGVECTOR = [0, 7] as const;

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

/** A string as an SQL literal, for the statements that take no parameters (standard_conforming_strings: only a quote is doubled). */
export const sqlLiteral = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * The code scan needs pgvector 0.7 (binary_quantize, Hamming distance): the version installed, or the one the
 * migrations would install. Refused at start, before the migrations, with what to do.
 */
export async function assertPgvector(db: Db): Promise<void> {
  const [row] = await db.query<{ version: string }>("SELECT coalesce(installed_version, default_version) AS version FROM pg_available_extensions WHERE name = 'vector'");
  const [major = 0, minor = 0] = (row?.version ?? '0').split('.').map(Number);
  if (major < MIN_PGVECTOR[0] || (major === MIN_PGVECTOR[0] && minor < MIN_PGVECTOR[1])) {
    throw new Error(`pgvector ${MIN_PGVECTOR.join('.')} or later is needed (binary quantisation); the database has ${row?.version ?? 'none'}: ALTER EXTENSION vector UPDATE`);
  }
}

/** One vector search: the table, its vector column, the columns to return and the filters. */
interface NearestSpec {
  from: string;
  alias: string;
  column: string;
  select: string;
  filters: (params: unknown[]) => string;
  /** The rows' binary codes (alias `b`): their table, the column, the key they return, its join to the row, the same filters on their copies. */
  codes: { from: string; column: string; key: string; join: string; filters: (params: unknown[]) => string };
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

  /** `exactScanMaxRows` (default EXACT_SCAN_MAX_ROWS) lets a test reach the code scan with few rows. */
  constructor(
    private readonly db: Db,
    options: { exactScanMaxRows?: number } = {},
  ) {
    this.exactScanMaxRows = options.exactScanMaxRows ?? EXACT_SCAN_MAX_ROWS;
  }

  /** Upserts turns, their binary codes and the user's BM25 statistics, in one statement. */
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
         ), upserted AS (
           INSERT INTO memory_turns (user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, refers_from, refers_to, tsv, doc_len, embedding_model, vector, vector_codes)
           SELECT user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, refers_from, refers_to,
                  CASE WHEN match_rest IS NULL THEN to_tsvector('english', match_text) ELSE o2.tsv || o1.tsv || o0.tsv || to_tsvector('english', match_rest) END,
                  doc_len, model, ${vectorAt('$15', 'vector_offset', 'vector_size')}, ${codesAt('$19', 'vector_offset', 'vector_size')}
           FROM input i LEFT JOIN own o0 ON o0.n = i.n LEFT JOIN own o1 ON o1.n = i.n - 1 LEFT JOIN own o2 ON o2.n = i.n - 2
           ON CONFLICT (user_id, session_id, seq) DO UPDATE SET turn_id = EXCLUDED.turn_id, agent_id = EXCLUDED.agent_id, speaker = EXCLUDED.speaker, text = EXCLUDED.text,
             occurred_at = EXCLUDED.occurred_at, refers_from = EXCLUDED.refers_from, refers_to = EXCLUDED.refers_to, tsv = EXCLUDED.tsv, doc_len = EXCLUDED.doc_len,
             embedding_model = EXCLUDED.embedding_model, vector = EXCLUDED.vector, vector_codes = EXCLUDED.vector_codes
           RETURNING user_id, session_id, seq, agent_id, occurred_at, doc_len, binary_quantize(vector)::varbit AS bits
         ), bits AS (
           INSERT INTO memory_turn_bits (user_id, session_id, seq, agent_id, occurred_at, bits)
           SELECT user_id, session_id, seq, agent_id, occurred_at, bits FROM upserted
           ON CONFLICT (user_id, session_id, seq) DO UPDATE SET agent_id = EXCLUDED.agent_id, occurred_at = EXCLUDED.occurred_at, bits = EXCLUDED.bits
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
    await this.db.exec('ANALYZE memory_turns, memory_turn_stats, memory_turn_bits, interactions, interaction_bits');
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
        codes: {
          from: 'memory_turn_bits b',
          column: 'b.bits',
          key: 'b.session_id, b.seq',
          join: 't.user_id = $1 AND t.session_id = c.session_id AND t.seq = c.seq',
          filters: (params) => filterSql(query, params, 'b', 'b.occurred_at', 'b.agent_id = $?'),
        },
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
        codes: {
          from: 'interaction_bits b',
          column: retriever === 'vector' ? 'b.content_bits' : 'b.summary_bits',
          key: 'b.id',
          join: 'i.user_id = $1 AND i.id = c.id',
          filters: (params) => filterSql(query, params, 'b', 'b.started_at', `b.agent_ids ? $?`),
        },
      });
    }
    return rows.map(windowHit);
  }

  /**
   * The user's `limit` nearest rows by cosine distance, best first, in one round trip (memory_nearest, migration 29).
   * A small user (at most exactScanMaxRows turns) is scanned exactly. A larger user's binary codes are scanned instead,
   * every one of the user's that passes the filters, by Hamming distance to the query's (a few bytes a row, where the
   * exact scan reads each wide row and its vector), and the binaryCandidates nearest are ranked by exact cosine distance.
   */
  private async nearest<T>(query: SearchQuery, spec: NearestSpec): Promise<T[]> {
    const { model, values } = query.vector!;
    // $2, the query vector, is memory_nearest's own argument (sent in binary); its slot here stays empty.
    const params: unknown[] = [query.userId, '', model, query.limit];
    const filtersFrom = params.length;
    const where = `${spec.alias}.user_id = $1 AND ${spec.alias}.embedding_model = $3${spec.filters(params)}`;
    // The same filters on the codes' copies of their columns, with the same parameters.
    const codesWhere = `b.user_id = $1 AND length(${spec.codes.column}) = ${values.length}${spec.codes.filters(params.slice(0, filtersFrom))}`;
    // The statements run inside memory_nearest, where their parameters are the elements of one text array ($1) and
    // the query vector ($2).
    const inner = (sql: string) => sql.replace(/\$(\d+)/g, (placeholder, n: string) => (n === '2' ? placeholder : `($1)[${n}]`));
    const exact = inner(`SELECT ${spec.select} FROM ${spec.from} WHERE ${where} ORDER BY ${spec.column} <=> $2::vector LIMIT $4::int`);
    const bits = `bit(${values.length})`;
    const candidates =
      values.length >= BINARY_MIN_DIMENSIONS
        ? inner(
            `SELECT * FROM (
               SELECT ${spec.select}, ${spec.column} <=> $2::vector AS distance
               FROM (SELECT ${spec.codes.key} FROM ${spec.codes.from} WHERE ${codesWhere}
                     ORDER BY ${spec.codes.column}::${bits} <~> binary_quantize($2::vector)::${bits} LIMIT ${binaryCandidates(query.limit)}) c
               JOIN ${spec.from} ON ${spec.codes.join} WHERE ${spec.alias}.embedding_model = $3
             ) r ORDER BY distance LIMIT $4::int`,
          )
        : null;
    const rows = await this.db.query<{ row: T }>(`SELECT row FROM memory_nearest($1, $2, $3, $4, $5, ${asVector('$6')}) WITH ORDINALITY AS r(row, n) ORDER BY n`, [
      // The user's turns, also for interactions: windows of turns, so never more; counting them would read a page a row.
      inner('SELECT docs FROM memory_turn_stats WHERE user_id = $1'),
      this.exactScanMaxRows,
      candidates,
      exact,
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
