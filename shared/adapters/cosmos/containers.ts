import {
  BulkOperationType,
  PartitionKeyDefinitionVersion,
  PartitionKeyKind,
  VectorEmbeddingDataType,
  VectorEmbeddingDistanceFunction,
  VectorIndexType,
  type Container,
  type ContainerDefinition,
  type IndexingPolicy,
  type OperationInput,
} from '@azure/cosmos';

/**
 * The Cosmos DB containers of the `agent_memory` database (ARCHITECTURE §5). Production containers are declared in
 * Bicep; a consistency test compares them with this constant, so keep it plain data.
 *
 * - `partitionKey`: one logical partition holds one user's memory; the Functions extension's `leases` use `/id`.
 * - `defaultTtl: -1`: TTL is on but nothing expires unless an item sets its own `ttl` (TTL classes, retention).
 * - `vectorPaths`: float32 embeddings compared by cosine distance, DiskANN-indexed; their dimensions come from the
 *   configured embedder, so they are filled in by `containerDefinitions`.
 * - `fullTextPaths`: BM25 (`FullTextScore`) fields, English.
 * - Declare only paths a query reads: every vector and full-text path costs index work on each write. (Interaction
 *   topics and entities are not full-text searched, and artifacts carry no description vector.)
 * - `compositeIndexes`: for queries that filter and order on two fields (a session's events by seq; sessions by status
 *   and last activity, which the idle-session sweep reads; queued sessions by when they were served and queued).
 */
export const COSMOS_CONTAINERS = {
  events: { name: 'events', partitionKey: '/userId', defaultTtl: -1, vectorPaths: [], fullTextPaths: [], compositeIndexes: [['/sessionId', '/seq']] },
  sessions: {
    name: 'sessions',
    partitionKey: '/userId',
    defaultTtl: -1,
    vectorPaths: ['/summaryVector'],
    fullTextPaths: ['/summary'],
    compositeIndexes: [['/status', '/lastActivityAt']],
  },
  interactions: {
    name: 'interactions',
    partitionKey: '/userId',
    defaultTtl: -1,
    vectorPaths: ['/contentVector', '/summaryVector'],
    fullTextPaths: ['/content', '/summary'],
    compositeIndexes: [],
  },
  insights: { name: 'insights', partitionKey: '/userId', defaultTtl: -1, vectorPaths: ['/insightVector'], fullTextPaths: ['/text'], compositeIndexes: [] },
  artifacts: { name: 'artifacts', partitionKey: '/userId', defaultTtl: -1, vectorPaths: [], fullTextPaths: ['/description'], compositeIndexes: [] },
  /**
   * Slot streams (core memory), one immutable item per event; global slots in the partition `~global`. TTL off: an expired
   * slot is filtered by its readers, since a newer event expiring must never leave an older one as the stream's latest.
   */
  slots: { name: 'slots', partitionKey: '/userId', defaultTtl: null, vectorPaths: [], fullTextPaths: [], compositeIndexes: [['/stream', '/version']] },
  /** Forget tombstones (shared/adapters/cosmos/forget.ts): one per forget in progress, deleted when it has completed. */
  forgets: { name: 'forgets', partitionKey: '/userId', defaultTtl: null, vectorPaths: [], fullTextPaths: [], compositeIndexes: [] },
  /** Sessions whose projection may be pending (shared/adapters/cosmos/projection-queue.ts): one item per queued session. */
  projectionQueue: { name: 'projectionQueue', partitionKey: '/userId', defaultTtl: null, vectorPaths: [], fullTextPaths: [], compositeIndexes: [['/servedAt', '/queuedAt']] },
  /** API keys (hashes only), one item per key: `/id` = the key id, read by point reads. */
  apiKeys: { name: 'apiKeys', partitionKey: '/id', defaultTtl: null, vectorPaths: [], fullTextPaths: [], compositeIndexes: [] },
  leases: { name: 'leases', partitionKey: '/id', defaultTtl: null, vectorPaths: [], fullTextPaths: [], compositeIndexes: [] },
} as const satisfies Record<string, CosmosContainerSpec>;

export interface CosmosContainerSpec {
  name: string;
  partitionKey: string;
  /** -1: per-item TTL enabled, no default expiry; null: TTL off. */
  defaultTtl: -1 | null;
  vectorPaths: readonly string[];
  fullTextPaths: readonly string[];
  /** Each entry: paths of one composite index, all ascending. */
  compositeIndexes: readonly (readonly string[])[];
}

export type CosmosContainerName = keyof typeof COSMOS_CONTAINERS;

export const FULL_TEXT_LANGUAGE = 'en-US';

/** The full container definitions (as the SDK and the ARM resource take them) for embeddings of `dimensions`. */
export function containerDefinitions(dimensions: number): ContainerDefinition[] {
  if (!Number.isInteger(dimensions) || dimensions < 1) throw new RangeError(`Vector dimensions must be a positive integer, got ${dimensions}`);
  return Object.values(COSMOS_CONTAINERS).map((spec: CosmosContainerSpec) => {
    const indexingPolicy: IndexingPolicy = {
      indexingMode: 'consistent',
      automatic: true,
      includedPaths: [{ path: '/*' }],
      // Vectors are served by their vector index; range-indexing every float would only cost RUs and storage.
      excludedPaths: [{ path: '/"_etag"/?' }, ...spec.vectorPaths.map((path) => ({ path: `${path}/*` }))],
    };
    const definition: ContainerDefinition = {
      id: spec.name,
      partitionKey: { paths: [spec.partitionKey], kind: PartitionKeyKind.Hash, version: PartitionKeyDefinitionVersion.V2 },
      indexingPolicy,
      ...(spec.defaultTtl !== null && { defaultTtl: spec.defaultTtl }),
    };
    if (spec.vectorPaths.length > 0) {
      definition.vectorEmbeddingPolicy = {
        vectorEmbeddings: spec.vectorPaths.map((path) => ({
          path,
          dataType: VectorEmbeddingDataType.Float32,
          distanceFunction: VectorEmbeddingDistanceFunction.Cosine,
          dimensions,
        })),
      };
      indexingPolicy.vectorIndexes = spec.vectorPaths.map((path) => ({ path, type: VectorIndexType.DiskANN }));
    }
    if (spec.compositeIndexes.length > 0) {
      indexingPolicy.compositeIndexes = spec.compositeIndexes.map((paths) => paths.map((path) => ({ path, order: 'ascending' as const })));
    }
    if (spec.fullTextPaths.length > 0) {
      definition.fullTextPolicy = {
        defaultLanguage: FULL_TEXT_LANGUAGE,
        fullTextPaths: spec.fullTextPaths.map((path) => ({ path, language: FULL_TEXT_LANGUAGE })),
      };
      indexingPolicy.fullTextIndexes = spec.fullTextPaths.map((path) => ({ path }));
    }
    return definition;
  });
}

/** The HTTP status of a Cosmos SDK error (ErrorResponse carries it as `code`). */
export function statusOf(error: unknown): number | undefined {
  const code = typeof error === 'object' && error !== null && 'code' in error ? error.code : undefined;
  return typeof code === 'number' ? code : undefined;
}

/**
 * Runs a transactional batch of creates, led by a read of the item they follow when there is one: true when every
 * operation succeeded, false when the batch lost a race (a create's id was taken, 409, or the item read is gone, 404:
 * a forget purged the stream after the writer planned), else throws. A failed batch does not throw: the failing
 * operation carries its status, the others 424.
 */
export async function createdInBatch(container: Container, partitionKey: string, operations: OperationInput[], what: string): Promise<boolean> {
  const response = await container.items.batch(operations, partitionKey);
  const statuses = (response.result ?? []).map((r) => r.statusCode);
  if (statuses.length === operations.length && statuses.every((s) => s >= 200 && s < 300)) return true;
  if (response.code === 409 || statuses.includes(409)) return false;
  if (operations[0]?.operationType === BulkOperationType.Read && statuses[0] === 404) return false;
  throw new Error(`${what} batch failed: HTTP ${response.code ?? '?'}, operation statuses ${statuses.join(',')}`);
}
