import { BulkOperationType, type Container, type Database, type JSONObject, type OperationInput, type SqlParameter } from '@azure/cosmos';
import { END_KEY, eventDocument, eventId, eventKey, MemoryEvent, TurnAppended, type EventDocument, type EventDraft } from '../../contracts/events.js';
import type { SessionKey } from '../../contracts/ids.js';
import { InteractionDocument } from '../../contracts/interactions.js';
import { SessionDocument } from '../../contracts/sessions.js';
import { conflict, MemoryError, sessionEnded } from '../../domain/errors.js';
import type { AppendOutcome, EventStore, InteractionStore, Projections, SessionStore, Stores, Versioned } from '../../application/ports.js';
import { COSMOS_CONTAINERS, createdInBatch, statusOf } from './containers.js';
import { CosmosSearchIndex, INTERACTION_VECTOR_KIND, interactionDocument, interactionVectorDocuments } from './search.js';
import { withFloat32Vectors } from './vectors.js';
import { CosmosInsightStore, CosmosSessionDirectory } from './insights.js';
import type { RetentionPolicy } from '../../domain/retention.js';

/** Cosmos DB's limit on operations in one transactional batch (the HTTP contract caps a request at 100 turns too). */
export const MAX_EVENTS_PER_APPEND = 100;

export interface CosmosStoresOptions {
  /**
   * Write each append as one transactional batch (default). `false` creates the event documents one by one in seq
   * order: only for the wire fake used in tests, whose batches are not transactional. A crash midway then leaves a
   * gapless prefix of the append, which a retry with the same turnIds completes.
   */
  atomicBatches?: boolean;
  /** Attempts per append while concurrent writers keep taking the next seq (default 10). */
  maxAppendAttempts?: number;
  /** Dispose `database.client` on `close()`: set it when the stores own the client. */
  ownsClient?: boolean;
  /** Per-item `ttl` for insights that stop being live (superseded, merged); without it nothing is stamped. */
  retention?: RetentionPolicy;
}

/** Single-partition query: the partition key option routes it in Cosmos, the SQL filter keeps it honest everywhere else. */
async function query<T>(container: Container, userId: string, sql: string, parameters: SqlParameter[]): Promise<T[]> {
  const { resources } = await container.items.query<T>({ query: sql, parameters }, { partitionKey: userId }).fetchAll();
  return resources;
}

const sessionParams = (key: SessionKey): SqlParameter[] => [
  { name: '@userId', value: key.userId },
  { name: '@sessionId', value: key.sessionId },
];

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Full jitter, so writers that collided spread out instead of colliding again. */
const backoffMs = (attempt: number) => Math.random() * Math.min(500, 10 * 2 ** attempt);

/**
 * One append's transactional batch: a read of the event before the first (none at seq 1), then the creates in seq
 * order. The read fails the batch when that event is gone: a forget purged the stream after the append planned its
 * seqs, so the append plans again from seq 1 instead of starting a stream past it (a session's stream starts at 1).
 */
export function eventBatchOperations(docs: readonly EventDocument[]): OperationInput[] {
  const [first] = docs;
  const predecessor: OperationInput[] = first && first.seq > 1 ? [{ operationType: BulkOperationType.Read, id: eventId(first.sessionId, first.seq - 1), partitionKey: first.userId }] : [];
  return [...predecessor, ...docs.map((doc): OperationInput => ({ operationType: BulkOperationType.Create, resourceBody: doc as unknown as JSONObject }))];
}

interface AppendPlan {
  /** Drafts to write now, with the seq each gets (consecutive after the last recorded seq). */
  writes: { index: number; seq: number }[];
  /** An event key repeated within the request: [index, index of its first occurrence]. */
  repeats: [number, number][];
}

export class CosmosEventStore implements EventStore {
  private readonly atomicBatches: boolean;
  private readonly maxAttempts: number;

  constructor(
    private readonly container: Container,
    options: Pick<CosmosStoresOptions, 'atomicBatches' | 'maxAppendAttempts'> = {},
  ) {
    this.atomicBatches = options.atomicBatches ?? true;
    this.maxAttempts = options.maxAppendAttempts ?? 10;
  }

  /**
   * Optimistic concurrency on the seq: the next seqs are taken from a read, and the document ids (`<session>:<seq>`)
   * make a second writer of the same seq fail with 409, after which the append re-reads and tries again.
   */
  async append(key: SessionKey, drafts: readonly EventDraft[], recordedAt: Date): Promise<AppendOutcome[]> {
    if (drafts.length > MAX_EVENTS_PER_APPEND) {
      throw new MemoryError('validation_failed', `At most ${MAX_EVENTS_PER_APPEND} events can be appended at once`, { count: drafts.length });
    }
    // Settled outcomes survive a retry: a turn recorded by an earlier attempt of this call is not reported as a duplicate.
    const outcomes: (AppendOutcome | undefined)[] = drafts.map(() => undefined);
    for (let attempt = 1; ; attempt++) {
      const plan = await this.plan(key, drafts, outcomes);
      const docs = plan.writes.map((w) => eventDocument(key, w.seq, drafts[w.index]!, recordedAt));
      const written = await this.write(key.userId, docs);
      for (const w of plan.writes.slice(0, written)) outcomes[w.index] = outcome(drafts[w.index]!, w.seq, false);
      if (written === docs.length) {
        for (const [index, first] of plan.repeats) outcomes[index] = outcome(drafts[index]!, outcomes[first]!.seq, true);
        return outcomes as AppendOutcome[];
      }
      if (attempt >= this.maxAttempts) {
        throw new MemoryError('conflict', `Session ${key.sessionId} is being appended to concurrently; retry with the same turnIds`);
      }
      await sleep(backoffMs(attempt));
    }
  }

  private async plan(key: SessionKey, drafts: readonly EventDraft[], outcomes: (AppendOutcome | undefined)[]): Promise<AppendPlan> {
    // The last seq is read before the event keys. An event written after that read took seq last + 1 or later, so our
    // write of last + 1 fails with 409 and we come back here; one written before it is seen by the key query, which
    // (session consistency) observes at least what the first query did. The same holds for the end request.
    const last = await this.lastSeq(key);
    const pendingKeys = drafts.flatMap((d, i) => (outcomes[i] ? [] : [eventKey(d)]));
    const recorded = await this.recordedKeys(key, [...new Set([...pendingKeys, END_KEY])]);
    let ended = recorded.has(END_KEY);
    const plan: AppendPlan = { writes: [], repeats: [] };
    const firstIndex = new Map<string, number>();
    let seq = last;
    drafts.forEach((draft, index) => {
      if (outcomes[index]) return;
      const k = eventKey(draft);
      const recordedSeq = recorded.get(k);
      if (recordedSeq !== undefined) {
        outcomes[index] = outcome(draft, recordedSeq, true);
        return;
      }
      const first = firstIndex.get(k);
      if (first !== undefined) {
        plan.repeats.push([index, first]);
        return;
      }
      if (ended && draft.type === 'TurnAppended') throw sessionEnded(key.sessionId);
      ended ||= k === END_KEY;
      firstIndex.set(k, index);
      plan.writes.push({ index, seq: ++seq });
    });
    return plan;
  }

  private async recordedKeys(key: SessionKey, keys: string[]): Promise<Map<string, number>> {
    const rows = await query<{ seq: number; eventKey: string }>(
      this.container,
      key.userId,
      'SELECT c.seq, c.eventKey FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId AND ARRAY_CONTAINS(@keys, c.eventKey)',
      [...sessionParams(key), { name: '@keys', value: keys }],
    );
    return new Map(rows.map((r) => [r.eventKey, r.seq]));
  }

  /** Writes documents with consecutive seqs; returns how many of them, from the first, were written (fewer: a seq was taken). */
  private async write(userId: string, docs: readonly EventDocument[]): Promise<number> {
    if (docs.length === 0) return 0;
    if (this.atomicBatches) return (await createdInBatch(this.container, userId, eventBatchOperations(docs), 'Event')) ? docs.length : 0;
    // Not atomic (the wire fake): the same check of the event before, then the creates.
    const [first] = docs;
    if (first && first.seq > 1 && !(await this.exists(eventId(first.sessionId, first.seq - 1), userId))) return 0;
    for (const [i, doc] of docs.entries()) {
      try {
        await this.container.items.create(doc);
      } catch (error) {
        if (statusOf(error) === 409) return i;
        throw error;
      }
    }
    return docs.length;
  }

  private async exists(id: string, userId: string): Promise<boolean> {
    const { resource } = await this.container.item(id, userId).read();
    return resource !== undefined;
  }

  async read(key: SessionKey, afterSeq: number, limit = 100_000): Promise<MemoryEvent[]> {
    if (limit <= 0) return [];
    const rows = await query<unknown>(
      this.container,
      key.userId,
      'SELECT TOP @limit c.type, c.data, c.metadata FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId AND c.seq > @afterSeq ORDER BY c.seq ASC',
      [...sessionParams(key), { name: '@afterSeq', value: afterSeq }, { name: '@limit', value: limit }],
    );
    return rows.map((r) => MemoryEvent.parse(r));
  }

  async readLastTurns(key: SessionKey, count: number, beforeSeq = 2 ** 31 - 1, thread?: { agentId?: string }): Promise<TurnAppended[]> {
    if (count <= 0) return [];
    const ofThread = !thread ? '' : thread.agentId === undefined ? ' AND NOT IS_DEFINED(c.data.agentId)' : ' AND c.data.agentId = @agentId';
    const rows = await query<unknown>(
      this.container,
      key.userId,
      `SELECT TOP @count c.type, c.data, c.metadata FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId AND c.type = @type AND c.seq < @beforeSeq${ofThread} ORDER BY c.seq DESC`,
      [
        ...sessionParams(key),
        { name: '@type', value: 'TurnAppended' },
        { name: '@count', value: count },
        { name: '@beforeSeq', value: beforeSeq },
        ...(thread?.agentId !== undefined ? [{ name: '@agentId', value: thread.agentId }] : []),
      ],
    );
    return rows.map((r) => TurnAppended.parse(r)).reverse();
  }

  /** Every session has exactly one event with seq 1. Without a user, a cross-partition query (rebuilds only). */
  async sessions(userId?: string): Promise<SessionKey[]> {
    const sql = `SELECT c.userId, c.sessionId FROM c WHERE c.seq = 1${userId === undefined ? '' : ' AND c.userId = @userId'}`;
    const parameters = userId === undefined ? [] : [{ name: '@userId', value: userId }];
    const { resources } = await this.container.items.query<SessionKey>({ query: sql, parameters }, userId === undefined ? {} : { partitionKey: userId }).fetchAll();
    return resources.map((r) => ({ userId: r.userId, sessionId: r.sessionId })).sort((a, b) => a.userId.localeCompare(b.userId) || a.sessionId.localeCompare(b.sessionId));
  }

  async lastSeq(key: SessionKey): Promise<number> {
    const [row] = await query<{ seq: number }>(
      this.container,
      key.userId,
      'SELECT TOP 1 c.seq FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId ORDER BY c.seq DESC',
      sessionParams(key),
    );
    return row?.seq ?? 0;
  }
}

function outcome(draft: EventDraft, seq: number, duplicate: boolean): AppendOutcome {
  return { seq, duplicate, ...(draft.type === 'TurnAppended' && { turnId: draft.data.turnId }) };
}

/** Session projections: `id = sessionId` in the user's partition; the etag is the version. */
export class CosmosSessionStore implements SessionStore {
  constructor(private readonly container: Container) {}

  async get(key: SessionKey): Promise<Versioned<SessionDocument> | null> {
    const response = await this.container.item(key.sessionId, key.userId).read<SessionDocument>();
    if (response.statusCode === 404 || !response.resource) return null;
    return { doc: SessionDocument.parse(response.resource), version: response.etag };
  }

  /** Point reads side by side (1 RU each for a small document; a query across partitions costs more). */
  async projectedThrough(keys: readonly SessionKey[]): Promise<number[]> {
    return Promise.all(keys.map(async (key) => (await this.get(key))?.doc.projectedThroughSeq ?? 0));
  }

  async put(doc: SessionDocument, expectedVersion: string | null): Promise<string> {
    const body = withFloat32Vectors({ id: doc.sessionId, ...doc }, COSMOS_CONTAINERS.sessions);
    try {
      const response =
        expectedVersion === null
          ? await this.container.items.create(body)
          : await this.container.item(doc.sessionId, doc.userId).replace(body, { accessCondition: { type: 'IfMatch', condition: expectedVersion } });
      return response.etag;
    } catch (error) {
      // 409: created by someone else; 412: replaced since `expectedVersion`; 404: deleted (e.g. forgotten) since.
      const status = statusOf(error);
      if (status === 409 || status === 412 || status === 404) throw conflict(`Session ${doc.sessionId} was changed concurrently`);
      throw error;
    }
  }
}

/** k-turn windows; `fromSeq` (the window's first seq) is stored top-level so listing can ORDER BY one plain field. */
export class CosmosInteractionStore implements InteractionStore {
  constructor(private readonly container: Container) {}

  /** Each interaction and its vector documents (see `search.ts`): the vectors first, so a listed interaction has them. */
  async upsert(docs: readonly InteractionDocument[]): Promise<void> {
    await Promise.all(docs.flatMap((doc) => interactionVectorDocuments(doc).map((v) => this.container.items.upsert(v))));
    await Promise.all(docs.map((doc) => this.container.items.upsert(interactionDocument(doc))));
  }

  async listBySession(key: SessionKey): Promise<InteractionDocument[]> {
    const [rows, vectors] = await Promise.all([
      query<Record<string, unknown>>(
        this.container,
        key.userId,
        'SELECT * FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId AND NOT IS_DEFINED(c.kind) ORDER BY c.fromSeq ASC',
        sessionParams(key),
      ),
      query<Record<string, unknown> & { interactionId: string; vectorPath: string }>(
        this.container,
        key.userId,
        `SELECT * FROM c WHERE c.userId = @userId AND c.sessionId = @sessionId AND c.kind = '${INTERACTION_VECTOR_KIND}'`,
        sessionParams(key),
      ),
    ]);
    const vectorOf = new Map(vectors.map((v) => [`${v.interactionId}|${v.vectorPath}`, v[v.vectorPath]]));
    // An interaction written before the split holds its vectors itself. The parse drops `fromSeq` and Cosmos's system properties.
    return rows.map((r) =>
      InteractionDocument.parse({ ...r, contentVector: vectorOf.get(`${String(r.id)}|contentVector`) ?? r.contentVector, summaryVector: vectorOf.get(`${String(r.id)}|summaryVector`) ?? r.summaryVector }),
    );
  }
}

/** Session documents (`sessions`), and interactions with the turn index (both in `interactions`), per user partition. */
export class CosmosProjections implements Projections {
  constructor(
    private readonly containers: readonly Container[],
    private readonly search?: CosmosSearchIndex,
  ) {}

  async dropUser(userId: string): Promise<void> {
    for (const container of this.containers) {
      const ids = await query<{ id: string }>(container, userId, 'SELECT c.id FROM c WHERE c.userId = @userId', [{ name: '@userId', value: userId }]);
      for (const { id } of ids) {
        try {
          await container.item(id, userId).delete();
        } catch (error) {
          if (statusOf(error) !== 404) throw error; // deleted meanwhile: what we wanted
        }
      }
    }
    // The speaker markers went too: the rebuild's indexTurns writes them again.
    this.search?.dropCached(userId);
  }
}

export interface CosmosStores extends Stores {
  events: CosmosEventStore;
  sessions: CosmosSessionStore;
  interactions: CosmosInteractionStore;
}

/** The Cosmos DB store ports over the containers of `COSMOS_CONTAINERS` (the change feed is the platform's trigger). */
export function cosmosStores(database: Database, options: CosmosStoresOptions = {}): CosmosStores {
  const container = (spec: { name: string }) => database.container(spec.name);
  const search = new CosmosSearchIndex(container(COSMOS_CONTAINERS.interactions));
  return {
    events: new CosmosEventStore(container(COSMOS_CONTAINERS.events), options),
    sessions: new CosmosSessionStore(container(COSMOS_CONTAINERS.sessions)),
    interactions: new CosmosInteractionStore(container(COSMOS_CONTAINERS.interactions)),
    search,
    insights: new CosmosInsightStore(container(COSMOS_CONTAINERS.insights), { retention: options.retention, sessions: container(COSMOS_CONTAINERS.sessions) }),
    directory: new CosmosSessionDirectory(container(COSMOS_CONTAINERS.sessions)),
    projections: new CosmosProjections([container(COSMOS_CONTAINERS.sessions), container(COSMOS_CONTAINERS.interactions)], search),
    close: async () => {
      if (options.ownsClient) database.client.dispose();
    },
  };
}
