import { describe, expect, it } from 'vitest';
import { openPglite, type Db, type Queryable } from '../../shared/adapters/postgres/db.js';
import { migrate, MIGRATIONS } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import { assertPgvector, BINARY_MIN_DIMENSIONS, bm25Sql, PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
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

describe('vector search by binary codes', () => {
  /** Runs the code scan the adapter handed to memory_nearest as memory_nearest runs it (one text array of parameters and the query vector): its plan and rows. */
  async function runCandidates(db: Db, call: { params: unknown[] | undefined }) {
    const [, , candidates, , params, vector] = call.params as [string, number, string, string, string[], Buffer];
    const sql = candidates.replaceAll('($1)', '($1::text[])').replaceAll('$2::', '$2::float4[]::vector::');
    const plan = (await db.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, [params, vector])).map((r) => r['QUERY PLAN']).join('\n');
    return { plan, rows: await db.query<Record<string, unknown>>(sql, [params, vector]) };
  }

  const exactTop = async (db: Db, table: string, column: string, key: string, userId: string, vector: number[], limit: number, where = '') =>
    (await db.query<{ k: string }>(`SELECT ${key} AS k FROM ${table} WHERE user_id = $1 ${where} ORDER BY ${column} <=> $2::vector LIMIT $3`, [userId, JSON.stringify(vector), limit])).map((r) => r.k);

  it('refuses pgvector before 0.7, which has no binary quantisation', async () => {
    const old = { query: async () => [{ version: '0.6.2' }], exec: async () => undefined } as unknown as Queryable;
    const db = { kind: 'postgres', ...old, transaction: (fn: (tx: Queryable) => Promise<unknown>) => fn(old), close: async () => undefined } as unknown as Db;
    await expect(assertPgvector(db)).rejects.toThrow(/pgvector 0\.7 or later .* has 0\.6\.2/);
    await expect(assertPgvector(await openDb())).resolves.toBeUndefined();
  });

  // From 256 dimensions a large user's codes are scanned and the nearest re-ranked; below, every row is scanned exactly.
  it.each([DIMS, 512])('answers a large user by scanning their codes (%i dimensions), every user seeing only their own nearest rows', async (dims) => {
    const base = await openDb();
    const { db, log } = recording(base);
    const search = new PostgresSearchIndex(db, { exactScanMaxRows: 150 });
    const stores = postgresStores(base);
    const random = rng(7);
    // Spread per dimension scaled so that the noise has the same length whatever the size.
    const noisy = (center: number[], spread: number) => unit(center.map((x) => x + spread * Math.sqrt(DIMS / dims) * (random() - 0.5)));
    const target = unit(Array.from({ length: dims }, () => random() - 0.5));
    // Users whose vectors crowd around the query, two small ones among them, and one large user whose vectors are
    // spread out in topics, one of them nearer the query than the others.
    const topics = [noisy(target, 0.6), ...Array.from({ length: 11 }, () => noisy(target, 2))];
    const users = [
      ...Array.from({ length: 5 }, (_, u) => ({ id: `crowd-${u}`, rows: 160, near: () => noisy(target, 0.3) })),
      ...Array.from({ length: 2 }, (_, u) => ({ id: `small-${u}`, rows: 120, near: () => noisy(target, 0.3) })),
      { id: 'large', rows: 600, near: () => noisy(topics[Math.floor(random() * topics.length)]!, 0.6) },
    ];
    for (const user of users) {
      const vectors = Array.from({ length: user.rows }, user.near);
      await search.indexTurns(vectors.map((v, i) => turn(user.id, `s${i % 10}`, i + 1, `user: turn ${i}`, v, { agentId: i % 50 === 0 ? 'rare' : 'usual' })));
      await stores.interactions.upsert(vectors.map((v, i) => interaction(user.id, `s${i % 10}`, i, v, user.near())));
    }
    const q = noisy(target, 0.1);

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
      const truth = await exactTop(base, table, column, key, 'large', q, 50);
      expect(new Set(keys).size).toBe(50);
      expect(hits.every((h) => ('id' in h ? h.id : h.shown?.turnId ?? '').startsWith('large/')), column).toBe(true);
      if (dims < BINARY_MIN_DIMENSIONS) {
        expect(calls[0]!.params![2], column).toBeNull();
        expect(keys, column).toEqual(truth);
        continue;
      }
      const scanned = await runCandidates(base, calls[0]!);
      expect(scanned.plan, column).toContain(table === 'memory_turns' ? 'memory_turn_bits' : 'interaction_bits');
      expect(scanned.rows.map((r) => ('turn_id' in r ? `${String(r.session_id)}#${String(r.seq)}` : r.id))).toEqual(keys);
      expect(keys.filter((k) => truth.includes(k)).length / 50, column).toBeGreaterThanOrEqual(0.9);
    }

    // Small users: an exact scan of their own rows.
    for (const user of ['small-0', 'small-1']) {
      const hits = await search.turns(query(user, '', 30, q), 'vector');
      expect(hits.map((h) => `${h.sessionId}#${h.seq}`)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, user, q, 30));
    }

    // Filters apply to the codes' scan, which considers every row that passes them: a narrow agent filter, a session
    // and a time range get the exact answer (fewer rows pass than the scan hands to the re-rank).
    const keysOf = (hits: readonly { sessionId: string; seq: number }[]) => hits.map((h) => `${h.sessionId}#${h.seq}`);
    const rare = await search.turns(query('large', '', 30, q, { agentId: 'rare' }), 'vector');
    expect(keysOf(rare)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, 'large', q, 30, `AND agent_id = 'rare'`));
    expect(rare).toHaveLength(12);
    const session = await search.turns(query('large', '', 20, q, { sessionId: 's3' }), 'vector');
    expect(keysOf(session)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, 'large', q, 20, `AND session_id = 's3'`));
    const window = await search.turns(query('large', '', 20, q, { from: at(100), to: at(160) }), 'vector');
    expect(keysOf(window)).toEqual(await exactTop(base, 'memory_turns', 'vector', `session_id || '#' || seq`, 'large', q, 20, `AND occurred_at BETWEEN '${at(100)}' AND '${at(160)}'`));
    const rareWindows = await search.interactions(query('large', '', 30, q, { agentId: 'rare' }), 'vector');
    expect(rareWindows.map((w) => w.id)).toEqual(await exactTop(base, 'interactions', 'content_vector', 'id', 'large', q, 30, `AND doc->'agentIds' ? 'rare'`));
    await base.close();
  }, 120_000);

  it('writes the codes with their rows, rewrites them with the rows, and deletes them with the rows', async () => {
    const db = await openDb();
    const search = new PostgresSearchIndex(db);
    const { interactions } = postgresStores(db);
    const random = rng(5);
    const vector = () => unit(Array.from({ length: 512 }, () => random() - 0.5));
    const [v1, v2, v3] = [vector(), vector(), vector()];
    await search.indexTurns([turn('u', 's1', 1, 'user: one', v1), turn('u', 's2', 1, 'user: two', v2)]);
    await interactions.upsert([interaction('u', 's1', 0, v1, v2)]);
    const turnCodes = () => db.query(`SELECT session_id, seq, b.agent_id, b.bits = binary_quantize(t.vector)::varbit AS same FROM memory_turn_bits b JOIN memory_turns t USING (user_id, session_id, seq) ORDER BY 1`);
    const windowCodes = () =>
      db.query(`SELECT b.agent_ids, b.content_bits = binary_quantize(i.content_vector)::varbit AND b.summary_bits = binary_quantize(i.summary_vector)::varbit AS same FROM interaction_bits b JOIN interactions i USING (user_id, id)`);
    expect(await turnCodes()).toEqual([
      { session_id: 's1', seq: 1, agent_id: null, same: true },
      { session_id: 's2', seq: 1, agent_id: null, same: true },
    ]);
    expect(await windowCodes()).toEqual([{ agent_ids: [], same: true }]);
    // A rewrite (a projection run again) brings its codes and filtered columns along.
    await search.indexTurns([turn('u', 's1', 1, 'user: one', v3, { agentId: 'planner' })]);
    await interactions.upsert([{ ...interaction('u', 's1', 0, v3, v1), agentIds: ['planner'] }]);
    expect(await turnCodes()).toEqual([
      { session_id: 's1', seq: 1, agent_id: 'planner', same: true },
      { session_id: 's2', seq: 1, agent_id: null, same: true },
    ]);
    expect(await windowCodes()).toEqual([{ agent_ids: ['planner'], same: true }]);
    // A forget deletes the rows; their codes go with them.
    await db.query(`DELETE FROM memory_turns WHERE session_id = 's1'`);
    await db.query('DELETE FROM interactions');
    expect((await turnCodes()).map((r) => r.session_id)).toEqual(['s2']);
    expect(await db.query('SELECT * FROM interaction_bits')).toEqual([]);
    await db.close();
  }, 60_000);

  it("on a PostgreSQL server takes each user's lock before writing their turns, so the BM25 statistics count a turn once", async () => {
    const base = await openDb();
    const { db, log } = recording(base);
    const server: Db = { ...db, kind: 'postgres' };
    const vector = unit([1, 2, 3, 4, 5, 6, 7, 8]);
    await new PostgresSearchIndex(server).indexTurns([turn('b', 's1', 1, 'user: one', vector), turn('a', 's1', 1, 'user: two', vector)]);
    const write = log.find((l) => /INSERT INTO memory_turns /.test(l.sql))!;
    expect(log[log.indexOf(write) - 1]!.sql).toContain('pg_advisory_xact_lock');
    expect(log.filter((l) => l.sql.includes('pg_advisory_xact_lock')).map((l) => l.params)).toEqual([[['b', 'a']]]);
    await base.close();
  });

  it("migrations 28 and 29 write every row's codes and drop the HNSW indexes", async () => {
    const db = await migratedBefore(28);
    await db.exec(`CREATE INDEX memory_turns_vector_hnsw_0123456789ab ON memory_turns USING hnsw ((vector::vector(8)) vector_cosine_ops) WHERE vector_indexed`);
    await db.exec(`CREATE INDEX interactions_content_vector_hnsw_0123456789ab ON interactions USING hnsw ((content_vector::vector(8)) vector_cosine_ops)`);
    await db.query(
      `INSERT INTO memory_turns (user_id, session_id, seq, turn_id, speaker, text, occurred_at, tsv, doc_len, embedding_model, vector, agent_id)
       SELECT 'u', 's', g, 't' || g, 'user', 'text', now(), to_tsvector('text'), 1, $1, ('[' || g || ',-1,0,0,0,0,0,1]')::vector, 'a' FROM generate_series(1, 3) g`,
      [MODEL],
    );
    await db.query(
      `INSERT INTO interactions (user_id, id, session_id, from_seq, doc, embedding_model, content_vector, summary_vector)
       VALUES ('u', 'w', 's', 1, '{"agentIds": ["a"], "startedAt": "2026-01-01T00:00:00.000Z"}', $1, '[1,-1,0,0,0,0,0,0]', '[-1,1,0,0,0,0,0,0]')`,
      [MODEL],
    );
    expect(await migrate(db)).toEqual([28, 29]);
    expect(await db.query(`SELECT indexname FROM pg_indexes WHERE indexname LIKE '%hnsw%'`)).toEqual([]);
    expect(await db.query(`SELECT seq, agent_id, bits::text FROM memory_turn_bits ORDER BY seq`)).toEqual([1, 2, 3].map((seq) => ({ seq, agent_id: 'a', bits: '10000001' })));
    expect(await db.query(`SELECT agent_ids, started_at::text AS at, content_bits::text AS c, summary_bits::text AS s FROM interaction_bits`)).toEqual([
      { agent_ids: ['a'], at: '2026-01-01 00:00:00+00', c: '10000000', s: '01000000' },
    ]);
    expect(await db.query(`SELECT column_name FROM information_schema.columns WHERE column_name = 'vector_indexed'`)).toEqual([]);
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


});
