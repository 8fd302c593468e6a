import { afterEach, describe, expect, it } from 'vitest';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import type { IndexedTurn } from '../../shared/application/search-ports.js';

const MODEL = 'test-model';

function turn(userId: string, sessionId: string, seq: number, text: string): IndexedTurn {
  return {
    userId,
    sessionId,
    seq,
    turnId: `${userId}/${sessionId}/${seq}`,
    speaker: 'user',
    text,
    matchText: text,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, seq)).toISOString(),
    embeddingModel: MODEL,
    vector: [1, seq % 3, 0.5],
  };
}

/** A PGlite store whose turn-index transactions are counted. */
async function openCounted(): Promise<{ db: Db; search: PostgresSearchIndex; transactions: () => number }> {
  const db = await openPglite(undefined);
  await migrate(db);
  let transactions = 0;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn) => {
    transactions += 1;
    return transaction(fn);
  }) as typeof db.transaction;
  return { db, search: new PostgresSearchIndex(db), transactions: () => transactions };
}

const stats = (db: Db, userId: string) => db.query<{ docs: number }>('SELECT docs FROM memory_turn_stats WHERE user_id = $1', [userId]).then((r) => r[0]?.docs ?? 0);
const postings = (db: Db, userId: string) => db.query<{ n: number }>('SELECT count(*)::int AS n FROM memory_turn_terms WHERE user_id = $1', [userId]).then((r) => r[0]!.n);
const turnsOf = (db: Db, userId: string) =>
  db.query<{ k: string }>('SELECT session_id || \':\' || seq AS k FROM memory_turns WHERE user_id = $1 ORDER BY session_id, seq', [userId]).then((r) => r.map((x) => x.k));

describe('PostgreSQL turn index on PGlite: calls arriving together share one transaction', () => {
  let db: Db | undefined;
  afterEach(async () => {
    await db?.close();
    db = undefined;
  });

  it('given four concurrent calls over two users, then one transaction writes them, with each user\'s rows, postings and statistics', async () => {
    const counted = await openCounted();
    db = counted.db;
    await Promise.all([
      counted.search.indexTurns([turn('a', 's1', 1, 'user: alpha bravo'), turn('a', 's1', 2, 'user: charlie')]),
      counted.search.indexTurns([turn('b', 's1', 1, 'user: delta echo foxtrot')]),
      counted.search.indexTurns([turn('a', 's2', 1, 'user: golf')]),
      counted.search.indexTurns([turn('b', 's2', 1, 'user: hotel')]),
    ]);
    expect(counted.transactions()).toBe(1);
    expect(await turnsOf(db, 'a')).toEqual(['s1:1', 's1:2', 's2:1']);
    expect(await turnsOf(db, 'b')).toEqual(['s1:1', 's2:1']);
    expect([await stats(db, 'a'), await stats(db, 'b')]).toEqual([3, 2]);
    // 'user' and each word: a posting per lexeme and turn.
    expect([await postings(db, 'a'), await postings(db, 'b')]).toEqual([3 + 2 + 2, 4 + 2]);
  });

  it('given the same turn in two concurrent calls, then the group is refused and each call is written alone: the turn once', async () => {
    const counted = await openCounted();
    db = counted.db;
    await Promise.all([
      counted.search.indexTurns([turn('a', 's', 1, 'user: alpha'), turn('a', 's', 2, 'user: bravo')]),
      counted.search.indexTurns([turn('a', 's', 2, 'user: bravo')]),
    ]);
    expect(counted.transactions()).toBe(1 + 2); // the refused group, then each call alone
    expect(await turnsOf(db, 'a')).toEqual(['s:1', 's:2']);
    expect(await stats(db, 'a')).toBe(2);
    expect(await postings(db, 'a')).toBe(4);
  });

  it('given a call the database refuses (its session is being forgotten), then only that call fails and the others are written', async () => {
    const counted = await openCounted();
    db = counted.db;
    await db.query(`INSERT INTO forget_tombstones (user_id, session_id, operation_id, requested_at) VALUES ('a', 'gone', 'op', now())`);
    const results = await Promise.allSettled([
      counted.search.indexTurns([turn('a', 's', 1, 'user: alpha')]),
      counted.search.indexTurns([turn('a', 'gone', 1, 'user: bravo')]),
      counted.search.indexTurns([turn('b', 's', 1, 'user: charlie')]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await turnsOf(db, 'a')).toEqual(['s:1']);
    expect(await turnsOf(db, 'b')).toEqual(['s:1']);
    expect([await stats(db, 'a'), await stats(db, 'b')]).toEqual([1, 1]);
  });

  it('given calls one after another, then each has its own transaction, as before', async () => {
    const counted = await openCounted();
    db = counted.db;
    for (let seq = 1; seq <= 3; seq++) await counted.search.indexTurns([turn('a', 's', seq, `user: word${seq}`)]);
    expect(counted.transactions()).toBe(3);
    expect(await stats(db, 'a')).toBe(3);
  });
});
