import { describe, expect, it } from 'vitest';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSearchIndex } from '../../shared/adapters/postgres/search.js';
import { SnapshotSearchIndex } from '../../shared/adapters/postgres/search-snapshot.js';
import type { IndexedTurn, SearchQuery, TurnHit } from '../../shared/application/search-ports.js';
import { rng } from '../support/random.js';

// The memory budget's soft mark drops search snapshots by their size (SnapshotSearchIndex.shed): the largest go first,
// and a user whose snapshot was dropped is still answered (in SQL) and gets it back on a later build.

const MODEL = 'test-model';
const WORDS = ['paint', 'lake', 'sunset', 'dog', 'hike', 'camp', 'guitar', 'music', 'school', 'career', 'family', 'beach', 'race'];

async function store(turnsByUser: Record<string, number>) {
  const db = await openPglite(undefined);
  await migrate(db);
  const random = rng(7);
  const sql = new PostgresSearchIndex(db);
  for (const [userId, count] of Object.entries(turnsByUser)) {
    const turns = Array.from({ length: count }, (_, i): IndexedTurn => {
      const text = Array.from({ length: 6 + (i % 9) }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
      return { userId, sessionId: `s${i % 3}`, seq: i + 1, turnId: `t${i}`, speaker: 'user', text, matchText: text, timestamp: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(), embeddingModel: MODEL, vector: Array.from({ length: 8 }, () => random() - 0.5) };
    });
    await sql.indexTurns(turns);
  }
  return { db, sql, snapshots: new SnapshotSearchIndex(db, sql, { maxRows: 10_000 }) };
}

const keys = (hits: TurnHit[]) => hits.map((h) => `${h.sessionId}#${h.seq}`);

describe('search snapshots shed by size (memory budget)', () => {
  it('drop the largest first, only as many as the bytes asked for, and answer the next search in SQL, then hold it again', async () => {
    const { db, sql, snapshots } = await store({ big: 300, mid: 120, small: 40 });
    for (const user of ['big', 'mid', 'small']) expect(await snapshots.warm(user)).toBe(true);
    expect([snapshots.held('big'), snapshots.held('mid'), snapshots.held('small')]).toEqual([300, 120, 40]);

    const freed = snapshots.shed(1);
    expect(freed).toBeGreaterThan(0);
    expect([snapshots.held('big'), snapshots.held('mid'), snapshots.held('small')]).toEqual([0, 120, 40]);

    // Enough bytes for two more: the rest, largest first.
    expect(snapshots.shed(Number.MAX_SAFE_INTEGER)).toBeGreaterThan(0);
    expect([snapshots.held('mid'), snapshots.held('small')]).toEqual([0, 0]);
    expect(snapshots.shed(1)).toBe(0); // nothing left to drop

    // A search after the shed gives the answer the SQL gives, and the snapshot comes back.
    const query: SearchQuery = { userId: 'big', text: 'guitar music lake', limit: 10, filters: {} };
    expect(keys(await snapshots.turns(query, 'fulltext'))).toEqual(keys(await sql.turns(query, 'fulltext')));
    expect(await snapshots.warm('big')).toBe(true);
    expect(snapshots.held('big')).toBe(300);
    expect(keys(await snapshots.turns(query, 'fulltext'))).toEqual(keys(await sql.turns(query, 'fulltext')));
    await snapshots.close();
    await db.close();
  }, 60_000);

  it('free more, the larger the snapshot', async () => {
    const { db, snapshots } = await store({ big: 300, small: 40 });
    await snapshots.warm('small');
    const small = snapshots.shed(1);
    await snapshots.warm('big');
    const arrays = snapshots.arrayBytes('big');
    const big = snapshots.shed(1);
    expect(big).toBeGreaterThan(small);
    expect(big).toBeGreaterThan(arrays); // its typed arrays and its heap
    expect(snapshots.held('big')).toBe(0);
    await snapshots.close();
    await db.close();
  }, 60_000);
});
