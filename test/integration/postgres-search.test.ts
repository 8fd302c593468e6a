import { describe, expect, it } from 'vitest';
import { openPglite, type Db, type Queryable } from '../../shared/adapters/postgres/db.js';
import { migrate, MIGRATIONS } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import { bm25Sql, dropVectorIndexes, ensureVectorIndexes, EXACT_SCAN_MAX_ROWS, hnswIndexName, hnswKind, PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import type { IndexedTurn, SearchQuery } from '../../shared/application/search-ports.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { rng } from '../support/random.js';

const MODEL = 'test-model';
const DIMS = 8;

const unit = (v: number[]) => {
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};

async function openDb(): Promise<Db> {
  const db = await openPglite(undefined);
  await migrate(db);
  return db;
}

/** A store as it was before migration `version`. */
async function migratedBefore(version: number): Promise<Db> {
  const db = await openPglite(undefined);
  await db.exec('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
  for (const m of MIGRATIONS.filter((m) => m.version < version)) {
    await db.exec(m.sql);
    await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
  }
  return db;
}

/** Records every statement, so a test can EXPLAIN the one the adapter ran. */
function recording(db: Db): { db: Db; log: { sql: string; params: unknown[] | undefined }[] } {
  const log: { sql: string; params: unknown[] | undefined }[] = [];
  const wrap = (q: Queryable): Queryable => ({
    query: (sql, params) => {
      log.push({ sql, params });
      return q.query(sql, params);
    },
    exec: (sql) => q.exec(sql),
  });
  return { db: { ...db, ...wrap(db), transaction: (fn) => db.transaction((tx) => fn(wrap(tx))) }, log };
}

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();

function turn(userId: string, sessionId: string, seq: number, text: string, vector: number[], extra: Partial<IndexedTurn> = {}): IndexedTurn {
  return { userId, sessionId, seq, turnId: `${userId}/${sessionId}/${seq}`, speaker: 'user', text, matchText: text, timestamp: at(seq), embeddingModel: MODEL, vector, ...extra };
}

/** Window `n` of a user's session, its vectors given. */
function interaction(userId: string, sessionId: string, n: number, contentVector: number[], summaryVector = contentVector): InteractionDocument {
  return {
    schemaVersion: 1,
    id: `${userId}/w${n}`,
    userId,
    sessionId,
    agentIds: [],
    turnIds: [`t${n}`],
    seqRange: [n + 1, n + 1],
    startedAt: at(n),
    endedAt: at(n),
    content: `window ${n}`,
    summary: `summary ${n}`,
    topics: [],
    entities: [],
    embeddingModel: MODEL,
    contentVector,
    summaryVector,
    createdAt: at(n),
  };
}

const query = (userId: string, text: string, limit: number, vector?: number[], filters: SearchQuery['filters'] = {}): SearchQuery => ({
  userId,
  text,
  ...(vector && { vector: { model: MODEL, values: vector } }),
  limit,
  filters,
});

/** The turn BM25 as it was computed before the postings table of migration 7: over the tsvectors, in SQL. */
const previousBm25 = (filters: string) => `WITH q AS MATERIALIZED (
    SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2)) AS u(lexeme, positions, weights)
  ), stats AS MATERIALIZED (
    SELECT greatest(docs, 1)::float8 AS n, greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl FROM memory_turn_stats WHERE user_id = $1
  ), df AS MATERIALIZED (
    SELECT q.lexeme, (SELECT count(*) FROM memory_turns d WHERE d.user_id = $1 AND d.tsv @@ to_tsquery('simple', quote_literal(q.lexeme)))::float8 AS df FROM q
  ), candidates AS (
    SELECT t.* FROM memory_turns t
    WHERE t.user_id = $1 AND t.tsv @@ (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) FROM q) ${filters}
  ), scored AS (
    SELECT c.session_id, c.seq,
           sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
               * (array_length(u.positions, 1) * 2.2)
               / (array_length(u.positions, 1) + 1.2 * (1 - 0.75 + 0.75 * c.doc_len / s.avgdl))) AS score
    FROM candidates c CROSS JOIN stats s
    CROSS JOIN LATERAL unnest(c.tsv) AS u(lexeme, positions, weights)
    JOIN df ON df.lexeme = u.lexeme
    GROUP BY c.session_id, c.seq
  )
  SELECT t.session_id, t.seq, scored.score FROM scored JOIN memory_turns t ON t.user_id = $1 AND t.session_id = scored.session_id AND t.seq = scored.seq
  ORDER BY scored.score DESC, t.occurred_at DESC LIMIT $3`;

/** BM25 computed here from the stored tsvectors' term frequencies: N, avgdl and df counted from the rows themselves. */
async function independentBm25(db: Db, userId: string, text: string): Promise<{ key: string; score: number }[]> {
  const lexemes = (await db.query<{ lexeme: string }>(`SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $1))`, [text])).map((r) => r.lexeme);
  const docs = await db.query<{ key: string; doc_len: number; at: string; terms: [string, number][] }>(
    `SELECT session_id || '#' || seq AS key, doc_len, occurred_at::text AS at,
            (SELECT json_agg(json_build_array(lexeme, array_length(positions, 1))) FROM unnest(tsv)) AS terms
     FROM memory_turns WHERE user_id = $1`,
    [userId],
  );
  const n = docs.length;
  const avgdl = Math.max(docs.reduce((s, d) => s + d.doc_len, 0) / n, 1);
  const df = new Map(lexemes.map((l) => [l, docs.filter((d) => d.terms.some(([x]) => x === l)).length]));
  const scored = docs.flatMap((d) => {
    const tf = new Map(d.terms);
    const matching = lexemes.filter((l) => tf.has(l));
    if (matching.length === 0) return [];
    const score = matching.reduce((sum, l) => {
      const f = tf.get(l)!;
      const idf = Math.log(1 + (n - df.get(l)! + 0.5) / (df.get(l)! + 0.5));
      return sum + (idf * (f * 2.2)) / (f + 1.2 * (1 - 0.75 + (0.75 * d.doc_len) / avgdl));
    }, 0);
    return [{ key: d.key, score, at: d.at }];
  });
  return scored.sort((a, b) => b.score - a.score || (a.at < b.at ? 1 : -1)).map(({ key, score }) => ({ key, score }));
}

describe('turn BM25 from the (user, tsvector) index', () => {
  // Words that repeat across turns (and within one: tf > 1), inflected forms that share a stem, and stop words.
  const WORDS = ['paint', 'painting', 'painted', 'lake', 'sunset', 'dog', 'dogs', 'hike', 'hiking', 'camp', 'guitar', 'music', 'school', 'teacher', 'career', 'adopt', 'family', 'friend', 'support', 'group', 'pottery', 'class', 'beach', 'book', 'read', 'the', 'a', 'and', 'to', 'my', 'was', 'with', 'Melanie', 'Caroline', 'run', 'running', 'charity', 'race', 'mental', 'health'];
  const QUERIES = ['painting at the lake', 'What did Caroline do with the support group?', 'dogs hiking camp', 'guitar music school teacher career', 'charity race running', 'the a and', 'zebra unicorn', 'Melanie pottery class beach book'];

  async function corpus() {
    const db = await openDb();
    const search = new PostgresSearchIndex(db);
    const random = rng(42);
    const sentence = () => Array.from({ length: 4 + Math.floor(random() * 30) }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
    const turns: IndexedTurn[] = [];
    for (let i = 0; i < 160; i++) {
      const userId = i % 4 === 3 ? 'other' : 'u';
      const text = `${i % 2 ? 'assistant' : 'user'}: ${sentence()}`;
      turns.push(turn(userId, `s${i % 5}`, i, text, unit([1, i, 0, 0, 0, 0, 0, 1]), { matchText: `${sentence()}\n${text}`, agentId: i % 3 ? 'agent-a' : 'agent-b' }));
    }
    for (let i = 0; i < turns.length; i += 40) await search.indexTurns(turns.slice(i, i + 40));
    // Indexed again with other words: the old lexemes go, the statistics follow.
    await search.indexTurns(turns.filter((_, i) => i % 7 === 0).map((t) => ({ ...t, matchText: `${sentence()} ${sentence()}` })));
    return { db, search };
  }

  it('ranks and scores as BM25 computed independently, and as the previous SQL over the tsvectors', async () => {
    const { db, search } = await corpus();
    for (const text of QUERIES) {
      const expected = await independentBm25(db, 'u', text);
      const got = await db.query<{ session_id: string; seq: number; score: number }>(bm25Sql(''), ['u', text, 1000]);
      expect(got.map((r) => `${r.session_id}#${r.seq}`), text).toEqual(expected.map((e) => e.key));
      got.forEach((r, i) => expect(r.score).toBeCloseTo(expected[i]!.score, 9));
      const previous = await db.query<{ session_id: string; seq: number; score: number }>(previousBm25(''), ['u', text, 1000]);
      expect(got.map((r) => `${r.session_id}#${r.seq}`)).toEqual(previous.map((r) => `${r.session_id}#${r.seq}`));
      got.forEach((r, i) => expect(r.score).toBeCloseTo(previous[i]!.score, 12));
      // The adapter returns that ranking, cut at the limit.
      const hits = await search.turns(query('u', text, 25), 'fulltext');
      expect(hits.map((h) => `${h.sessionId}#${h.seq}`)).toEqual(expected.slice(0, 25).map((e) => e.key));
    }
    expect((await search.turns(query('u', 'painting', 10), 'fulltext')).length).toBe(10);
    expect(await search.turns(query('nobody', 'painting', 10), 'fulltext')).toEqual([]);
    await db.close();
  }, 60_000);

  it('applies session, agent and time filters to candidates, with the statistics of all the user turns', async () => {
    const { db, search } = await corpus();
    const cases: { filters: SearchQuery['filters']; sql: string; params: unknown[] }[] = [
      { filters: { sessionId: 's2' }, sql: 'AND t.session_id = $4', params: ['s2'] },
      { filters: { agentId: 'agent-b' }, sql: 'AND t.agent_id = $4', params: ['agent-b'] },
      { filters: { from: at(40), to: at(120) }, sql: 'AND t.occurred_at >= $4::timestamptz AND t.occurred_at <= $5::timestamptz', params: [at(40), at(120)] },
    ];
    for (const { filters, sql, params } of cases) {
      for (const text of QUERIES) {
        const previous = await db.query<{ session_id: string; seq: number }>(previousBm25(sql), ['u', text, 30, ...params]);
        const hits = await search.turns(query('u', text, 30, undefined, filters), 'fulltext');
        expect(hits.map((h) => `${h.sessionId}#${h.seq}`), `${text} ${JSON.stringify(filters)}`).toEqual(previous.map((r) => `${r.session_id}#${r.seq}`));
      }
    }
    await db.close();
  }, 60_000);

  it("stores a turn's full text and length as its match text's, also when put together from the turns before it", async () => {
    const { db, log } = recording(await openDb());
    const search = new PostgresSearchIndex(db);
    const random = rng(7);
    const sentence = () => Array.from({ length: 3 + Math.floor(random() * 20) }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
    const texts = Array.from({ length: 14 }, (_, i) => `${i % 2 ? 'assistant' : 'user'}: ${sentence()}${i % 5 === 0 ? `\n${sentence()}` : ''}`);
    // As projection writes a slice: the two turns before (the first ones' from an earlier slice), then words of its own
    // (or none); one turn is matched by some other text, and one has a text of its own that ends in a line break.
    texts[9] = `${texts[9]}\n`;
    const extra = (i: number) => (i % 3 === 0 ? '' : `\n${sentence()}`);
    const before = ['user: an earlier turn about the lake', 'assistant: and its painting'];
    const context = [...before, ...texts];
    const turns = texts.map((text, i) =>
      turn('u', 's', i + 3, text, unit([1, i, 0, 0, 0, 0, 0, 1]), { matchText: i === 7 ? `${sentence()} ${text}` : `${context.slice(i, i + 3).join('\n')}${extra(i)}` }),
    );
    await search.indexTurns(turns);

    const insert = log.find((l) => l.sql.includes('INSERT INTO memory_turns'))!;
    expect((insert.params![16] as (string | null)[]).filter((rest) => rest !== null).length).toBeGreaterThanOrEqual(9);
    for (const t of turns) {
      const [row] = await db.query<{ same: boolean; doc_len: number }>(
        `SELECT (SELECT array_agg((lexeme, array_length(positions, 1)) ORDER BY lexeme) FROM unnest(tsv))
                  = (SELECT array_agg((lexeme, array_length(positions, 1)) ORDER BY lexeme) FROM unnest(to_tsvector('english', $2))) AS same, doc_len
         FROM memory_turns WHERE user_id = 'u' AND seq = $1`,
        [t.seq, t.matchText],
      );
      expect(row, `seq ${t.seq}`).toEqual({ same: true, doc_len: t.matchText.split(/\s+/).filter(Boolean).length });
    }
    await db.close();
  }, 60_000);

  it('ranks turns indexed before migration 7 (postings) once every migration has run', async () => {
    const db = await migratedBefore(7);
    // As the previous adapter wrote them: the row with its tsvector and length, and the user's statistics.
    const texts = ['user: painting at the lake at sunset', 'user: my dogs love the lake', 'assistant: painting dogs is hard'];
    for (const [i, text] of texts.entries()) {
      await db.query(
        `INSERT INTO memory_turns (user_id, session_id, seq, turn_id, speaker, text, occurred_at, tsv, doc_len, embedding_model, vector)
         VALUES ('u', 's', $1, $2, 'user', $3, $4, to_tsvector('english', $3), $5, $6, '[1,0,0]')`,
        [i + 1, `t${i}`, text, at(i), text.split(/\s+/).length, MODEL],
      );
    }
    await db.query(`INSERT INTO memory_turn_stats VALUES ('u', 3, $1)`, [texts.join(' ').split(/\s+/).length]);
    expect(await migrate(db)).toContain(7);
    const search = new PostgresSearchIndex(db);
    const hits = await search.turns(query('u', 'painting the lake', 10), 'fulltext');
    expect(hits.map((h) => h.seq)).toEqual((await independentBm25(db, 'u', 'painting the lake')).map((e) => Number(e.key.split('#')[1])));
    expect(hits).toHaveLength(3);
    await db.close();
  }, 60_000);
});

describe("a session's turn vectors read back", () => {
  it('gives the vectors indexed with the turns asked for, by seq, of that session and model only', async () => {
    const db = await openDb();
    const search = new PostgresSearchIndex(db);
    const random = rng(3);
    const vector = () => unit(Array.from({ length: DIMS }, () => random() - 0.5)).map(Math.fround);
    const vectors = [vector(), vector(), vector()];
    await search.indexTurns([
      ...vectors.map((v, i) => turn('u', 's1', i + 1, `user: turn ${i}`, v)),
      turn('u', 's2', 2, 'user: another session', vector()),
      turn("o'brien", 's1', 2, 'user: another user', vector()),
      turn('u', 's1', 4, 'user: another model', vector(), { embeddingModel: 'other-model' }),
    ]);
    const read = await search.turnVectors({ userId: 'u', sessionId: 's1' }, [1, 3, 4, 9], MODEL);
    expect([...read.keys()].sort()).toEqual([1, 3]);
    // As stored: float32 (the test's vectors are float32 values already).
    expect(read.get(1)).toBeInstanceOf(Float32Array);
    expect([...read.get(1)!]).toEqual(vectors[0]);
    expect([...read.get(3)!]).toEqual(vectors[2]);
    expect((await search.turnVectors({ userId: "o'brien", sessionId: 's1' }, [2], MODEL)).size).toBe(1);
    expect((await search.turnVectors({ userId: 'u', sessionId: 's1' }, [], MODEL)).size).toBe(0);
    await db.close();
  });
});

describe('vector search with HNSW', () => {
  /**
   * Runs the HNSW statement the adapter handed to memory_nearest, as memory_nearest runs it (its parameters are one
   * text array and the query vector), with the given iterative-scan mode: its plan and its rows.
   */
  async function runHnsw(db: Db, call: { params: unknown[] | undefined }, iterative: 'relaxed_order' | 'off') {
    const [, , hnsw, , efSearch, , params, vector] = call.params as [string, number, string, string, number, number, string[], Buffer];
    const sql = hnsw.replaceAll('($1)', '($1::text[])').replaceAll('$2::', '$2::float4[]::vector::');
    return db.transaction(async (tx) => {
      await tx.query("SELECT set_config('hnsw.iterative_scan', $1, true), set_config('hnsw.ef_search', $2, true), set_config('enable_sort', 'off', true)", [iterative, String(efSearch)]);
      const plan = (await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, [params, vector])).map((r) => r['QUERY PLAN']).join('\n');
      return { plan, rows: await tx.query<Record<string, unknown>>(sql, [params, vector]) };
    });
  }

  const exactTop = async (db: Db, table: string, column: string, key: string, userId: string, vector: number[], limit: number, where = '') =>
    (await db.query<{ k: string }>(`SELECT ${key} AS k FROM ${table} WHERE user_id = $1 ${where} ORDER BY ${column} <=> $2::vector LIMIT $3`, [userId, JSON.stringify(vector), limit])).map((r) => r.k);

  it('creates one partial expression index per vector column and embedding model, idempotently', async () => {
    const db = await openDb();
    // The index a binary one replaces (the vectors themselves, under the name they had before), dropped at start.
    const replaced = hnswIndexName('interactions', 'summary_vector', "other 'model'", 3072, { binary: false, partial: false });
    await db.exec(`CREATE INDEX ${replaced} ON interactions (id)`);
    // An index of every row, which the index of the rows searched through it replaces (migration 25).
    const everyTurn = hnswIndexName('memory_turns', 'vector', MODEL, DIMS, { partial: false });
    await db.exec(`CREATE INDEX ${everyTurn} ON memory_turns (seq)`);
    await ensureVectorIndexes(db, MODEL, DIMS);
    await ensureVectorIndexes(db, MODEL, DIMS);
    await ensureVectorIndexes(db, "other 'model'", 3072);
    await ensureVectorIndexes(db, 'huge', 16_000);
    const indexes = await db.query<{ indexname: string; indexdef: string }>(`SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE '%hnsw%' ORDER BY indexname`);
    expect(indexes).toHaveLength(9);
    expect(indexes.map((i) => i.indexname)).not.toContain(replaced);
    expect(indexes.map((i) => i.indexname)).not.toContain(everyTurn);
    const turnIndex = indexes.find((i) => i.indexname === hnswIndexName('memory_turns', 'vector', MODEL, DIMS))!;
    expect(turnIndex.indexdef).toMatch(/USING hnsw \(\(\(vector\)::vector\(8\)\) vector_cosine_ops\) WHERE \(\(embedding_model = 'test-model'::text\) AND \(vector_dims\(vector\) = 8\) AND vector_indexed\)/);
    const binary = indexes.find((i) => i.indexname === hnswIndexName('interactions', 'summary_vector', "other 'model'", 3072))!;
    expect(binary.indexdef).toMatch(/USING hnsw \(\(\(binary_quantize\(summary_vector\)\)::bit\(3072\)\) bit_hamming_ops\) WITH \(m='8', ef_construction='32'\) WHERE \(\(embedding_model = 'other ''model'''::text\)/);
    expect([8, 255, 256, 16_000, 16_001, 0].map((n) => hnswKind(n)?.ops ?? null)).toEqual(['vector_cosine_ops', 'vector_cosine_ops', 'bit_hamming_ops', 'bit_hamming_ops', null, null]);
    await db.close();
  }, 60_000);

  it('refuses pgvector before 0.8, which has no iterative scans', async () => {
    const old = { query: async () => [{ version: '0.7.4' }], exec: async () => undefined } as unknown as Queryable;
    const db = { kind: 'postgres', ...old, transaction: (fn: (tx: Queryable) => Promise<unknown>) => fn(old), close: async () => undefined } as unknown as Db;
    await expect(ensureVectorIndexes(db, MODEL, DIMS)).rejects.toThrow(/pgvector 0\.8 or later .* has 0\.7\.4/);
  });

  // Up to 255 dimensions the index holds the vectors; from 256 their binary quantisation, the candidates re-ranked.
  it.each([DIMS, 512])('answers a large user from the HNSW index (%i dimensions), with every user seeing only their own nearest rows', async (dims) => {
    const base = await openDb();
    await ensureVectorIndexes(base, MODEL, dims);
    const { db, log } = recording(base);
    const search = new PostgresSearchIndex(db, { exactScanMaxRows: 150 });
    const stores = postgresStores(base, { exactScanMaxRows: 150 });
    const random = rng(7);
    // Spread per dimension scaled so that the noise has the same length whatever the size.
    const noisy = (center: number[], spread: number) => unit(center.map((x) => x + spread * Math.sqrt(DIMS / dims) * (random() - 0.5)));
    const target = unit(Array.from({ length: dims }, () => random() - 0.5));
    // Twenty users just past the exact scan's size whose vectors crowd around the query, and one large user whose
    // vectors are spread out, in topics, one of them nearer the query than the others: an index walk that stopped at
    // ef_search candidates would find no row of the large user. Two small users' turns are not in the index at all.
    const topics = [noisy(target, 0.6), ...Array.from({ length: 11 }, () => noisy(target, 2))];
    const users = [
      ...Array.from({ length: 20 }, (_, u) => ({ id: `crowd-${u}`, rows: 160, near: () => noisy(target, 0.3) })),
      ...Array.from({ length: 2 }, (_, u) => ({ id: `small-${u}`, rows: 120, near: () => noisy(target, 0.3) })),
      { id: 'large', rows: 600, near: () => noisy(topics[Math.floor(random() * topics.length)]!, 0.6) },
    ];
    for (const user of users) {
      const vectors = Array.from({ length: user.rows }, user.near);
      await search.indexTurns(vectors.map((v, i) => turn(user.id, `s${i % 10}`, i + 1, `user: turn ${i}`, v, { agentId: i % 50 === 0 ? 'rare' : 'usual' })));
      await stores.interactions.upsert(vectors.map((v, i) => interaction(user.id, `s${i % 10}`, i, v, user.near())));
    }
    const q = noisy(target, 0.1);

    // The large user: the HNSW statement, planned on the model's index, finds the limit of the user's rows, so
    // memory_nearest keeps them; without the iterative scan the walk would stop among the small users' vectors.
    for (const [run, table, column, key] of [
      [() => search.turns(query('large', '', 50, q), 'vector'), 'memory_turns', 'vector', `session_id || '#' || seq`],
      [() => search.interactions(query('large', '', 50, q), 'vector'), 'interactions', 'content_vector', 'id'],
      [() => search.interactions(query('large', '', 50, q), 'summaryVector'), 'interactions', 'summary_vector', 'id'],
    ] as const) {
      log.length = 0;
      const hits = await run();
      const keys = hits.map((h) => ('id' in h ? h.id : `${h.sessionId}#${h.seq}`));
      const calls = log.filter((l) => l.sql.includes('memory_nearest'));
      expect(calls, column).toHaveLength(1);
      const relaxed = await runHnsw(base, calls[0]!, 'relaxed_order');
      expect(relaxed.plan, column).toContain(`Index Scan using ${hnswIndexName(table, column, MODEL, dims)}`);
      expect(relaxed.rows.map((r) => ('turn_id' in r ? `${String(r.session_id)}#${String(r.seq)}` : r.id))).toEqual(keys);
      expect((await runHnsw(base, calls[0]!, 'off')).rows.length, column).toBeLessThan(10);
      const truth = await exactTop(base, table, column, key, 'large', q, 50);
      expect(new Set(keys).size).toBe(50);
      expect(keys.filter((k) => truth.includes(k)).length / 50, column).toBeGreaterThanOrEqual(0.9);
      expect(hits.every((h) => ('id' in h ? h.id : h.shown?.turnId ?? '').startsWith('large/')), column).toBe(true);
    }

    // Small users: an exact scan of their own rows.
    for (const user of ['small-0', 'small-1']) {
      const hits = await search.turns(query(user, '', 30, q), 'vector');
      expect(hits.map((h) => `${h.sessionId}#${h.seq}`)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, user, q, 30));
    }

    // A narrow filter on the large user: the index walk gives up short of the limit, and the exact scan answers.
    const rare = await search.turns(query('large', '', 30, q, { agentId: 'rare' }), 'vector');
    expect(rare.map((h) => `${h.sessionId}#${h.seq}`)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, 'large', q, 30, `AND agent_id = 'rare'`));
    expect(rare).toHaveLength(12);
    await base.close();
  }, 120_000);

  it("puts a user's rows in the indexes once the user passes the exact scan's size, the earlier rows with them", async () => {
    const base = await openDb();
    await ensureVectorIndexes(base, MODEL, DIMS);
    const { db, log } = recording(base);
    const search = new PostgresSearchIndex(db, { exactScanMaxRows: 20 });
    const { interactions } = postgresStores(base, { exactScanMaxRows: 20 });
    const random = rng(5);
    const vectors = Array.from({ length: 26 }, () => unit(Array.from({ length: DIMS }, () => random() - 0.5)));
    const write = (from: number, to: number, userId = 'grows') =>
      search.indexTurns(vectors.slice(from, to).map((v, i) => turn(userId, `s${(from + i) % 3}`, from + i + 1, `user: turn ${from + i}`, v)));
    const indexed = async (table = 'memory_turns') =>
      Object.fromEntries(
        (await base.query<{ user_id: string; n: number }>(`SELECT user_id, count(*) FILTER (WHERE vector_indexed)::int AS n FROM ${table} GROUP BY user_id ORDER BY 1`)).map((r) => [r.user_id, r.n]),
      );

    await write(0, 15);
    await write(0, 12, 'small');
    await interactions.upsert([1, 2].map((n) => interaction('grows', 's0', n, vectors[n]!)).concat(interaction('small', 's0', 1, vectors[1]!)));
    await write(15, 20);
    await write(0, 5); // rewritten turns are not new ones: still 20
    expect(await indexed()).toEqual({ grows: 0, small: 0 });
    expect(await indexed('interactions')).toEqual({ grows: 0, small: 0 });
    await write(18, 23); // two rewritten, three new: past the size, the rewritten ones with the new
    expect(await indexed()).toEqual({ grows: 23, small: 0 });
    expect(await indexed('interactions')).toEqual({ grows: 2, small: 0 });
    await write(23, 26);
    await write(0, 2);
    await interactions.upsert([3, 1].map((n) => interaction('grows', 's0', n, vectors[n]!)).concat(interaction('small', 's0', 2, vectors[2]!)));
    expect(await indexed()).toEqual({ grows: 26, small: 0 });
    expect(await indexed('interactions')).toEqual({ grows: 3, small: 0 });

    // A write that takes nobody past the size reads neither table for the catch-up: its scans never run. (Joined with
    // the users who crossed instead, with other users' rows and statistics, the plan scanned a whole table each write.)
    await interactions.upsert(Array.from({ length: 300 }, (_, n) => interaction('others', 's0', n, vectors[n % 26]!)));
    await base.exec('ANALYZE interactions, memory_turns, memory_turn_stats');
    log.length = 0;
    await write(0, 12, 'small');
    const { sql, params } = log.find((l) => l.sql.includes('INSERT INTO memory_turns'))!;
    // ANALYZE runs it again: the same rows rewritten, which changes nothing.
    const lines = (await base.query<{ 'QUERY PLAN': string }>(`EXPLAIN (ANALYZE, COSTS OFF) ${sql}`, params)).map((r) => r['QUERY PLAN']);
    for (const cte of ['earlier_turns', 'earlier_windows']) {
      const from = lines.indexOf(`  CTE ${cte}`);
      const to = lines.findIndex((line, i) => i > from && /^ {2}\S/.test(line));
      const reads = lines.slice(from, to).filter((line) => /Scan (on|using) /.test(line) && !line.includes('CTE Scan'));
      expect(reads.length, cte).toBeGreaterThan(0);
      for (const read of reads) expect(read, cte).toContain('(never executed)');
    }

    // The index walk answers, and finds a turn written before the user passed the size.
    log.length = 0;
    const hits = await search.turns(query('grows', '', 3, vectors[4]), 'vector');
    expect(hits[0]).toMatchObject({ sessionId: 's1', seq: 5 });
    const calls = log.filter((l) => l.sql.includes('memory_nearest'));
    expect((await runHnsw(base, calls[0]!, 'relaxed_order')).plan).toContain(`Index Scan using ${hnswIndexName('memory_turns', 'vector', MODEL, DIMS)}`);
    await base.close();
  }, 60_000);

  it("on a PostgreSQL server takes each user's lock before writing their rows, so none is written beside a catch-up", async () => {
    const base = await openDb();
    const { db, log } = recording(base);
    const server: Db = { ...db, kind: 'postgres' };
    const vector = unit([1, 2, 3, 4, 5, 6, 7, 8]);
    await new PostgresSearchIndex(server).indexTurns([turn('b', 's1', 1, 'user: one', vector), turn('a', 's1', 1, 'user: two', vector)]);
    await postgresStores(server).interactions.upsert([interaction('a', 's1', 0, vector)]);
    const writes = log.filter((l) => /INSERT INTO (memory_turns|interactions) /.test(l.sql));
    expect(writes).toHaveLength(2);
    for (const write of writes) expect(log[log.indexOf(write) - 1]!.sql).toContain('pg_advisory_xact_lock');
    expect(log.filter((l) => l.sql.includes('pg_advisory_xact_lock')).map((l) => l.params)).toEqual([[['b', 'a']], [['a']]]);
    await base.close();
  });

  it("migration 25 puts the rows of users past the exact scan's size in the indexes, and only theirs", async () => {
    const db = await migratedBefore(25);
    await db.exec(`CREATE INDEX ${hnswIndexName('memory_turns', 'vector', MODEL, DIMS, { partial: false })} ON memory_turns USING hnsw ((vector::vector(8)) vector_cosine_ops)`);
    await db.exec(`CREATE INDEX ${hnswIndexName('interactions', 'content_vector', MODEL, DIMS, { partial: false })} ON interactions USING hnsw ((content_vector::vector(8)) vector_cosine_ops)`);
    const rows = (userId: string, n: number) =>
      db.query(
        `INSERT INTO memory_turns (user_id, session_id, seq, turn_id, speaker, text, occurred_at, tsv, doc_len, embedding_model, vector)
         SELECT $1, 's', g, 't' || g, 'user', 'text', now(), to_tsvector('text'), 1, $2, '[1,0,0,0,0,0,0,0]' FROM generate_series(1, $3) g`,
        [userId, MODEL, n],
      );
    await rows('large', EXACT_SCAN_MAX_ROWS + 1);
    await rows('small', 3);
    await db.query(
      `INSERT INTO interactions (user_id, id, session_id, from_seq, doc, embedding_model, content_vector, summary_vector)
       SELECT u, 'w', 's', 1, '{}', $1, '[1,0,0,0,0,0,0,0]', '[1,0,0,0,0,0,0,0]' FROM unnest(ARRAY['large', 'small']) u`,
      [MODEL],
    );
    await db.query('INSERT INTO memory_turn_stats (user_id, docs, total_len) VALUES ($1, $2::int, $2::int), ($3, 3, 3)', ['large', EXACT_SCAN_MAX_ROWS + 1, 'small']);
    expect(await migrate(db)).toEqual(MIGRATIONS.filter((m) => m.version >= 25).map((m) => m.version));
    expect(await db.query(`SELECT indexname FROM pg_indexes WHERE indexname LIKE '%hnsw%'`)).toEqual([]);
    expect(await db.query('SELECT user_id, count(*) FILTER (WHERE vector_indexed)::int AS n FROM memory_turns GROUP BY user_id ORDER BY 1')).toEqual([
      { user_id: 'large', n: EXACT_SCAN_MAX_ROWS + 1 },
      { user_id: 'small', n: 0 },
    ]);
    expect(await db.query('SELECT user_id, vector_indexed FROM interactions ORDER BY 1')).toEqual([
      { user_id: 'large', vector_indexed: true },
      { user_id: 'small', vector_indexed: false },
    ]);
    await db.close();
  }, 60_000);

  it('migration 26: ANALYZE gathers statistics for the columns searches filter on, not for the texts, tsvectors and vectors', async () => {
    const db = await openDb();
    await new PostgresSearchIndex(db).indexTurns(Array.from({ length: 20 }, (_, i) => turn(`u${i % 3}`, 's', i + 1, `user: painting by the lake ${i}`, unit([1, i, 0, 0, 0, 0, 0, 1]))));
    await db.query(
      `INSERT INTO interactions (user_id, id, session_id, from_seq, doc, embedding_model, content_vector, summary_vector, tsv)
       SELECT 'u' || g, 'w', 's', 1, '{"content": "a lake"}', $1, '[1,0,0,0,0,0,0,0]', '[1,0,0,0,0,0,0,0]', to_tsvector('english', 'a lake') FROM generate_series(1, 3) g`,
      [MODEL],
    );
    await db.exec('ANALYZE memory_turns, interactions');
    const analyzed = async (table: string) =>
      (await db.query<{ attname: string }>('SELECT attname FROM pg_stats WHERE tablename = $1 ORDER BY 1', [table])).map((r) => r.attname);
    const turns = await analyzed('memory_turns');
    expect(turns).toEqual(expect.arrayContaining(['user_id', 'session_id', 'seq', 'occurred_at', 'rev']));
    expect(turns.filter((c) => ['tsv', 'text', 'vector'].includes(c))).toEqual([]);
    const interactions = await analyzed('interactions');
    expect(interactions).toEqual(expect.arrayContaining(['user_id', 'session_id', 'rev']));
    expect(interactions.filter((c) => ['tsv', 'doc', 'content_vector', 'summary_vector'].includes(c))).toEqual([]);
    await db.close();
  });

  it('without HNSW indexes (PGLITE_VECTOR_INDEXES=none), a large user is searched exactly, the same rows as the index finds', async () => {
    const base = await openDb();
    await ensureVectorIndexes(base, MODEL, DIMS);
    const search = new PostgresSearchIndex(base, { exactScanMaxRows: 50 });
    const random = rng(11);
    const vectors = Array.from({ length: 400 }, () => unit(Array.from({ length: DIMS }, () => random() - 0.5)));
    await search.indexTurns(vectors.map((v, i) => turn('large', `s${i % 10}`, i + 1, `user: turn ${i}`, v)));
    const q = vectors[123]!;
    const truth = await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, 'large', q, 20);
    await dropVectorIndexes(base);
    expect(await base.query(`SELECT indexname FROM pg_indexes WHERE indexname LIKE '%hnsw%'`)).toEqual([]);
    const hits = await search.turns(query('large', '', 20, q), 'vector');
    expect(hits.map((h) => `${h.sessionId}#${h.seq}`)).toEqual(truth);
    await base.close();
  }, 60_000);
});
