import type { Retriever } from '../../contracts/facts.js';
import type { IndexedTurn, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../application/search-ports.js';
import type { Db } from './db.js';

/** Okapi BM25 parameters (Robertson & Zaragoza); the usual defaults. */
const K1 = 1.2;
const B = 0.75;

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

export class PostgresSearchIndex implements SearchIndex {
  constructor(private readonly db: Db) {}

  /** Upserts turns and keeps the user's BM25 statistics in step, in one transaction. */
  async indexTurns(turns: readonly IndexedTurn[]): Promise<void> {
    if (turns.length === 0) return;
    await this.db.transaction(async (tx) => {
      const rows = await tx.query<{ user_id: string; docs: number; len: number }>(
        `WITH input AS (
           SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::text[], $10::text[], $11::text[])
             AS r(user_id, session_id, seq, turn_id, agent_id, text, occurred_at, model, vector, match_text, speaker)
         ), old AS (
           SELECT m.user_id, m.doc_len FROM memory_turns m JOIN input i USING (user_id, session_id, seq)
         ), upserted AS (
           INSERT INTO memory_turns (user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, tsv, doc_len, embedding_model, vector)
           SELECT user_id, session_id, seq, turn_id, agent_id, speaker, text, occurred_at, to_tsvector('english', match_text),
                  coalesce(array_length(regexp_split_to_array(trim(match_text), '\\s+'), 1), 0), model, vector::vector
           FROM input
           ON CONFLICT (user_id, session_id, seq) DO UPDATE SET turn_id = EXCLUDED.turn_id, agent_id = EXCLUDED.agent_id, speaker = EXCLUDED.speaker, text = EXCLUDED.text,
             occurred_at = EXCLUDED.occurred_at, tsv = EXCLUDED.tsv, doc_len = EXCLUDED.doc_len, embedding_model = EXCLUDED.embedding_model, vector = EXCLUDED.vector
           RETURNING user_id, doc_len
         )
         SELECT u.user_id, (count(*) - (SELECT count(*) FROM old o WHERE o.user_id = u.user_id))::int AS docs,
                (sum(u.doc_len) - coalesce((SELECT sum(o.doc_len) FROM old o WHERE o.user_id = u.user_id), 0))::int AS len
         FROM upserted u GROUP BY u.user_id`,
        [
          turns.map((t) => t.userId),
          turns.map((t) => t.sessionId),
          turns.map((t) => t.seq),
          turns.map((t) => t.turnId),
          turns.map((t) => t.agentId ?? null),
          turns.map((t) => t.text),
          turns.map((t) => t.timestamp),
          turns.map((t) => t.embeddingModel),
          turns.map((t) => JSON.stringify(t.vector)),
          turns.map((t) => t.matchText),
          turns.map((t) => t.speaker),
        ],
      );
      for (const r of rows) {
        await tx.query(
          `INSERT INTO memory_turn_stats (user_id, docs, total_len) VALUES ($1, $2, $3)
           ON CONFLICT (user_id) DO UPDATE SET docs = memory_turn_stats.docs + EXCLUDED.docs, total_len = memory_turn_stats.total_len + EXCLUDED.total_len`,
          [r.user_id, r.docs, r.len],
        );
      }
    });
  }

  async turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    const params: unknown[] = [query.userId];
    const select = 'SELECT t.session_id, t.seq, t.turn_id, t.agent_id, t.speaker, t.text, t.occurred_at';
    let sql: string;
    if (retriever === 'vector') {
      if (!query.vector) return [];
      params.push(JSON.stringify(query.vector.values), query.vector.model, query.limit);
      sql = `${select} FROM memory_turns t WHERE t.user_id = $1 AND t.embedding_model = $3
             ${filterSql(query, params, 't', 't.occurred_at', 't.agent_id = $?')}
             ORDER BY t.vector <=> $2::vector LIMIT $4`;
    } else {
      params.push(query.text, query.limit);
      // BM25 computed from the tsvector's term frequencies and the user's corpus statistics;
      // ts_rank is not BM25 (no idf, no length saturation), and BM25 ranks turns measurably better.
      // MATERIALIZED: each CTE is computed once; inlined, the df subquery would run once per scanned term.
      sql = `WITH q AS MATERIALIZED (
               SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2)) AS u(lexeme, positions, weights)
             ), stats AS MATERIALIZED (
               SELECT greatest(docs, 1)::float8 AS n, greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl FROM memory_turn_stats WHERE user_id = $1
             ), df AS MATERIALIZED (
               SELECT q.lexeme, (SELECT count(*) FROM memory_turns d WHERE d.user_id = $1 AND d.tsv @@ to_tsquery('simple', quote_literal(q.lexeme)))::float8 AS df FROM q
             ), candidates AS (
               SELECT t.* FROM memory_turns t
               WHERE t.user_id = $1 AND t.tsv @@ (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) FROM q)
               ${filterSql(query, params, 't', 't.occurred_at', 't.agent_id = $?')}
             ), scored AS (
               SELECT c.session_id, c.seq,
                      sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
                          * (array_length(u.positions, 1) * ${K1 + 1})
                          / (array_length(u.positions, 1) + ${K1} * (1 - ${B} + ${B} * c.doc_len / s.avgdl))) AS score
               FROM candidates c CROSS JOIN stats s
               CROSS JOIN LATERAL unnest(c.tsv) AS u(lexeme, positions, weights)
               JOIN df ON df.lexeme = u.lexeme
               GROUP BY c.session_id, c.seq
             )
             ${select} FROM scored JOIN memory_turns t ON t.user_id = $1 AND t.session_id = scored.session_id AND t.seq = scored.seq
             ORDER BY scored.score DESC, t.occurred_at DESC LIMIT $3`;
    }
    const rows = await this.db.query<{ session_id: string; seq: number; turn_id: string; agent_id: string | null; speaker: string; text: string; occurred_at: Date | string }>(sql, params);
    return rows.map((r) => ({
      kind: 'turn',
      sessionId: r.session_id,
      seq: r.seq,
      turnId: r.turn_id,
      ...(r.agent_id && { agentId: r.agent_id }),
      speaker: r.speaker,
      text: r.text,
      timestamp: new Date(r.occurred_at).toISOString(),
    }));
  }

  async interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    const params: unknown[] = [query.userId];
    const select = 'SELECT i.id, i.session_id, i.doc';
    let sql: string;
    const time = `(i.doc->>'startedAt')::timestamptz`;
    const agent = `i.doc->'agentIds' ? $?`;
    if (retriever === 'fulltext') {
      params.push(query.text, query.limit);
      sql = `${select}, ts_rank_cd(i.tsv, q.q, 1) AS rank FROM interactions i,
               (SELECT to_tsquery('simple', coalesce(string_agg(quote_literal(lexeme), ' | '), '')) AS q FROM unnest(to_tsvector('english', $2))) q
             WHERE i.user_id = $1 AND i.tsv @@ q.q ${filterSql(query, params, 'i', time, agent)}
             ORDER BY rank DESC LIMIT $3`;
    } else {
      if (!query.vector) return [];
      const column = retriever === 'vector' ? 'content_vector' : 'summary_vector';
      params.push(JSON.stringify(query.vector.values), query.vector.model, query.limit);
      sql = `${select} FROM interactions i WHERE i.user_id = $1 AND i.embedding_model = $3
             ${filterSql(query, params, 'i', time, agent)}
             ORDER BY i.${column} <=> $2::vector LIMIT $4`;
    }
    const rows = await this.db.query<{ id: string; session_id: string; doc: { seqRange: [number, number]; turnIds: string[]; agentIds: string[]; summary: string; startedAt: string } }>(sql, params);
    return rows.map((r) => ({
      kind: 'interaction',
      id: r.id,
      sessionId: r.session_id,
      seqRange: r.doc.seqRange,
      turnIds: r.doc.turnIds,
      agentIds: r.doc.agentIds,
      summary: r.doc.summary,
      timestamp: r.doc.startedAt,
    }));
  }
}
