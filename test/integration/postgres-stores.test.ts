import { describe, expect, it } from 'vitest';
import { openPglite, type OpenPgliteOptions } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresEventStore, postgresStores } from '../../shared/adapters/postgres/stores.js';
import { eventDocument } from '../../shared/contracts/events.js';
import type { Db } from '../../shared/adapters/postgres/db.js';
import { assertOneEmbeddingModel } from '../../shared/adapters/postgres/search.js';
import { turnDraft } from '../support/builders.js';
import { describeStoreContract } from './store-contract.js';

async function openMigrated(options: OpenPgliteOptions = {}) {
  const db = await openPglite(undefined, options);
  await migrate(db);
  return postgresStores(db);
}

describeStoreContract('postgres (PGlite)', () => openMigrated());
describeStoreContract('postgres (PGlite on its own thread)', () => openMigrated({ ownThread: true }));

describe('postgres change feed', () => {
  const at = new Date('2026-01-05T10:00:00Z');

  it('delivers every event once, in commit order, across sessions', async () => {
    const stores = await openMigrated();
    await stores.events.append({ userId: 'u', sessionId: 'a' }, [turnDraft('1'), turnDraft('2')], at);
    await stores.events.append({ userId: 'u', sessionId: 'b' }, [turnDraft('1')], at);
    const first = await stores.events.readFeed(null, 2);
    const second = await stores.events.readFeed(first.cursor, 10);
    const third = await stores.events.readFeed(second.cursor, 10);
    expect([...first.events, ...second.events].map((e) => `${e.metadata.sessionId}:${e.metadata.seq}`)).toEqual(['a:1', 'a:2', 'b:1']);
    expect(third).toEqual({ events: [], cursor: second.cursor });
    await stores.close();
  }, 30_000);

  it('reads in position order where the positions gain a digit (9 → 10): small batches skip nothing', async () => {
    const stores = await openMigrated();
    const key = { userId: 'u', sessionId: 'digits' };
    await stores.events.append(key, Array.from({ length: 25 }, (_, i) => turnDraft(`t${i + 1}`)), at);
    const seqs: number[] = [];
    let cursor: string | null = null;
    for (let batch = await stores.events.readFeed(cursor, 4); batch.events.length > 0; batch = await stores.events.readFeed(cursor, 4)) {
      seqs.push(...batch.events.map((e) => e.metadata.seq));
      cursor = batch.cursor;
    }
    expect(seqs).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    await stores.close();
  }, 30_000);

  it('does not read past a transaction that is still open, so a late commit is never skipped', async () => {
    const stores = await openMigrated();
    const doc = JSON.stringify(eventDocument({ userId: 'u', sessionId: 'late' }, 0, turnDraft('x'), at));
    await stores.db.transaction(async (tx) => {
      await tx.query(`SELECT * FROM append_events('u', 'late', ARRAY['x'], ARRAY['TurnAppended'], ARRAY[$1::jsonb])`, [doc]);
      // A feed read while the writer's transaction is open sees it as in flight, whatever it can see of its rows.
      const insideView = new PostgresEventStore(tx as Db);
      expect((await insideView.readFeed(null, 10)).events).toEqual([]);
    });
    expect((await stores.events.readFeed(null, 10)).events.map((e) => e.metadata.sessionId)).toEqual(['late']);
    await stores.close();
  }, 30_000);
});

describe('embedding model guard', () => {
  it('refuses a store whose vectors come from another embedding model, naming both', async () => {
    const stores = await openMigrated();
    await stores.search.indexTurns([
      { userId: 'u', sessionId: 's', seq: 1, turnId: 't1', speaker: 'user', text: 'user: hi', matchText: 'user: hi', timestamp: '2026-01-05T10:00:00Z', embeddingModel: 'model-a', vector: [1, 0, 0] },
    ]);
    await expect(assertOneEmbeddingModel(stores.db, 'model-a')).resolves.toBeUndefined();
    await expect(assertOneEmbeddingModel(stores.db, 'model-b')).rejects.toThrow(/1 from model-a.*configured embedder is model-b/);
    await stores.close();
  }, 30_000);
});
