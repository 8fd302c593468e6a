import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosSlotStore } from '../../shared/adapters/cosmos/slots.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { PostgresForgetStore } from '../../shared/adapters/postgres/forget.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSlotStore } from '../../shared/adapters/postgres/slots.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import type { SlotStore } from '../../shared/application/slot-ports.js';
import { putSlot } from '../../shared/application/slots.js';
import { GLOBAL_SLOT_PARTITION } from '../../shared/contracts/slots.js';
import { LOCAL_PRINCIPAL } from '../../shared/platform/auth.js';
import { useCosmosFake } from '../support/cosmos-fake.js';

// Forget removes slots: a user's forget every slot stream of the user (never the global ones), a session's forget the
// session's slots only; the residual scan counts them. Run on PostgreSQL (PGlite) and Cosmos DB (wire fake).

const at = new Date('2026-01-05T10:00:00Z');
let counter = 0;
const freshUser = () => `slot-forget-${++counter}-${Date.now()}`;
const slotRows = (counts: Record<string, number>) => counts.slot_events ?? counts.slots ?? 0;

function describeSlotForget(name: string, open: () => Promise<{ slots: SlotStore; forgets: ForgetStore; close: () => Promise<void> }>) {
  describe(`forget removes slots: ${name}`, () => {
    let b: { slots: SlotStore; forgets: ForgetStore; close: () => Promise<void> };
    beforeAll(async () => {
      b = await open();
    }, 60_000);
    afterAll(() => b?.close());

    const deps = () => ({ slots: b.slots, forgets: b.forgets, clock: { now: () => at }, ids: { newId: randomUUID } });
    async function seed(userId: string) {
      const put = (name: string, scope: 'user' | 'private' | 'session' | 'global', extra: { agentId?: string; sessionId?: string } = {}) =>
        putSlot(deps(), LOCAL_PRINCIPAL, userId, name, { scope, ...extra }, { value: `${userId} ${name}` }, {});
      await put('profile', 'user');
      await put('profile', 'user'); // a second event of the stream
      await put('plan', 'private', { agentId: 'planner' });
      await put('scratch', 'session', { sessionId: 's1' });
      await put('scratch', 'session', { sessionId: 's2' });
      await put(`global-${userId}`, 'global');
    }

    it("a user's forget removes all the user's slot events, counted by the scan; global slots and other users stay", async () => {
      const user = freshUser();
      const other = freshUser();
      await seed(user);
      await seed(other);
      expect(slotRows(await b.forgets.scan({ userId: user }))).toBe(5);
      await b.forgets.markForgetting({ userId: user }, 'forget', at);
      await expect(putSlot(deps(), LOCAL_PRINCIPAL, user, 'late', { scope: 'user' }, { value: 1 }, {})).rejects.toMatchObject({ code: 'forget_in_progress' });
      expect(slotRows(await b.forgets.purge({ userId: user }))).toBe(5);
      expect(slotRows(await b.forgets.scan({ userId: user }))).toBe(0);
      expect(slotRows(await b.forgets.scan({ userId: other }))).toBe(5);
      expect(await b.slots.head({ partition: GLOBAL_SLOT_PARTITION, scope: 'global', owner: null, name: `global-${user}` })).not.toBeNull();
      await b.forgets.clearForgetting({ userId: user }, 'forget');
    });

    it("a session's forget removes that session's slots only", async () => {
      const user = freshUser();
      await seed(user);
      expect(slotRows(await b.forgets.scan({ userId: user, sessionId: 's1' }))).toBe(1);
      await b.forgets.markForgetting({ userId: user, sessionId: 's1' }, 'forget', at);
      await expect(putSlot(deps(), LOCAL_PRINCIPAL, user, 'scratch', { scope: 'session', sessionId: 's1' }, { value: 1 }, {})).rejects.toMatchObject({ code: 'forget_in_progress' });
      expect(slotRows(await b.forgets.purge({ userId: user, sessionId: 's1' }))).toBe(1);
      expect(slotRows(await b.forgets.scan({ userId: user, sessionId: 's1' }))).toBe(0);
      expect(await b.slots.head({ partition: user, scope: 'session', owner: 's1', name: 'scratch' })).toBeNull();
      expect(await b.slots.head({ partition: user, scope: 'session', owner: 's2', name: 'scratch' })).not.toBeNull();
      expect(await b.slots.head({ partition: user, scope: 'user', owner: null, name: 'profile' })).toMatchObject({ data: { version: 2 } });
    });
  });
}

describeSlotForget('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { slots: new PostgresSlotStore(db), forgets: new PostgresForgetStore(db), close: () => db.close() };
});

const cosmos = useCosmosFake();
describeSlotForget('cosmos (wire fake)', async () => {
  const database = await cosmos();
  return { slots: new CosmosSlotStore(database.container(COSMOS_CONTAINERS.slots.name)), forgets: new CosmosForgetStore(database), close: async () => database.client.dispose() };
});
