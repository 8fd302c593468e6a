import { describe, expect, it } from 'vitest';
import { openPglite, type Db, type Queryable } from '../../shared/adapters/postgres/db.js';
import { migrate, MIGRATIONS } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSearchIndex, windowBm25Sql } from '../../shared/adapters/postgres/search.js';
import { CopyRows, forEachLexeme } from '../../shared/adapters/postgres/copy-binary.js';
import { SnapshotSearchIndex } from '../../shared/adapters/postgres/search-snapshot.js';
import { vectorCodes } from '../../shared/adapters/postgres/compact-vectors.js';
import { PostgresInteractionStore } from '../../shared/adapters/postgres/stores.js';
import type { IndexedTurn, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../shared/application/search-ports.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import { FactSearchBody } from '../../shared/contracts/facts.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { createRuntime } from '../../shared/platform/composition.js';
import { loadSettings } from '../../shared/platform/config.js';
import { rng } from '../support/random.js';

const MODEL = 'test-model';
const DIMS = 8;
const WORDS = ['paint', 'painting', 'painted', 'lake', 'sunset', 'dog', 'dogs', 'hike', 'hiking', 'camp', 'guitar', 'music', 'school', 'teacher', 'career', 'adopt', 'family', 'friend', 'support', 'group', 'pottery', 'class', 'beach', 'the', 'a', 'and', 'my', 'run', 'running', 'charity', 'race'];
const QUERIES = ['painting at the lake', 'dogs hiking camp', 'guitar music school teacher career', 'charity race running', 'the a and', 'zebra'];
const FILTERS: SearchQuery['filters'][] = [{}, { sessionId: 's2' }, { agentId: 'agent-b' }, { from: at(40), to: at(120) }];

function at(minute: number): string {
  return new Date(Date.UTC(2026, 0, 1, 0, minute)).toISOString();
}

/** Records every statement (and every COPY's), so a test can tell the snapshot's statements from the SQL rankings. */
function recording(db: Db): { db: Db; log: string[] } {
  const log: string[] = [];
  const wrap = (q: Queryable): Queryable => ({
    query: (sql, params) => {
      log.push(sql);
      return q.query(sql, params);
    },
    exec: (sql) => q.exec(sql),
  });
  const copyBinary = (select: string) => {
    log.push(select);
    return db.copyBinary!(select);
  };
  return { db: { ...db, ...wrap(db), copyBinary, transaction: (fn) => db.transaction((tx) => fn(wrap(tx))) }, log };
}

/** A snapshot's load of a chunk of rows past its revision. */
const LOAD = /\.rev > \d+ ORDER BY/;
/** The SQL path's turn BM25 (bm25Sql). */
const TURN_BM25 = /FROM memory_turns d /;

/** A corpus of two users: turns in five sessions by two agents, and four-turn windows over them. */
async function corpus(users = ['u', 'other'], turnsPerUser = 120, migrated = true) {
  const db = await openPglite(undefined);
  if (migrated) await migrate(db);
  else {
    // As a store written before migration 11 (with the columns of referred periods and of the turn index's rows, which
    // the current indexTurns writes).
    await db.exec('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    for (const m of MIGRATIONS.filter((m) => m.version < 11 || WRITTEN_COLUMNS.includes(m))) {
      await db.exec(m.sql);
      await db.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
    }
  }
  const random = rng(42);
  const sentence = () => Array.from({ length: 4 + Math.floor(random() * 30) }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
  const vector = () => Array.from({ length: DIMS }, () => random() - 0.5);
  const sql = new PostgresSearchIndex(db);
  const interactions = new PostgresInteractionStore(db);
  const write = async (userId: string, from: number, to: number) => {
    const turns: IndexedTurn[] = [];
    for (let i = from; i < to; i++) {
      // Every third turn ends by asking, which hits carry (asks); every sixth with a line break after the question mark.
      const text = `${i % 2 ? 'assistant' : 'user'}: ${sentence()}${i % 3 ? '' : i % 6 ? '?' : '?\n'}`;
      // Every fourth turn refers to a period ("last week"), which hits carry.
      const refers = i % 4 === 0 ? { refers: { from: at(i - 60), to: at(i - 30) } } : {};
      turns.push({ userId, sessionId: `s${i % 5}`, seq: i + 1, turnId: `t${i}`, agentId: i % 3 ? 'agent-a' : 'agent-b', speaker: 'user', text, matchText: `${sentence()}\n${text}`, timestamp: at(i), ...refers, embeddingModel: MODEL, vector: vector() });
    }
    await sql.indexTurns(turns);
    await interactions.upsert(
      Array.from({ length: Math.floor((to - from) / 4) }, (_, w): InteractionDocument => {
        const first = from + 4 * w;
        return {
          schemaVersion: 1,
          id: `${userId}-w${first}`,
          userId,
          sessionId: `s${w % 5}`,
          agentIds: w % 3 ? ['agent-a'] : ['agent-a', 'agent-b'],
          turnIds: [0, 1, 2, 3].map((k) => `t${first + k}`),
          seqRange: [first + 1, first + 4],
          startedAt: at(first),
          endedAt: at(first + 3),
          content: `${sentence()} ${sentence()}`,
          summary: sentence(),
          topics: [],
          entities: [],
          embeddingModel: MODEL,
          contentVector: vector(),
          summaryVector: vector(),
          createdAt: at(first),
        };
      }),
    );
  };
  for (const userId of users) await write(userId, 0, turnsPerUser);
  return { db, sql, write, sentence, vector };
}

/**
 * The migrations that add columns and tables the current writes write: the referred periods, the vectors' int8 codes
 * and their binary codes.
 */
const WRITTEN_COLUMNS = MIGRATIONS.filter((m) => m.name === 'the period a turn refers to' || m.version === 27 || m.version === 28);

const LISTS = [
  ['turns', 'fulltext'],
  ['turns', 'vector'],
  ['interactions', 'fulltext'],
  ['interactions', 'vector'],
  ['interactions', 'summaryVector'],
] as const;

/** As composition builds it for PGlite: snapshots in front of the SQL index over the same database. */
const snapshots = (db: Db, maxRows: number) => new SnapshotSearchIndex(db, new PostgresSearchIndex(db), { maxRows });

const keys = (hits: (TurnHit | WindowHit)[]) => hits.map((h) => (h.kind === 'turn' ? `${h.sessionId}#${h.seq}` : h.id));

async function ranked(search: SearchIndex, query: SearchQuery, list: (typeof LISTS)[number]) {
  return list[0] === 'turns' ? search.turns(query, list[1]) : search.interactions(query, list[1]);
}

/** A list's hits with what their facts show, as SearchIndex.show reads it (for hits ranked without it). */
/** What fact search needs besides the index: an embedder that answers every query with `queryVector`. */
const searchDeps = (search: SearchIndex, queryVector: number[]) => ({
  search,
  embedder: { model: MODEL, dimensions: DIMS, embed: async (texts: readonly string[]) => texts.map(() => queryVector) },
  memory: { kTurnBuffer: 10, nActiveTurns: 10, numRecentSessions: 3, topKFacts: 5 },
  clock: { now: () => new Date(at(200)) },
});

async function shown(search: SearchIndex, userId: string, hits: (TurnHit | WindowHit)[]): Promise<(TurnHit | WindowHit)[]> {
  const read = await search.show(userId, { turns: hits.filter((h) => h.kind === 'turn'), interactions: hits.filter((h) => h.kind === 'interaction') });
  return [...read.turns, ...read.interactions];
}

describe('in-process search snapshots (PGlite)', () => {
  it('rank every list as the SQL does: BM25 over turns and windows, exact cosine, with the filters', async () => {
    const { db, sql, vector } = await corpus();
    const snapshot = snapshots(db, 10_000);
    expect(await snapshot.warm('u')).toBe(true);
    let referring = 0;
    let asking = 0;
    for (const text of QUERIES) {
      for (const filters of FILTERS) {
        const query: SearchQuery = { userId: 'u', text, vector: { model: MODEL, values: vector() }, limit: 15, filters };
        for (const list of LISTS) {
          const expected = await ranked(sql, query, list);
          const got = await ranked(snapshot, query, list);
          expect(keys(got), `${list.join(' ')} "${text}" ${JSON.stringify(filters)}`).toEqual(keys(expected));
          expect(got.every((h) => !h.shown)).toBe(true); // ranked without reading the rows
          expect(await shown(snapshot, 'u', got)).toEqual(expected);
          for (const h of expected) {
            if (h.kind !== 'turn') continue;
            expect(h.asks === true).toBe(h.shown!.text.trimEnd().endsWith('?'));
            if (h.asks) asking++;
            if (!h.refers) continue;
            referring++;
            expect(h.refers).toEqual({ from: at(h.seq - 61), to: at(h.seq - 31) }); // as the corpus indexed it
          }
        }
      }
    }
    // The turns' referred periods and whether they ask were compared too: the hits held some.
    expect(referring).toBeGreaterThan(0);
    expect(asking).toBeGreaterThan(0);
    // Another model's query vector matches nothing; a user with no rows has nothing.
    expect(await snapshot.turns({ userId: 'u', text: '', vector: { model: 'other-model', values: vector() }, limit: 5, filters: {} }, 'vector')).toEqual([]);
    expect(await snapshot.interactions({ userId: 'nobody', text: 'painting', limit: 5, filters: {} }, 'fulltext')).toEqual([]);
    await db.close();
  }, 60_000);

  it('answer a search before the snapshot is built through the SQL path, with the same results, and build it meanwhile', async () => {
    const { db, sql, vector } = await corpus(['u'], 80);
    const { db: recorded, log } = recording(db);
    const snapshot = snapshots(recorded, 10_000);
    const query: SearchQuery = { userId: 'u', text: 'painting at the lake', vector: { model: MODEL, values: vector() }, limit: 15, filters: {} };
    const expected = await Promise.all(LISTS.map((list) => ranked(sql, query, list)));
    // Cold: the five lists of one search (started together, as the use case does) are ranked by the SQL while a build
    // starts in the background.
    expect(await Promise.all(LISTS.map((list) => ranked(snapshot, query, list)))).toEqual(expected);
    expect(log.filter((s) => /memory_nearest/.test(s))).toHaveLength(3);
    expect(log.filter((s) => TURN_BM25.test(s))).toHaveLength(1);
    // Built (the background build joined): the same results, now without the SQL rankings.
    expect(await snapshot.warm('u')).toBe(true);
    expect(snapshot.held('u')).toBe(80 + 20);
    const statements = log.length;
    const got = await Promise.all(LISTS.map((list) => ranked(snapshot, query, list)));
    const read = log.slice(statements);
    expect(read.filter((s) => /memory_nearest/.test(s) || TURN_BM25.test(s))).toEqual([]);
    // The vector lists' candidates read their exact distances in one statement per table, and nothing else of the rows.
    expect(read.filter((s) => /JOIN memory_turns t ON/.test(s))).toHaveLength(1);
    expect(read.filter((s) => /JOIN interactions i ON/.test(s))).toHaveLength(1);
    expect(read.filter((s) => /t\.text|i\.doc/.test(s))).toEqual([]);
    // What the facts show is read afterwards, for the hits asked for only.
    for (const [i, hits] of got.entries()) expect(await shown(snapshot, 'u', hits)).toEqual(expected[i]);
    await snapshot.close();
    await db.close();
  }, 60_000);

  it('give fact search the answer the SQL gives, reading what the facts show for the facts returned only', async () => {
    const { db, sql, vector } = await corpus(['u'], 120);
    const snapshot = snapshots(db, 10_000);
    expect(await snapshot.warm('u')).toBe(true);
    const shownPerRead: number[] = [];
    const counted: SearchIndex = {
      indexTurns: (turns) => snapshot.indexTurns(turns),
      turnVectors: (key, seqs, model) => snapshot.turnVectors(key, seqs, model),
      speakers: (userId) => snapshot.speakers(userId),
      turns: (query, retriever) => snapshot.turns(query, retriever),
      interactions: (query, retriever) => snapshot.interactions(query, retriever),
      show: (userId, hits) => {
        shownPerRead.push(hits.turns.length + hits.interactions.length);
        return snapshot.show(userId, hits);
      },
    };
    const queryVector = vector();
    const deps = (search: SearchIndex) => searchDeps(search, queryVector);
    const bodies = [
      ...QUERIES.map((query) => ({ query, topK: 8 })),
      { query: 'painting at the lake in January 2026', topK: 5 }, // a named period: boosts by each fact's time
      { query: 'dogs hiking camp', topK: 5, sessionId: 's2' },
      { query: 'guitar music school teacher career', topK: 10, minScore: 0.6 },
    ];
    for (const body of bodies) {
      shownPerRead.length = 0;
      const expected = await searchFacts(deps(sql), 'u', FactSearchBody.parse(body));
      const got = await searchFacts(deps(counted), 'u', FactSearchBody.parse(body));
      expect(got, body.query).toEqual(expected);
      // One read of what the facts show, for the topK best at most.
      if (expected.facts.length > 0) expect(shownPerRead.length, body.query).toBe(1);
      expect(shownPerRead.every((n) => n <= body.topK)).toBe(true);
    }
    // A token budget that skips facts: read again, twice as many each time, until the answer is full.
    shownPerRead.length = 0;
    // Here the fifth fact to fit in 60 tokens comes after the 15th best (and by the 35th): three reads.
    const body = FactSearchBody.parse({ query: 'painting at the lake', topK: 5, maxTokens: 60 });
    const expected = await searchFacts(deps(sql), 'u', body);
    expect(await searchFacts(deps(counted), 'u', body)).toEqual(expected);
    expect(expected.facts).toHaveLength(5);
    expect(shownPerRead).toEqual([5, 10, 20]);
    await snapshot.close();
    await db.close();
  }, 60_000);

  it('give fact search the same answer when only some lists carry what their facts show (Cosmos: the vector lists of interactions)', async () => {
    const { db, sql, vector } = await corpus(['u'], 120);
    const shownPerRead: number[] = [];
    const mixed: SearchIndex = {
      indexTurns: (turns) => sql.indexTurns(turns),
      turnVectors: (key, seqs, model) => sql.turnVectors(key, seqs, model),
      speakers: (userId) => sql.speakers(userId),
      turns: (query, retriever) => sql.turns(query, retriever),
      interactions: async (query, retriever) => {
        const hits = await sql.interactions(query, retriever);
        return retriever === 'fulltext' ? hits : hits.map(({ shown: _shown, ...hit }) => hit);
      },
      show: (userId, hits) => {
        shownPerRead.push(hits.interactions.length);
        return sql.show(userId, hits);
      },
    };
    const queryVector = vector();
    const deps = (search: SearchIndex) => searchDeps(search, queryVector);
    const bodies = [
      ...QUERIES.map((query) => ({ query, topK: 8 })),
      { query: 'dogs hiking camp', topK: 5, sessionId: 's2' },
      { query: 'painting at the lake', topK: 5, maxTokens: 100 },
      { query: 'guitar music school teacher career', topK: 10, sources: ['interactions'] as const, retrievers: ['vector'] as const },
    ];
    for (const body of bodies) {
      shownPerRead.length = 0;
      const expected = await searchFacts(deps(sql), 'u', FactSearchBody.parse(body));
      expect(await searchFacts(deps(mixed), 'u', FactSearchBody.parse(body)), body.query).toEqual(expected);
      expect(shownPerRead.every((n) => n <= 2 * body.topK)).toBe(true);
    }
    await db.close();
  }, 60_000);

  it('are built at start for the most recently written users, within the row limit', async () => {
    const { db, write } = await corpus(['old', 'mid'], 40);
    await write('new', 0, 40);
    // 40 turns and 10 windows a user, counted as 80 rows before loading: room for two.
    const snapshot = snapshots(db, 160);
    expect(await snapshot.warmRecent()).toEqual(['new', 'mid']);
    expect([snapshot.held('new'), snapshot.held('mid'), snapshot.held('old')]).toEqual([50, 50, 0]);
    await db.close();
  }, 60_000);

  it('rank windows by BM25 as computed here from their tsvectors, with a window as long as its tokens', async () => {
    const { db } = await corpus(['u'], 80);
    const windows = await db.query<{ id: string; started: string; terms: [string, number][] }>(
      `SELECT id, doc->>'startedAt' AS started, (SELECT json_agg(json_build_array(lexeme, array_length(positions, 1))) FROM unnest(tsv)) AS terms FROM interactions WHERE user_id = 'u'`,
    );
    for (const text of QUERIES) {
      const lexemes = (await db.query<{ lexeme: string }>(`SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $1))`, [text])).map((r) => r.lexeme);
      const lengths = windows.map((w) => w.terms.reduce((sum, [, tf]) => sum + tf, 0));
      const avgdl = lengths.reduce((a, b) => a + b, 0) / windows.length;
      const df = (l: string) => windows.filter((w) => w.terms.some(([x]) => x === l)).length;
      const expected = windows
        .map((w, i) => {
          const tf = new Map(w.terms);
          const score = lexemes.filter((l) => tf.has(l)).reduce((sum, l) => {
            const f = tf.get(l)!;
            return sum + (Math.log(1 + (windows.length - df(l) + 0.5) / (df(l) + 0.5)) * f * 2.2) / (f + 1.2 * (1 - 0.75 + (0.75 * lengths[i]!) / avgdl));
          }, 0);
          return { id: w.id, score, started: w.started };
        })
        .filter((w) => w.score > 0)
        .sort((a, b) => b.score - a.score || b.started.localeCompare(a.started));
      const got = await db.query<{ id: string; score: number }>(windowBm25Sql(''), ['u', text, 1000]);
      expect(got.map((r) => r.id), text).toEqual(expected.map((e) => e.id));
      got.forEach((r, i) => expect(r.score).toBeCloseTo(expected[i]!.score, 9));
    }
    await db.close();
  }, 60_000);

  it('see the writes made after they were built: new rows, rewritten rows and deleted rows', async () => {
    const { db, sql, write, vector } = await corpus(['u'], 40);
    const { db: recorded, log } = recording(db);
    const snapshot = snapshots(recorded, 10_000);
    const same = async (text: string) => {
      const query: SearchQuery = { userId: 'u', text, vector: { model: MODEL, values: vector() }, limit: 200, filters: {} };
      for (const list of LISTS) expect(keys(await ranked(snapshot, query, list)), `${list.join(' ')} "${text}"`).toEqual(keys(await ranked(sql, query, list)));
    };
    const loads = () => log.filter((s) => LOAD.test(s)).length;
    await snapshot.warm('u');
    expect(loads()).toBe(2);
    await same('painting lake');
    expect(loads()).toBe(2); // nothing new: one revision check, no load

    await write('u', 40, 60); // new turns and windows: loaded incrementally
    await same('dogs hiking');
    expect(loads()).toBe(4);

    // A turn indexed again with other words, and a window rewritten: answered in SQL while rebuilt in the background.
    await sql.indexTurns([{ userId: 'u', sessionId: 's0', seq: 1, turnId: 't0', speaker: 'user', text: 'user: zebra', matchText: 'zebra zebra', timestamp: at(0), embeddingModel: MODEL, vector: vector() }]);
    await same('zebra');
    await snapshot.warm('u');
    await same('zebra');
    const zebra = await snapshot.turns({ userId: 'u', text: 'zebra', limit: 5, filters: {} }, 'fulltext');
    expect((await snapshot.show('u', { turns: zebra, interactions: [] })).turns.map((h) => h.shown)).toEqual([{ turnId: 't0', text: 'user: zebra' }]);
    await db.query(`UPDATE interactions SET tsv = to_tsvector('english', 'unicorn') WHERE id = 'u-w8'`);
    await same('unicorn');
    await snapshot.warm('u');
    await same('unicorn');
    expect((await snapshot.interactions({ userId: 'u', text: 'unicorn', limit: 5, filters: {} }, 'fulltext')).map((h) => h.id)).toEqual(['u-w8']);
    expect(snapshot.held('u')).toBe(60 + 15);

    // Deleted rows are gone from the next search (deleted with their statistics, for the SQL's BM25).
    await db.exec(`
      DELETE FROM memory_turns WHERE user_id = 'u' AND session_id = 's1';
      UPDATE memory_turn_stats SET docs = (SELECT count(*) FROM memory_turns WHERE user_id = 'u'), total_len = (SELECT sum(doc_len) FROM memory_turns WHERE user_id = 'u') WHERE user_id = 'u';
      DELETE FROM interactions WHERE user_id = 'u' AND session_id = 's1';
    `);
    await same('painting lake');
    await snapshot.warm('u');
    expect(snapshot.held('u')).toBe(60 - 12 + 15 - 3);
    await same('painting lake');
    const left = await snapshot.turns({ userId: 'u', text: '', vector: { model: MODEL, values: vector() }, limit: 200, filters: {} }, 'vector');
    expect(left.some((h) => h.sessionId === 's1')).toBe(false);
    expect(left).toHaveLength(60 - 12);
    await db.close();
  }, 60_000);

  it("bring the snapshot up to date once a search: its vector lists, started after its full-text lists, rank the same rows", async () => {
    const { db, write, vector } = await corpus(['u'], 40);
    const { db: recorded, log } = recording(db);
    const snapshot = snapshots(recorded, 10_000);
    await snapshot.warm('u');
    // The revision check that tells a held snapshot's refresh what to load, after the build's own.
    const built = log.length;
    const heads = () => log.slice(built).filter((s) => /SELECT max\(rev\) FROM memory_turns/.test(s)).length;
    const queryVector = vector();
    const vectorKeys = async (query: SearchQuery) => keys(await ranked(snapshot, { ...query, vector: { model: MODEL, values: queryVector } }, ['turns', 'vector']));
    const first: SearchQuery = { userId: 'u', text: 'painting lake', limit: 200, filters: {}, search: {} };
    await Promise.all([ranked(snapshot, first, ['turns', 'fulltext']), ranked(snapshot, first, ['interactions', 'fulltext'])]);
    expect(heads()).toBe(1);

    // Written between the search's full-text lists and its vector lists: not in them, and not read for them.
    await write('u', 40, 60);
    const before = await vectorKeys(first);
    expect(heads()).toBe(1);
    expect(before).toHaveLength(40);
    // The next search sees the new rows.
    const next = await vectorKeys({ ...first, search: {} });
    expect(heads()).toBe(2);
    expect(next).toHaveLength(60);

    // A snapshot dropped meanwhile (a forget evicts it) is not searched: the search's later lists rank in SQL.
    snapshot.evict('u');
    const nearest = log.filter((s) => /memory_nearest/.test(s)).length;
    expect(await vectorKeys(first)).toHaveLength(60);
    expect(log.filter((s) => /memory_nearest/.test(s)).length).toBe(nearest + 1);
    await snapshot.close();
    await db.close();
  }, 60_000);

  it('leave a user larger than their rows to SQL, and keep the most recently searched users', async () => {
    const { db } = await corpus(['big', 'a', 'b'], 40);
    const { db: recorded, log } = recording(db);
    // 40 turns and 10 windows a user: at most 80 rows counted before loading, 50 held.
    const snapshot = snapshots(recorded, 90);
    const search = (userId: string) => snapshot.turns({ userId, text: 'painting', limit: 5, filters: {} }, 'fulltext');
    const count = (pattern: RegExp) => log.filter((s) => pattern.test(s)).length;
    expect(await snapshot.warm('a')).toBe(true);
    expect(await search('a')).toHaveLength(5);
    expect(count(TURN_BM25)).toBe(0);
    expect(count(LOAD)).toBe(2);
    expect(await snapshot.warm('b')).toBe(true);
    expect(count(LOAD)).toBe(4);
    await search('b');
    expect(count(LOAD)).toBe(4);
    expect(snapshot.held('a')).toBe(0); // evicted when b came in (90 rows at most)
    expect(await search('a')).toHaveLength(5); // in SQL, while a is loaded again
    expect(count(TURN_BM25)).toBe(1);
    await snapshot.warm('a');
    expect(count(LOAD)).toBe(6);

    const tooBig = snapshots(recorded, 60);
    expect(await tooBig.warm('big')).toBe(false);
    expect(await tooBig.turns({ userId: 'big', text: 'painting', limit: 5, filters: {} }, 'fulltext')).toHaveLength(5);
    expect(count(TURN_BM25)).toBe(2); // the SQL BM25
    await tooBig.close();
    expect(count(LOAD)).toBe(6);
    await db.close();
  }, 60_000);

  it('work over rows written before migration 11, which gives them revisions, lengths and statistics', async () => {
    const { db, sql, vector } = await corpus(['u', 'other'], 40, false);
    // 11 and every later migration (later ones, e.g. 13's api_keys, have nothing to do with search).
    expect(await migrate(db)).toEqual(MIGRATIONS.filter((m) => m.version >= 11 && !WRITTEN_COLUMNS.includes(m)).map((m) => m.version));
    expect(await db.query(`SELECT user_id, docs::int, total_len::int FROM interaction_stats ORDER BY 1`)).toEqual(
      await db.query(`SELECT user_id, count(*)::int AS docs, sum(tsvector_tokens(tsv))::int AS total_len FROM interactions GROUP BY 1 ORDER BY 1`),
    );
    const snapshot = snapshots(db, 10_000);
    await snapshot.warm('u');
    for (const text of QUERIES) {
      const query: SearchQuery = { userId: 'u', text, vector: { model: MODEL, values: vector() }, limit: 15, filters: {} };
      for (const list of LISTS) expect(keys(await ranked(snapshot, query, list)), `${list.join(' ')} "${text}"`).toEqual(keys(await ranked(sql, query, list)));
    }
    await db.close();
  }, 60_000);

  it("load the vectors' codes written with them, and a row written without codes from its vector, to the same ranking", async () => {
    const { db, sql, vector } = await corpus(['u'], 120);
    // The codes are vectorCodes' of the vectors stored: a load of either gives the same snapshot.
    const [turn] = await db.query<{ vector: string; codes: Uint8Array }>(`SELECT vector::text AS vector, vector_codes AS codes FROM memory_turns WHERE user_id = 'u' AND seq = 1`);
    expect(Buffer.from(turn!.codes)).toEqual(vectorCodes([JSON.parse(turn!.vector) as number[]]));
    expect(await db.query(`SELECT count(*)::int AS n FROM interactions WHERE content_codes IS NULL OR summary_codes IS NULL`)).toEqual([{ n: 0 }]);
    // Few candidates for the exact re-rank (4 of 30 windows): the codes decide which.
    const queries = QUERIES.map((text): SearchQuery => ({ userId: 'u', text, vector: { model: MODEL, values: vector() }, limit: 3, filters: {} }));
    const rankings = async () => {
      const snapshot = snapshots(db, 10_000);
      expect(await snapshot.warm('u')).toBe(true);
      const lists = [];
      for (const query of queries) for (const list of LISTS) lists.push(keys(await ranked(snapshot, query, list)));
      return lists;
    };
    const withCodes = await rankings();
    // As rows written before migration 27: half of them without codes.
    await db.exec(`UPDATE memory_turns SET vector_codes = NULL WHERE seq % 2 = 0; UPDATE interactions SET content_codes = NULL, summary_codes = NULL WHERE from_seq % 8 = 1`);
    expect(await rankings()).toEqual(withCodes);
    let k = 0;
    for (const query of queries) for (const list of LISTS) expect(withCodes[k++]).toEqual(keys(await ranked(sql, query, list)));
    await db.close();
  }, 60_000);

  it('load a user of several chunks, each read while the one before is added, to the ranking the SQL gives', async () => {
    const { db, sql, vector } = await corpus(['u'], 2_600);
    const { db: recorded, log } = recording(db);
    const snapshot = snapshots(recorded, 10_000);
    expect(await snapshot.warm('u')).toBe(true);
    expect(snapshot.held('u')).toBe(2_600 + 650);
    // Three chunks of turns (1,000, 1,000, 600) and one of windows; none read twice.
    const loads = log.filter((s) => LOAD.test(s));
    expect(loads).toHaveLength(4);
    expect(new Set(loads).size).toBe(4);
    for (const text of QUERIES.slice(0, 3)) {
      const query: SearchQuery = { userId: 'u', text, vector: { model: MODEL, values: vector() }, limit: 50, filters: {} };
      for (const list of LISTS) expect(keys(await ranked(snapshot, query, list)), `${list.join(' ')} "${text}"`).toEqual(keys(await ranked(sql, query, list)));
    }
    await db.close();
  }, 120_000);

  it("read lexemes and their frequencies from a tsvector's binary form, as PostgreSQL's binary COPY writes it", async () => {
    const db = await openPglite(undefined);
    // Lexemes with a quote, a backslash and non-ASCII letters, without positions, and with weights; then a NULL.
    const bytes = await db.copyBinary!(
      `SELECT array_to_tsvector(ARRAY['o''neil', 'back\\slash', 'café', '東京']) || to_tsvector('simple', 'lake lake lake') || setweight(to_tsvector('simple', 'heavy heavy'), 'A') AS tsv, 7 AS n
       UNION ALL SELECT NULL, 8`,
    );
    const rows = new CopyRows(bytes);
    expect(rows.count()).toBe(2);
    expect(rows.next()).toBe(true);
    const terms: [string, number][] = [];
    forEachLexeme(rows.binary(0)!, (bytes, start, end, tf) => terms.push([bytes.toString('utf8', start, end), tf]));
    expect(rows.int4(1)).toBe(7);
    expect(rows.next()).toBe(true);
    expect(rows.binary(0)).toBeNull();
    expect(rows.int4(1)).toBe(8);
    expect(rows.next()).toBe(false);
    expect(terms.sort(([a], [b]) => (a < b ? -1 : 1))).toEqual(
      [["o'neil", 1], ['back\\slash', 1], ['café', 1], ['東京', 1], ['lake', 3], ['heavy', 2]].sort(([a], [b]) => (a! < b! ? -1 : 1)),
    );
    await db.close();
  });

  it('are refused for a PostgreSQL server, where revisions need not commit in order', async () => {
    const db = { kind: 'postgres' } as unknown as Db;
    expect(() => snapshots(db, 100)).toThrow(/need PGlite/);
  });

  it('are the search index composition chooses for PGlite, unless SEARCH_SNAPSHOT_ROWS is 0', async () => {
    for (const [rows, index] of [
      ['100000', SnapshotSearchIndex],
      ['0', PostgresSearchIndex],
    ] as const) {
      const runtime = await createRuntime(loadSettings({ MEMORY_DATA_DIR: 'memory://', SEARCH_SNAPSHOT_ROWS: rows }));
      try {
        expect(runtime.search, `SEARCH_SNAPSHOT_ROWS=${rows}`).toBeInstanceOf(index);
      } finally {
        await runtime.close();
      }
    }
  }, 60_000);
});
