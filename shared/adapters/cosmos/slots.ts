import { createHash } from 'node:crypto';
import { BulkOperationType, type Container, type JSONObject, type OperationInput } from '@azure/cosmos';
import { SlotEvent } from '../../contracts/slots.js';
import type { SlotStore } from '../../application/slot-ports.js';
import { keyOf, slotSortKey, type SlotKey } from '../../domain/slots.js';
import { createdInBatch } from './containers.js';

/** The slot within its partition: scope, owner ('' for none) and name ('|' is not in the Id alphabet). */
const streamOf = (key: SlotKey) => [key.scope, key.owner ?? '', key.name].join('|');

/**
 * `slot:<sha256 of the stream>:<version, 10 digits>`: the version in the id makes create-if-absent the optimistic append
 * (409 = another writer has that version). The stream is hashed because scope, owner and name together can exceed
 * Cosmos's 255-character id limit.
 */
const eventId = (key: SlotKey, version: number) => `slot:${createHash('sha256').update(streamOf(key)).digest('hex')}:${String(version).padStart(10, '0')}`;

interface SlotEventDoc {
  id: string;
  /** The partition key: the slot's user, or GLOBAL_SLOT_PARTITION. */
  userId: string;
  docType: 'slot_event';
  stream: string;
  sortKey: string;
  version: number;
  /** Session slots only: a session forget removes the items with its sessionId. */
  sessionId?: string;
  event: SlotEvent;
}

/**
 * Slot streams in the `slots` container (partition `/userId`): one immutable item per event. The slot is its stream's
 * latest item (TOP 1 by version); the listing finds streams by their first event (version 1, one per stream) and reads
 * each one's latest. Expired slots are filtered by the readers; no item carries a Cosmos ttl, since an expiring newer event
 * must never leave an older one as the stream's latest.
 */
export class CosmosSlotStore implements SlotStore {
  constructor(private readonly container: Container) {}

  async head(key: SlotKey): Promise<SlotEvent | null> {
    const { resources } = await this.container.items
      .query<{ event: unknown }>(
        {
          query: "SELECT TOP 1 c.event FROM c WHERE c.userId = @userId AND c.docType = 'slot_event' AND c.stream = @stream ORDER BY c.version DESC",
          parameters: [
            { name: '@userId', value: key.partition },
            { name: '@stream', value: streamOf(key) },
          ],
        },
        { partitionKey: key.partition },
      )
      .fetchAll();
    return resources[0] ? SlotEvent.parse(resources[0].event) : null;
  }

  /** A point read: the version is in the item's id. */
  async at(key: SlotKey, version: number): Promise<SlotEvent | null> {
    const { resource } = await this.container.item(eventId(key, version), key.partition).read<SlotEventDoc>();
    return resource ? SlotEvent.parse(resource.event) : null;
  }

  async append(event: SlotEvent): Promise<boolean> {
    const { scope, owner, version } = event.data;
    const key = keyOf(event);
    const doc: SlotEventDoc = {
      id: eventId(key, version),
      userId: key.partition,
      docType: 'slot_event',
      stream: streamOf(key),
      sortKey: slotSortKey(key),
      version,
      ...(scope === 'session' && owner !== null && { sessionId: owner }),
      event,
    };
    // With a read of the version before: a stream a forget purged after the writer read its head refuses the write as a
    // taken version does, and the writer decides again over an empty stream.
    const operations: OperationInput[] = [
      ...(version > 1 ? [{ operationType: BulkOperationType.Read, id: eventId(key, version - 1), partitionKey: key.partition } as const] : []),
      { operationType: BulkOperationType.Create, resourceBody: doc as unknown as JSONObject },
    ];
    return createdInBatch(this.container, key.partition, operations, 'Slot');
  }

  async heads(partitions: readonly string[], limit: number, after?: string): Promise<SlotEvent[]> {
    const n = Math.max(1, Math.floor(limit));
    // One single-partition query per partition (the user's, the global one), merged by sort key.
    const firsts = (
      await Promise.all(
        partitions.map(async (partition) => {
          const { resources } = await this.container.items
            .query<{ sortKey: string; event: SlotEvent }>(
              {
                query: `SELECT TOP ${n} c.sortKey, c.event FROM c WHERE c.userId = @userId AND c.docType = 'slot_event' AND c.version = 1${after === undefined ? '' : ' AND c.sortKey > @after'} ORDER BY c.sortKey`,
                parameters: [{ name: '@userId', value: partition }, ...(after === undefined ? [] : [{ name: '@after', value: after }])],
              },
              { partitionKey: partition },
            )
            .fetchAll();
          return resources;
        }),
      )
    )
      .flat()
      .sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0))
      .slice(0, n);
    const heads = await Promise.all(firsts.map(({ event }) => this.head(keyOf(event))));
    return heads.filter((h): h is SlotEvent => h !== null);
  }
}
