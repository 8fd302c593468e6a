import { afterEach, describe, expect, it } from 'vitest';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { inBackground, isBackground } from '../../shared/adapters/postgres/priority-gate.js';
import { postgresStores, type PostgresStores } from '../../shared/adapters/postgres/stores.js';
import { turnDraft } from '../support/builders.js';

const at = new Date('2026-01-05T10:00:00Z');

/** PGlite stores whose statements are counted (append statements only), each with the priority it was sent with. */
async function openCounted() {
  const db = await openPglite(undefined);
  await migrate(db);
  const priorities: ('request' | 'background')[] = [];
  const query = db.query.bind(db);
  db.query = ((sql: string, params?: unknown[]) => {
    if (sql.includes('append_events(')) priorities.push(isBackground() ? 'background' : 'request');
    return query(sql, params);
  }) as typeof db.query;
  return { stores: postgresStores(db), statements: () => priorities.length, priorities: () => priorities };
}

const seqsOf = async (stores: PostgresStores, sessionId: string) => (await stores.events.read({ userId: 'u', sessionId }, 0)).map((e) => e.metadata.seq);

describe('PostgreSQL event store on PGlite: appends arriving together are written by one statement', () => {
  let stores: PostgresStores | undefined;
  afterEach(async () => {
    await stores?.close();
    stores = undefined;
  });

  it('given 30 concurrent appends over 3 sessions, then one statement writes them, each session gapless in call order', async () => {
    const counted = await openCounted();
    stores = counted.stores;
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => stores!.events.append({ userId: 'u', sessionId: `s${i % 3}` }, [turnDraft(`t${i}`)], at)),
    );
    expect(counted.statements()).toBe(1);
    // Call i is the (floor(i/3)+1)-th append of its session.
    expect(outcomes.map((o) => o[0]!.seq)).toEqual(Array.from({ length: 30 }, (_, i) => Math.floor(i / 3) + 1));
    expect(outcomes.every((o) => o[0]!.duplicate === false)).toBe(true);
    for (const s of ['s0', 's1', 's2']) expect(await seqsOf(stores, s)).toEqual(Array.from({ length: 10 }, (_, k) => k + 1));
    const events = await stores.events.read({ userId: 'u', sessionId: 's1' }, 0);
    expect(events.map((e) => (e.type === 'TurnAppended' ? e.data.turnId : e.type))).toEqual(Array.from({ length: 10 }, (_, k) => `t${3 * k + 1}`));
    expect(events.map((e) => e.metadata.seq)).toEqual(events.map((_, k) => k + 1));
  });

  it("given a group started by the projection's append, then a client's append in it is written as a request, and the projection's alone in the background", async () => {
    const counted = await openCounted();
    stores = counted.stores;
    const projected = { userId: 'u', sessionId: 'projected' };
    // The projection records a decision (background work) and a client appends in the same event-loop turn: one group.
    await Promise.all([inBackground(() => stores!.events.append(projected, [turnDraft('p1')], at)), stores.events.append({ userId: 'u', sessionId: 'client' }, [turnDraft('c1')], at)]);
    await inBackground(() => Promise.all([stores!.events.append(projected, [turnDraft('p2')], at), stores!.events.append(projected, [turnDraft('p3')], at)]));
    // Written in the background, the client's append would wait on PGlite for every background statement queued before it.
    expect(counted.priorities()).toEqual(['request', 'background']);
    expect(await seqsOf(stores, 'projected')).toEqual([1, 2, 3]);
  });

  it('given the same turnId twice in one group, then the second gets the first one\'s seq back and nothing is written twice', async () => {
    const counted = await openCounted();
    stores = counted.stores;
    const key = { userId: 'u', sessionId: 'dup' };
    const [first, other, retry] = await Promise.all([
      stores.events.append(key, [turnDraft('a'), turnDraft('b')], at),
      stores.events.append(key, [turnDraft('c')], at),
      stores.events.append(key, [turnDraft('b'), turnDraft('d')], at),
    ]);
    expect(counted.statements()).toBe(1);
    expect(first!.map((o) => [o.turnId, o.seq, o.duplicate])).toEqual([
      ['a', 1, false],
      ['b', 2, false],
    ]);
    expect(other!.map((o) => [o.turnId, o.seq, o.duplicate])).toEqual([['c', 3, false]]);
    expect(retry!.map((o) => [o.turnId, o.seq, o.duplicate])).toEqual([
      ['b', 2, true],
      ['d', 4, false],
    ]);
    expect(await seqsOf(stores, 'dup')).toEqual([1, 2, 3, 4]);
    expect(await stores.events.lastSeq(key)).toBe(4);
  });

  it('given one append of a group the database refuses, then only its caller fails, nothing of it is written, and the others are appended', async () => {
    const counted = await openCounted();
    stores = counted.stores;
    const results = await Promise.allSettled([
      stores.events.append({ userId: 'u', sessionId: 'ok1' }, [turnDraft('x1')], at),
      // PostgreSQL's jsonb cannot hold U+0000: this append fails in the database, inside the group's statement.
      stores.events.append({ userId: 'u', sessionId: 'bad' }, [turnDraft('y1'), turnDraft('y2', 'nul \u0000 byte')], at),
      stores.events.append({ userId: 'u', sessionId: 'ok1' }, [turnDraft('x2')], at),
      stores.events.append({ userId: 'u', sessionId: 'ok2' }, [turnDraft('z1')], at),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(counted.statements()).toBe(1 + 4); // the refused group, then each append alone
    expect(await seqsOf(stores, 'bad')).toEqual([]);
    expect(await stores.events.lastSeq({ userId: 'u', sessionId: 'bad' })).toBe(0);
    expect(await seqsOf(stores, 'ok1')).toEqual([1, 2]);
    expect(await seqsOf(stores, 'ok2')).toEqual([1]);
    // The feed delivers exactly what was written.
    expect((await stores.events.readFeed(null, 100)).events.map((e) => `${e.metadata.sessionId}:${e.metadata.seq}`)).toEqual(['ok1:1', 'ok1:2', 'ok2:1']);
  });

  it('given appends one after another, then each is written alone, as before', async () => {
    const counted = await openCounted();
    stores = counted.stores;
    for (let i = 1; i <= 3; i++) expect((await stores.events.append({ userId: 'u', sessionId: 'seq' }, [turnDraft(`t${i}`)], at))[0]!.seq).toBe(i);
    expect(counted.statements()).toBe(3);
  });
});
