import type { Container, CreateOperationInput, OperationInput, OperationResponse, SqlQuerySpec } from '@azure/cosmos';
import { describe, expect, it } from 'vitest';
import type { EventDraft } from '../../shared/application/ports.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosEventStore, cosmosStores, eventBatchOperations } from '../../shared/adapters/cosmos/stores.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { eventDocument, eventId, SCHEMA_VERSION } from '../../shared/contracts/events.js';
import { newSession } from '../../shared/domain/session.js';
import { turnDraft } from '../support/builders.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeStoreContract } from './store-contract.js';

const at = new Date('2026-01-05T10:00:00Z');
const DIMENSIONS = 3;
let counter = 0;
const freshKey = () => ({ userId: `cosmos-user-${++counter}-${Date.now()}`, sessionId: 'sess.1' });

const openFakeDatabase = useCosmosFake(DIMENSIONS);

// The contract suite runs with one-by-one writes (the fake's batches are not transactional) and, because a
// conflicting append always fails at its first operation (seqs are gapless), also through the batch API.
describeStoreContract('cosmos (wire fake, one document at a time)', async () =>
  cosmosStores(await openFakeDatabase(), { atomicBatches: false, ownsClient: true }),
);
describeStoreContract('cosmos (wire fake, batch API)', async () => cosmosStores(await openFakeDatabase(), { atomicBatches: true, ownsClient: true }));

// --- Cosmos-specific behaviour ---

type EventDoc = ReturnType<typeof eventDocument>;

/**
 * Just enough of an events container for the atomic path: the two queries an append sends and a transactional
 * `items.batch` (all or nothing, 409 on the conflicting operation and 424 on the others, as the service answers).
 */
function scriptedContainer() {
  const docs: EventDoc[] = [];
  const batches: { operations: OperationInput[]; partitionKey: unknown }[] = [];
  const hooks: { beforeBatch?: () => void; failWith?: number } = {};
  const param = (spec: SqlQuerySpec, name: string) => spec.parameters?.find((p) => p.name === name)?.value;
  const container = {
    items: {
      query: (spec: SqlQuerySpec) => ({
        fetchAll: async () => {
          const mine = docs.filter((d) => d.userId === param(spec, '@userId') && d.sessionId === param(spec, '@sessionId'));
          if (spec.query.includes('ARRAY_CONTAINS')) {
            const keys = param(spec, '@keys') as string[];
            return { resources: mine.filter((d) => keys.includes(d.eventKey)).map((d) => ({ seq: d.seq, eventKey: d.eventKey })) };
          }
          if (spec.query.startsWith('SELECT TOP 1 c.seq')) return { resources: mine.length ? [{ seq: Math.max(...mine.map((d) => d.seq)) }] : [] };
          throw new Error(`unexpected query: ${spec.query}`);
        },
      }),
      batch: async (operations: OperationInput[], partitionKey: unknown) => {
        batches.push({ operations: structuredClone(operations), partitionKey });
        const before = hooks.beforeBatch;
        hooks.beforeBatch = undefined;
        before?.();
        // A read fails when its document is missing (404), a create when its id is taken (409).
        const statusOf = (op: OperationInput) =>
          op.operationType === 'Read'
            ? docs.some((d) => d.id === op.id) ? 200 : 404
            : docs.some((d) => d.id === ((op as CreateOperationInput).resourceBody as unknown as EventDoc).id) ? 409 : 201;
        const failing = hooks.failWith !== undefined ? 0 : operations.findIndex((op) => statusOf(op) >= 400);
        if (failing >= 0) {
          const status = hooks.failWith ?? statusOf(operations[failing]!);
          const result: OperationResponse[] = operations.map((_, i) => ({ statusCode: i === failing ? status : 424, requestCharge: 0 }));
          return { code: 207, headers: {}, result };
        }
        const creates = operations.filter((op) => op.operationType === 'Create');
        docs.push(...creates.map((op) => (op as CreateOperationInput).resourceBody as unknown as EventDoc));
        const result: OperationResponse[] = operations.map((op) => ({ statusCode: op.operationType === 'Read' ? 200 : 201, requestCharge: 1 }));
        return { code: 200, headers: {}, result };
      },
    },
  };
  return { container: container as unknown as Container, docs, batches, hooks };
}

describe('cosmos event store: transactional batches', () => {
  it('writes an append as one batch of create operations, in seq order, in the user partition', async () => {
    const { container, batches } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    const drafts: EventDraft[] = [turnDraft('a'), turnDraft('b'), { type: 'SessionEndRequested', data: { reason: 'client' } }];

    const outcomes = await store.append(key, drafts, at);

    expect(outcomes).toEqual([
      { seq: 1, turnId: 'a', duplicate: false },
      { seq: 2, turnId: 'b', duplicate: false },
      { seq: 3, duplicate: false },
    ]);
    expect(batches).toHaveLength(1);
    expect(batches[0]!.partitionKey).toBe(key.userId);
    expect(batches[0]!.operations).toEqual(drafts.map((d, i) => ({ operationType: 'Create', resourceBody: eventDocument(key, i + 1, d, at) })));
    expect(batches[0]!.operations.map((op) => (op as CreateOperationInput).resourceBody.id)).toEqual([1, 2, 3].map((s) => eventId(key.sessionId, s)));
  });

  it('continues after the last recorded seq and writes only turns it has not seen', async () => {
    const { container, batches } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    await store.append(key, [turnDraft('a'), turnDraft('b')], at);

    const outcomes = await store.append(key, [turnDraft('b'), turnDraft('c'), turnDraft('c')], at);

    expect(outcomes).toEqual([
      { seq: 2, turnId: 'b', duplicate: true },
      { seq: 3, turnId: 'c', duplicate: false },
      { seq: 3, turnId: 'c', duplicate: true },
    ]);
    expect(batches[1]!.operations).toEqual(eventBatchOperations([eventDocument(key, 3, turnDraft('c'), at)]));
  });

  it('writes nothing when every turn is already recorded', async () => {
    const { container, batches } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    await store.append(key, [turnDraft('a')], at);
    expect(await store.append(key, [turnDraft('a')], at)).toEqual([{ seq: 1, turnId: 'a', duplicate: true }]);
    expect(batches).toHaveLength(1);
  });

  it('on 409 re-reads and returns the seq another writer recorded for the same turnId', async () => {
    const { container, docs, batches, hooks } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    // A concurrent retry of the same request records turn a at seq 1 between our read and our batch.
    hooks.beforeBatch = () => docs.push(eventDocument(key, 1, turnDraft('a'), at));

    const outcomes = await store.append(key, [turnDraft('a'), turnDraft('b')], at);

    expect(outcomes).toEqual([
      { seq: 1, turnId: 'a', duplicate: true },
      { seq: 2, turnId: 'b', duplicate: false },
    ]);
    // The retry writes b alone, after a read of the event before it (a).
    expect(batches.map((b) => b.operations.length)).toEqual([2, 2]);
    expect(docs.map((d) => [d.seq, d.eventKey])).toEqual([[1, 'a'], [2, 'b']]);
  });

  it('on 409 from an unrelated writer moves its events to the next free seqs', async () => {
    const { container, docs, hooks } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    hooks.beforeBatch = () => docs.push(eventDocument(key, 1, turnDraft('x'), at));

    expect(await store.append(key, [turnDraft('a')], at)).toEqual([{ seq: 2, turnId: 'a', duplicate: false }]);
  });

  it('starts the stream at seq 1 when a purge removed it after the append planned its seqs', async () => {
    const { container, docs, batches, hooks } = scriptedContainer();
    const store = new CosmosEventStore(container);
    const key = freshKey();
    await store.append(key, [turnDraft('a'), turnDraft('b')], at);
    // A forget purges the stream between the append's read of the last seq and its batch.
    hooks.beforeBatch = () => docs.splice(0);

    expect(await store.append(key, [turnDraft('c')], at)).toEqual([{ seq: 1, turnId: 'c', duplicate: false }]);
    expect(batches[1]!.operations[0]).toEqual({ operationType: 'Read', id: eventId(key.sessionId, 2), partitionKey: key.userId });
    expect(docs.map((d) => [d.seq, d.eventKey])).toEqual([[1, 'c']]);
  });

  it('gives up with a conflict error after the configured attempts', async () => {
    const { container, hooks } = scriptedContainer();
    const store = new CosmosEventStore(container, { maxAppendAttempts: 2 });
    hooks.failWith = 409;
    await expect(store.append(freshKey(), [turnDraft('a')], at)).rejects.toMatchObject({ code: 'conflict' });
  });

  it('rethrows a batch failure that is not a seq conflict', async () => {
    const { container, docs, hooks } = scriptedContainer();
    const store = new CosmosEventStore(container);
    hooks.failWith = 413;
    await expect(store.append(freshKey(), [turnDraft('a')], at)).rejects.toThrow(/413/);
    expect(docs).toEqual([]);
  });

  it('refuses more events than one transactional batch can hold', async () => {
    const { container, batches } = scriptedContainer();
    const drafts = Array.from({ length: 101 }, (_, i) => turnDraft(`t${i}`));
    await expect(new CosmosEventStore(container).append(freshKey(), drafts, at)).rejects.toMatchObject({ code: 'validation_failed' });
    expect(batches).toEqual([]);
  });
});

describe('cosmos stores against the wire fake', () => {
  /**
   * The events container with a hook that runs once, just before the store's `at`-th write (create or batch), or with
   * `reads`, before its `at`-th write or point read (the one-at-a-time path reads the event before its first create).
   */
  function interceptedEvents(real: Container, beforeWrite: { at: number; run: () => Promise<unknown>; reads?: boolean }) {
    let writes = 0;
    const gate = async () => {
      if (++writes === beforeWrite.at) await beforeWrite.run();
    };
    const item = (...args: Parameters<Container['item']>) => {
      const target = real.item(...args);
      return {
        read: async () => {
          if (beforeWrite.reads) await gate();
          return target.read();
        },
      };
    };
    const items = {
      query: real.items.query.bind(real.items),
      create: async (...args: Parameters<Container['items']['create']>) => {
        await gate();
        return real.items.create(...args);
      },
      batch: async (...args: Parameters<Container['items']['batch']>) => {
        await gate();
        return real.items.batch(...args);
      },
    };
    return { items, item } as unknown as Container;
  }

  for (const atomicBatches of [false, true]) {
    describe(atomicBatches ? 'batch API' : 'one document at a time', () => {
      it('stores the shared event document shape under id <sessionId>:<padded seq> in the user partition', async () => {
        const database = await openFakeDatabase();
        const stores = cosmosStores(database, { atomicBatches, ownsClient: true });
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a')], at);
        const { resource } = await database.container(COSMOS_CONTAINERS.events.name).item(eventId(key.sessionId, 1), key.userId).read<Record<string, unknown>>();
        const withoutSystemProps = Object.fromEntries(Object.entries(resource ?? {}).filter(([k]) => !k.startsWith('_')));
        expect(withoutSystemProps).toEqual(eventDocument(key, 1, turnDraft('a'), at));
        await stores.close();
      });

      it('an append planned before a purge of the stream and written after it starts the stream at seq 1', async () => {
        const database = await openFakeDatabase();
        const events = database.container(COSMOS_CONTAINERS.events.name);
        const key = freshKey();
        const other = new CosmosEventStore(events, { atomicBatches });
        await other.append(key, [turnDraft('a'), turnDraft('b')], at);
        const purge = async () => {
          for (const seq of [1, 2]) await events.item(eventId(key.sessionId, seq), key.userId).delete();
        };
        const store = new CosmosEventStore(interceptedEvents(events, { at: 1, run: purge, reads: true }), { atomicBatches });

        expect(await store.append(key, [turnDraft('c')], at)).toEqual([{ seq: 1, turnId: 'c', duplicate: false }]);
        expect((await other.read(key, 0)).map((e) => e.metadata.seq)).toEqual([1]);
        expect(await other.sessions(key.userId)).toEqual([key]);
        database.client.dispose();
      });

      it('a retry racing the original request gets the original seq back', async () => {
        const database = await openFakeDatabase();
        const events = database.container(COSMOS_CONTAINERS.events.name);
        const key = freshKey();
        const other = new CosmosEventStore(events, { atomicBatches });
        const store = new CosmosEventStore(interceptedEvents(events, { at: 1, run: () => other.append(key, [turnDraft('a')], at) }), { atomicBatches });

        const outcomes = await store.append(key, [turnDraft('a'), turnDraft('b')], at);

        expect(outcomes).toEqual([
          { seq: 1, turnId: 'a', duplicate: true },
          { seq: 2, turnId: 'b', duplicate: false },
        ]);
        expect((await other.read(key, 0)).map((e) => e.metadata.seq)).toEqual([1, 2]);
        database.client.dispose();
      });
    });
  }

  it('one document at a time: a write interrupted midway keeps what it wrote and writes nothing twice', async () => {
    const database = await openFakeDatabase();
    const events = database.container(COSMOS_CONTAINERS.events.name);
    const key = freshKey();
    const other = new CosmosEventStore(events, { atomicBatches: false });
    // Another writer takes seq 2 after our seq 1 is written.
    const store = new CosmosEventStore(interceptedEvents(events, { at: 2, run: () => other.append(key, [turnDraft('x')], at) }), { atomicBatches: false });

    const outcomes = await store.append(key, [turnDraft('a'), { type: 'SessionEndRequested', data: { reason: 'idle' } }], at);

    expect(outcomes).toEqual([
      { seq: 1, turnId: 'a', duplicate: false },
      { seq: 3, duplicate: false },
    ]);
    const recorded = await other.read(key, 0);
    expect(recorded.map((e) => [e.metadata.seq, e.type])).toEqual([
      [1, 'TurnAppended'],
      [2, 'TurnAppended'],
      [3, 'SessionEndRequested'],
    ]);
    database.client.dispose();
  });

  it('session store: the etag is the version; a stale or vanished version is a conflict (412 / 404)', async () => {
    const database = await openFakeDatabase();
    const stores = cosmosStores(database, { ownsClient: true });
    const key = freshKey();
    const doc = newSession(key, at);
    const v1 = await stores.sessions.put(doc, null);
    const { resource } = await database.container(COSMOS_CONTAINERS.sessions.name).item(key.sessionId, key.userId).read<Record<string, unknown>>();
    expect(resource).toMatchObject({ id: key.sessionId, userId: key.userId, _etag: v1 });

    const v2 = await stores.sessions.put({ ...doc, turnCount: 1 }, v1);
    expect(v2).not.toBe(v1);
    await expect(stores.sessions.put({ ...doc, turnCount: 2 }, v1)).rejects.toMatchObject({ code: 'conflict' });
    expect((await stores.sessions.get(key))?.doc.turnCount).toBe(1);

    await database.container(COSMOS_CONTAINERS.sessions.name).item(key.sessionId, key.userId).delete();
    await expect(stores.sessions.put({ ...doc, turnCount: 3 }, v2)).rejects.toMatchObject({ code: 'conflict' });
    await stores.close();
  });

  it('interaction store: stores the window start top-level for ordering and drops it on read', async () => {
    const database = await openFakeDatabase();
    const stores = cosmosStores(database, { ownsClient: true });
    const key = freshKey();
    const doc: InteractionDocument = {
      schemaVersion: SCHEMA_VERSION,
      id: `${key.sessionId}:0000000001`,
      ...key,
      agentIds: ['advisor'],
      turnIds: ['t1', 't2'],
      seqRange: [1, 2],
      startedAt: at.toISOString(),
      endedAt: at.toISOString(),
      content: 'user: hi\nassistant: hello',
      summary: 'greeting',
      topics: ['greeting'],
      entities: [],
      embeddingModel: 'test-3',
      contentVector: [0.1, 0.2, 0.3],
      summaryVector: [0.3, 0.2, 0.1],
      createdAt: at.toISOString(),
    };
    await stores.interactions.upsert([doc]);
    const { resource } = await database.container(COSMOS_CONTAINERS.interactions.name).item(doc.id, key.userId).read<Record<string, unknown>>();
    expect(resource).toMatchObject({ fromSeq: 1 });
    expect(resource).not.toHaveProperty('contentVector');
    expect(await stores.interactions.listBySession(key)).toEqual([doc]);
    await stores.close();
  });

});
