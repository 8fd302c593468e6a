import { describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosProjectionQueue } from '../../shared/adapters/cosmos/projection-queue.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { PostgresForgetStore } from '../../shared/adapters/postgres/forget.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresProjectionQueue } from '../../shared/adapters/postgres/projection-queue.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeProjectionQueueContract } from './projection-queue-contract.js';

describeProjectionQueueContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { queue: new PostgresProjectionQueue(db), close: () => db.close() };
});

const openFakeDatabase = useCosmosFake();

describeProjectionQueueContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { queue: new CosmosProjectionQueue(database.container(COSMOS_CONTAINERS.projectionQueue.name)), close: async () => database.client.dispose() };
});

describe('projection queue and forget (PostgreSQL)', () => {
  it("a forget purges the scope's queued sessions and counts them in its scan; under its tombstone nothing of the scope is queued", async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const queue = new PostgresProjectionQueue(db);
    const forgets = new PostgresForgetStore(db);
    const now = new Date('2026-03-01T10:00:00Z');
    try {
      await queue.enqueue([{ userId: 'gone', sessionId: 's1' }, { userId: 'gone', sessionId: 's2' }, { userId: 'kept', sessionId: 's1' }], now);
      expect((await forgets.scan({ userId: 'gone', sessionId: 's1' })).projection_queue).toBe(1);
      await forgets.markForgetting({ userId: 'gone', sessionId: 's1' }, 'forget', now);
      expect(await queue.enqueue([{ userId: 'gone', sessionId: 's1' }], now)).toEqual([]);
      await forgets.purge({ userId: 'gone', sessionId: 's1' });
      // A change-feed batch delivered after the purge does not queue the forgotten session again.
      expect(await queue.enqueue([{ userId: 'gone', sessionId: 's1' }], now)).toEqual([]);
      expect((await forgets.scan({ userId: 'gone', sessionId: 's1' })).projection_queue).toBe(0);
      await forgets.clearForgetting({ userId: 'gone', sessionId: 's1' }, 'forget');
      await forgets.purge({ userId: 'gone' });
      expect(await queue.size()).toBe(1);
    } finally {
      await db.close();
    }
  }, 60_000);
});
