import type { Container, Database, SqlParameter } from '@azure/cosmos';
import type { SessionKey } from '../../contracts/ids.js';
import { TOMBSTONE_OWNERS, type ForgetScope, type ForgetStore, type PurgeOptions, type StoreCounts, type TombstoneOwner } from '../../application/forget-ports.js';
import { COSMOS_CONTAINERS, statusOf, type CosmosContainerSpec } from './containers.js';

/**
 * An owner's tombstone's id in `forgets` (partition: the user). A forget's keeps the id it had before owners (so one in
 * flight across a deployment is still its own); an overtaken projector's has a prefix of its own (ids may hold `:`).
 */
const tombstoneId = (sessionId: string | undefined, owner: TombstoneOwner) => `${owner}:${sessionId === undefined ? 'user' : `session:${sessionId}`}`;

/** The containers of what clients write beside a session's events (see ForgetStore.purge `keepClientItems`). */
const CLIENT_ITEMS = new Set<string>([COSMOS_CONTAINERS.artifacts.name, COSMOS_CONTAINERS.slots.name]);

/** Items of the user's other sessions whose init block names the forgotten session (@sessionId, @entry). */
const NAMES_SESSION = {
  events: "c.userId = @userId AND c.sessionId != @sessionId AND c.type = 'SessionInitFixed' AND ARRAY_CONTAINS(c.data.recentSessions, @entry, true)",
  sessions: 'c.userId = @userId AND c.sessionId != @sessionId AND ARRAY_CONTAINS(c.init.recentSessions, @entry, true)',
} as const;

/**
 * Forget on Cosmos DB: every item of the user's partition in every container partitioned by `/userId` (found from
 * COSMOS_CONTAINERS, so a container added later is purged and scanned too), or a session's items. The tombstones live
 * in their own container, `forgets`, so purging the user's partition never deletes them.
 *
 * Cosmos has no cross-container transaction or trigger, so the writers check the tombstone before they write and enlist
 * with it after (`refusesWritesItself` is false; see `refuseUnlessKept` in shared/application/forget.ts).
 */
export class CosmosForgetStore implements ForgetStore {
  readonly refusesWritesItself = false;
  private readonly containers: { name: string; container: Container }[];
  private readonly forgets: Container;

  constructor(database: Database) {
    const specs: CosmosContainerSpec[] = Object.values(COSMOS_CONTAINERS);
    this.containers = specs.filter((s) => s.partitionKey === '/userId' && s.name !== COSMOS_CONTAINERS.forgets.name).map((s) => ({ name: s.name, container: database.container(s.name) }));
    this.forgets = database.container(COSMOS_CONTAINERS.forgets.name);
  }

  async markForgetting(scope: ForgetScope, owner: TombstoneOwner, at: Date): Promise<boolean> {
    try {
      await this.forgets.items.create({ id: tombstoneId(scope.sessionId, owner), userId: scope.userId, sessionId: scope.sessionId ?? null, owner, requestedAt: at.toISOString() });
      return true;
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
      return false; // recorded by an earlier run of the forget, or by another overtaken projector
    }
  }

  async forgetting(key: SessionKey): Promise<boolean> {
    return (await this.tombstones(key)).length > 0;
  }

  async enlist(key: SessionKey, owners?: readonly TombstoneOwner[]): Promise<boolean> {
    let enlisted = false;
    for (const id of await this.tombstones(key, owners)) {
      try {
        // Any write gives the tombstone a new ETag, so the forget's clear (If-Match the ETag read before its scan) fails.
        await this.forgets.item(id, key.userId).patch([{ op: 'incr', path: '/enlisted', value: 1 }]);
        enlisted = true;
      } catch (error) {
        if (statusOf(error) !== 404) throw error; // cleared since the query
      }
    }
    return enlisted;
  }

  async sessions(scope: ForgetScope): Promise<string[]> {
    const ids = new Set<string>();
    for (const name of [COSMOS_CONTAINERS.events.name, COSMOS_CONTAINERS.sessions.name]) {
      const { container } = this.containers.find((c) => c.name === name)!;
      const rows = await this.query<{ sessionId: string }>(container, scope.userId, `SELECT c.sessionId FROM c WHERE c.userId = @userId${scope.sessionId === undefined ? '' : ' AND c.sessionId = @sessionId'}`, this.sessionParam(scope));
      for (const r of rows) if (typeof r.sessionId === 'string') ids.add(r.sessionId);
    }
    return [...ids].sort();
  }

  async blobNames(scope: ForgetScope): Promise<string[]> {
    const { container } = this.containers.find((c) => c.name === COSMOS_CONTAINERS.artifacts.name)!;
    const artifacts = await this.query<{ blobName: string }>(
      container,
      scope.userId,
      `SELECT c.storage.blobName FROM c WHERE c.userId = @userId AND c.docType = 'artifact' AND c.storage.kind = 'blob'${scope.sessionId === undefined ? '' : ' AND c.sessionId = @sessionId'}`,
      this.sessionParam(scope),
    );
    const queued =
      scope.sessionId === undefined ? await this.query<{ blobName: string }>(container, scope.userId, "SELECT c.blobName FROM c WHERE c.userId = @userId AND c.docType = 'blob_deletion'", []) : [];
    return [...new Set([...artifacts, ...queued].map((r) => r.blobName))].sort();
  }

  async purge(scope: ForgetScope, options: PurgeOptions = {}): Promise<StoreCounts> {
    const counts: StoreCounts = {};
    let removedInsights: string[] = [];
    for (const { name, container } of this.containers) {
      if (options.keepClientItems && CLIENT_ITEMS.has(name)) continue;
      // An artifact's blob name is read with its id: a blob written after the forget's blob step goes before its row.
      const artifacts = name === COSMOS_CONTAINERS.artifacts.name;
      const ids = await this.query<{ id: string; blobName?: string }>(container, scope.userId, `SELECT c.id${artifacts ? ', c.storage.blobName' : ''} FROM c WHERE ${this.where(name, scope)}`, this.sessionParam(scope));
      const blobNames = ids.flatMap((r) => (typeof r.blobName === 'string' ? [r.blobName] : []));
      if (blobNames.length > 0) await options.deleteBlobs?.(blobNames);
      for (const { id } of ids) await this.delete(container, id, scope.userId);
      counts[name] = ids.length;
      if (name === COSMOS_CONTAINERS.insights.name) removedInsights = ids.map((r) => r.id);
    }
    if (scope.sessionId !== undefined && removedInsights.length > 0) {
      // The profile synthesised from an insight of the session goes too; the next long-term reflection writes a new one.
      const { container } = this.containers.find((c) => c.name === COSMOS_CONTAINERS.insights.name)!;
      const { resource: profile } = await container.item('profile', scope.userId).read<{ sourceInsightIds?: string[] }>();
      const derived = profile?.sourceInsightIds?.some((id) => removedInsights.includes(id)) ?? false;
      if (derived) await this.delete(container, 'profile', scope.userId);
      counts.profiles = derived ? 1 : 0;
    }
    return counts;
  }

  async redactInit(scope: Required<ForgetScope>): Promise<{ events: number; sessionIds: string[] }> {
    const events = this.container(COSMOS_CONTAINERS.events.name);
    const found = await this.query<{ id: string; sessionId: string; data: { recentSessions: { sessionId: string }[] } }>(events, scope.userId, `SELECT * FROM c WHERE ${NAMES_SESSION.events}`, this.entryParams(scope));
    for (const event of found) {
      // Erasure: the one in-place change of recorded events (see ForgetStore.redactInit). The change feed delivers the
      // replaced item again; the projector finds it below its checkpoint and changes nothing.
      const recentSessions = event.data.recentSessions.filter((r) => r.sessionId !== scope.sessionId);
      await events.item(event.id, scope.userId).replace({ ...event, data: { ...event.data, recentSessions } });
    }
    const documents = await this.query<{ sessionId: string }>(this.container(COSMOS_CONTAINERS.sessions.name), scope.userId, `SELECT c.sessionId FROM c WHERE ${NAMES_SESSION.sessions}`, this.entryParams(scope));
    return { events: found.length, sessionIds: [...new Set([...found, ...documents].map((r) => r.sessionId))].sort() };
  }

  async scan(scope: ForgetScope): Promise<StoreCounts> {
    const counts: StoreCounts = {};
    for (const { name, container } of this.containers) {
      const [n] = await this.query<number>(container, scope.userId, `SELECT VALUE COUNT(1) FROM c WHERE ${this.where(name, scope)}`, this.sessionParam(scope));
      counts[name] = n ?? 0;
    }
    if (scope.sessionId !== undefined) {
      const params = this.entryParams({ userId: scope.userId, sessionId: scope.sessionId });
      const count = async (name: 'events' | 'sessions') => (await this.query<number>(this.container(COSMOS_CONTAINERS[name].name), scope.userId, `SELECT VALUE COUNT(1) FROM c WHERE ${NAMES_SESSION[name]}`, params))[0] ?? 0;
      counts.initEvents = await count('events');
      counts.initDocuments = await count('sessions');
    }
    return counts;
  }

  async tombstoneVersion(scope: ForgetScope, owner: TombstoneOwner): Promise<string | null> {
    return (await this.tombstone(scope, owner))?._etag ?? null;
  }

  async clearForgetting(scope: ForgetScope, owner: TombstoneOwner, version?: string): Promise<boolean> {
    try {
      await this.forgets.item(tombstoneId(scope.sessionId, owner), scope.userId).delete(version === undefined ? {} : { accessCondition: { type: 'IfMatch', condition: version } });
    } catch (error) {
      if (statusOf(error) === 412) return false; // a writer enlisted after the scan
      if (statusOf(error) !== 404) throw error; // cleared by an earlier run
    }
    return true;
  }

  async clearStale(scope: ForgetScope, owner: TombstoneOwner, recordedBefore: Date): Promise<void> {
    // If-Match the tombstone read: a writer that enlisted with it since changed its version, so it is read again.
    for (let found = await this.tombstone(scope, owner); found && Date.parse(found.requestedAt) < recordedBefore.getTime(); found = await this.tombstone(scope, owner)) {
      if (await this.clearForgetting(scope, owner, found._etag)) return;
    }
  }

  private async tombstone(scope: ForgetScope, owner: TombstoneOwner) {
    const { resource } = await this.forgets.item(tombstoneId(scope.sessionId, owner), scope.userId).read<{ _etag: string; requestedAt: string }>();
    return resource;
  }

  /** Ids of the tombstones that cover the session, of `owners` (all by default): its user's forget's, its own forget's and projectors'. */
  private async tombstones(key: SessionKey, owners: readonly TombstoneOwner[] = TOMBSTONE_OWNERS): Promise<string[]> {
    const covering = { forget: [tombstoneId(undefined, 'forget'), tombstoneId(key.sessionId, 'forget')], projector: [tombstoneId(key.sessionId, 'projector')] };
    const ids = owners.flatMap((owner) => covering[owner]);
    const names = ids.map((_, i) => `@id${i}`);
    const rows = await this.query<{ id: string }>(
      this.forgets,
      key.userId,
      `SELECT c.id FROM c WHERE c.userId = @userId AND (${names.map((n) => `c.id = ${n}`).join(' OR ')})`,
      ids.map((value, i) => ({ name: names[i]!, value })),
    );
    return rows.map((r) => r.id);
  }

  /** The scope's items in a container: the whole partition for a user; for a session, its items and the insights built from it. */
  private where(container: string, scope: ForgetScope): string {
    if (scope.sessionId === undefined) return 'c.userId = @userId';
    if (container === COSMOS_CONTAINERS.insights.name) return 'c.userId = @userId AND (c.sessionId = @sessionId OR ARRAY_CONTAINS(c.sourceSessionIds, @sessionId))';
    return 'c.userId = @userId AND c.sessionId = @sessionId';
  }

  private container(name: string): Container {
    return this.containers.find((c) => c.name === name)!.container;
  }

  /** Parameters of NAMES_SESSION: the forgotten session and its `recentSessions` entry (matched on `sessionId` alone). */
  private entryParams(scope: Required<ForgetScope>): SqlParameter[] {
    return [...this.sessionParam(scope), { name: '@entry', value: { sessionId: scope.sessionId } }];
  }

  private sessionParam(scope: ForgetScope): SqlParameter[] {
    return scope.sessionId === undefined ? [] : [{ name: '@sessionId', value: scope.sessionId }];
  }

  private async query<T>(container: Container, userId: string, sql: string, parameters: SqlParameter[]): Promise<T[]> {
    const { resources } = await container.items.query<T>({ query: sql, parameters: [{ name: '@userId', value: userId }, ...parameters] }, { partitionKey: userId }).fetchAll();
    return resources;
  }

  private async delete(container: Container, id: string, userId: string): Promise<void> {
    try {
      await container.item(id, userId).delete();
    } catch (error) {
      if (statusOf(error) !== 404) throw error; // deleted meanwhile: what we wanted
    }
  }
}
