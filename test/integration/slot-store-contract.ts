import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SlotStore } from '../../shared/application/slot-ports.js';
import { GLOBAL_SLOT_PARTITION, type SlotEvent } from '../../shared/contracts/slots.js';
import { decideDelete, decideWrite, slotSortKey, type SlotKey } from '../../shared/domain/slots.js';

let counter = 0;
const freshUser = () => `slot-user-${++counter}-${Date.now()}`;
const NOW = new Date('2026-01-05T12:00:00.000Z');

const key = (partition: string, name: string, scope: SlotKey['scope'] = 'user', owner: string | null = null): SlotKey => ({ partition, scope, owner, name });
const written = (k: SlotKey, head: SlotEvent | null, value: unknown) => decideWrite(head, k, { value: value as never }, {}, NOW);

/** The behaviour every slot store adapter shares; run against PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeSlotStoreContract(name: string, open: () => Promise<{ store: SlotStore; close: () => Promise<void> }>) {
  describe(`slot store contract: ${name}`, () => {
    let store: SlotStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    }, 60_000);
    afterAll(() => close?.());

    it('appends a stream and reads its latest event back exactly', async () => {
      const k = key(freshUser(), 'user_profile');
      expect(await store.head(k)).toBeNull();
      const v1 = written(k, null, { name: 'Ada', tags: ['a', 1, null, true], nested: { deep: [{ x: 1.5 }] } });
      expect(await store.append(v1)).toBe(true);
      expect(await store.head(k)).toEqual(v1);
      const v2 = decideWrite(v1, k, { value: 'plain', ttlClass: 'working', agentId: 'planner' }, { ifMatch: 1 }, NOW);
      expect(v2.data.version).toBe(2);
      expect(await store.append(v2)).toBe(true);
      expect(await store.head(k)).toEqual(v2);
      const gone = decideDelete(v2, k, {}, NOW, { writeId: 'w-3' });
      expect(await store.append(gone)).toBe(true);
      expect(await store.head(k)).toEqual(gone);
    });

    it('reads the event at a version of the stream, whatever its head', async () => {
      const k = key(freshUser(), 'versions');
      const v1 = decideWrite(null, k, { value: 'first', writeId: 'w-1' }, {}, NOW);
      const v2 = decideWrite(v1, k, { value: 'second', writeId: 'w-2' }, {}, NOW);
      expect(await store.at(k, 1)).toBeNull();
      for (const event of [v1, v2]) expect(await store.append(event)).toBe(true);
      expect(await store.at(k, 1)).toEqual(v1);
      expect(await store.at(k, 2)).toEqual(v2);
      expect(await store.at(k, 3)).toBeNull();
      expect(await store.at(key(freshUser(), 'versions'), 1)).toBeNull();
    });

    it('is the optimistic append: a version already in the stream is refused and changes nothing', async () => {
      const k = key(freshUser(), 'task_plan');
      const first = written(k, null, 'first');
      const rival = written(k, null, 'rival');
      const results = await Promise.all([store.append(first), store.append(rival)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = results[0] ? first : rival;
      expect(await store.head(k)).toEqual(winner);
      expect(await store.append(written(k, null, 'late'))).toBe(false);
      expect(await store.head(k)).toEqual(winner);
    });

    it('refuses a version whose predecessor is not in the stream (a forget purged it after the writer read the head)', async () => {
      const k = key(freshUser(), 'purged');
      const v1 = written(k, null, 'first');
      const v2 = decideWrite(v1, k, { value: 'second' }, { ifMatch: 1 }, NOW);
      expect(await store.append(v2)).toBe(false);
      expect(await store.head(k)).toBeNull();
      expect(await store.append(v1)).toBe(true);
      expect(await store.append(v2)).toBe(true);
      expect(await store.head(k)).toEqual(v2);
    });

    it('keeps slots apart by partition, scope, owner and name', async () => {
      const user = freshUser();
      const other = freshUser();
      const keys = [key(user, 'n'), key(user, 'n', 'private', 'a1'), key(user, 'n', 'private', 'a2'), key(user, 'n', 'session', 's1'), key(user, 'm'), key(other, 'n')];
      for (const [i, k] of keys.entries()) expect(await store.append(written(k, null, i))).toBe(true);
      for (const [i, k] of keys.entries()) expect((await store.head(k))?.data).toMatchObject({ value: i, version: 1 });
    });

    it('lists the latest event of every stream of the partitions, by sort key, in pages', async () => {
      const user = freshUser();
      const other = freshUser();
      const globalName = `g-${user}`;
      const ks = [key(user, 'b'), key(user, 'a', 'private', 'agent-1'), key(user, 'c', 'session', 's1'), key(GLOBAL_SLOT_PARTITION, globalName, 'global'), key(other, 'a')];
      for (const k of ks) await store.append(written(k, null, 'v1'));
      const b1 = (await store.head(ks[0]!))!;
      await store.append(written(ks[0]!, b1, 'v2'));
      await store.append(decideDelete((await store.head(ks[2]!))!, ks[2]!, {}, NOW));

      const all = (await store.heads([user, GLOBAL_SLOT_PARTITION], 1000)).filter((e) => e.metadata.userId === user || e.data.name === globalName);
      expect(all.map((e) => [e.data.scope, e.data.name, e.data.version, e.type])).toEqual([
        ['private', 'a', 1, 'SlotWritten'],
        ['session', 'c', 2, 'SlotDeleted'],
        ['user', 'b', 2, 'SlotWritten'],
        ['global', globalName, 1, 'SlotWritten'],
      ]);
      const mine = await store.heads([user], 2);
      expect(mine.map((e) => e.data.name)).toEqual(['a', 'c']);
      const next = await store.heads([user], 2, slotSortKey(key(user, 'c', 'session', 's1')));
      expect(next.map((e) => e.data.name)).toEqual(['b']);
      expect(await store.heads([user], 2, slotSortKey(ks[0]!))).toEqual([]);
    });
  });
}
