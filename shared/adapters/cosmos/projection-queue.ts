import type { Container } from '@azure/cosmos';
import type { SessionKey } from '../../contracts/ids.js';
import type { ProjectionQueue, QueuedSession } from '../../application/projection-ports.js';
import { statusOf } from './containers.js';

/** One queued session; times in epoch milliseconds (compared and ordered by the queries). */
interface QueueDoc {
  /** The session id (unique within the user's partition). */
  id: string;
  userId: string;
  sessionId: string;
  generation: number;
  failures: number;
  queuedAt: number;
  servedAt: number;
  dueAt: number;
  leaseUntil: number;
  _etag?: string;
}

const entryOf = (d: QueueDoc): QueuedSession => ({ key: { userId: d.userId, sessionId: d.sessionId }, generation: d.generation, failures: d.failures, leasedUntil: d.leaseUntil });
/** A session never served has `servedAt` 0, so it comes before every session served (then in the order queued). */
const newDoc = (key: SessionKey, at: number): QueueDoc => ({ id: key.sessionId, ...key, generation: 1, failures: 0, queuedAt: at, servedAt: 0, dueAt: at, leaseUntil: at });
const ifMatch = (etag: string | undefined) => (etag ? { accessCondition: { type: 'IfMatch', condition: etag } } : {});
/** Attempts of an optimistic read-modify-write before the change gives up (another scheduler keeps winning). */
const MAX_ATTEMPTS = 10;

/**
 * The projection queue in the `projectionQueue` container (partition `/userId`, so a forget purges and scans it with
 * the user's other items). Every change is a read and a conditional write on the item's etag, so of two schedulers
 * that claim one session one wins; the claim's query runs across partitions (the queue is small: queued sessions only).
 */
export class CosmosProjectionQueue implements ProjectionQueue {
  constructor(private readonly container: Container) {}

  async enqueue(keys: readonly SessionKey[], now: Date): Promise<SessionKey[]> {
    const unique = [...new Map(keys.map((k) => [JSON.stringify([k.userId, k.sessionId]), k])).values()];
    const fresh = await Promise.all(
      unique.map(async (key) => {
        let created = false;
        await this.change(key, (doc) => {
          created = doc === null;
          return doc ? { ...doc, generation: doc.generation + 1 } : newDoc(key, now.getTime());
        });
        return created ? [key] : [];
      }),
    );
    return fresh.flat();
  }

  async claim(limit: number, now: Date, leaseUntil: Date): Promise<QueuedSession[]> {
    const n = Math.max(1, Math.floor(limit));
    // More candidates than asked for: another scheduler may lease some of them first.
    const { resources } = await this.container.items
      .query<QueueDoc>({
        query: `SELECT TOP ${4 * n} * FROM c WHERE c.dueAt <= @now AND c.leaseUntil <= @now ORDER BY c.servedAt, c.queuedAt`,
        parameters: [{ name: '@now', value: now.getTime() }],
      })
      .fetchAll();
    const claimed: QueuedSession[] = [];
    for (const doc of resources) {
      if (claimed.length >= n) break;
      const leased = await this.lease(doc, now, leaseUntil);
      if (leased) claimed.push(leased);
    }
    return claimed;
  }

  async claimSessions(keys: readonly SessionKey[], now: Date, leaseUntil: Date): Promise<QueuedSession[]> {
    const claimed = await Promise.all(
      keys.map(async (key) => {
        const doc = await this.read(key);
        return doc ? this.lease(doc, now, leaseUntil) : null;
      }),
    );
    return claimed.filter((c): c is QueuedSession => c !== null);
  }

  async extend(entry: QueuedSession, leaseUntil: Date): Promise<QueuedSession | null> {
    const doc = await this.read(entry.key);
    return doc && doc.leaseUntil === entry.leasedUntil ? this.leaseAsRead(doc, leaseUntil) : null;
  }

  async requeue(entry: QueuedSession, now: Date): Promise<void> {
    const at = now.getTime();
    await this.change(entry.key, (doc) => ({ ...(doc ?? newDoc(entry.key, at)), servedAt: at, dueAt: at, leaseUntil: at, failures: 0 }));
  }

  async done(entry: QueuedSession, now: Date): Promise<void> {
    const at = now.getTime();
    await this.change(entry.key, (doc) => (!doc || doc.generation === entry.generation ? null : { ...doc, servedAt: at, dueAt: at, leaseUntil: at, failures: 0 }));
  }

  async failed(entry: QueuedSession, now: Date, retryAt: Date): Promise<void> {
    const at = now.getTime();
    await this.change(entry.key, (doc) => {
      const current = doc ?? { ...newDoc(entry.key, at), failures: 0 };
      return { ...current, failures: current.failures + 1, servedAt: at, dueAt: retryAt.getTime(), leaseUntil: at };
    });
  }

  async size(): Promise<number> {
    const { resources } = await this.container.items.query<number>('SELECT VALUE COUNT(1) FROM c').fetchAll();
    return resources[0] ?? 0;
  }

  /** Leases the item if it is still due and unleased as read: null when another scheduler got it first. */
  private async lease(doc: QueueDoc, now: Date, leaseUntil: Date): Promise<QueuedSession | null> {
    return doc.dueAt > now.getTime() || doc.leaseUntil > now.getTime() ? null : this.leaseAsRead(doc, leaseUntil);
  }

  /** Sets the item's lease if it is unchanged since read (its etag): null when another writer changed it first. */
  private async leaseAsRead(doc: QueueDoc, leaseUntil: Date): Promise<QueuedSession | null> {
    try {
      const { _etag, ...body } = doc;
      await this.container.item(doc.id, doc.userId).replace<QueueDoc>({ ...body, leaseUntil: leaseUntil.getTime() }, ifMatch(_etag));
      return entryOf({ ...body, leaseUntil: leaseUntil.getTime() });
    } catch (error) {
      if (statusOf(error) === 412 || statusOf(error) === 404) return null;
      throw error;
    }
  }

  private async read(key: SessionKey): Promise<QueueDoc | null> {
    const { resource } = await this.container.item(key.sessionId, key.userId).read<QueueDoc>();
    return resource ?? null;
  }

  /** Reads the item and writes what `next` makes of it (null: delete), on its etag; again if another writer came first. */
  private async change(key: SessionKey, next: (doc: QueueDoc | null) => QueueDoc | null): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const doc = await this.read(key);
      const changed = next(doc);
      try {
        if (!doc && changed) await this.container.items.create<QueueDoc>(changed);
        else if (doc && !changed) await this.container.item(doc.id, doc.userId).delete(ifMatch(doc._etag));
        else if (doc && changed) {
          const body = { ...changed };
          delete body._etag;
          await this.container.item(doc.id, doc.userId).replace<QueueDoc>(body, ifMatch(doc._etag));
        }
        return;
      } catch (error) {
        const status = statusOf(error);
        if ((status !== 409 && status !== 412 && status !== 404) || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }
}
