import { randomUUID } from 'node:crypto';
import type { ChangeFeed, Deps, ReflectionConfig, Stores } from '../application/ports.js';
import { openPglite, openPostgres, type Db } from '../adapters/postgres/db.js';
import { migrate } from '../adapters/postgres/migrations.js';
import { postgresStores } from '../adapters/postgres/stores.js';
import { assertOneEmbeddingModel, assertPgvector } from '../adapters/postgres/search.js';
import { SnapshotSearchIndex } from '../adapters/postgres/search-snapshot.js';
import { createLocalModels, ModelThreadPool } from '../adapters/local-models/index.js';
import { EmbeddingBatcher } from '../adapters/batching/embedding-batcher.js';
import { SHORT_LIVED_HEAP } from '../adapters/worker-threads.js';
import { UsageMeter } from '../application/metering.js';
import { modelThreads, projectionParallelism, settings as readSettings, type Settings } from './config.js';
import type { ArtifactStore, BlobStore, DetailMemory } from '../application/artifact-ports.js';
import { PostgresArtifactStore } from '../adapters/postgres/artifacts.js';
import { retentionPolicy, type RetentionPolicy } from '../domain/retention.js';
import type { ForgetConfig, ForgetStore } from '../application/forget-ports.js';
import { PostgresForgetStore } from '../adapters/postgres/forget.js';
import type { ApiKeyStore } from '../application/auth.js';
import { PostgresApiKeyStore } from '../adapters/postgres/api-keys.js';
import { createAuthenticator, type Authenticator } from './auth.js';
import type { SlotStore } from '../application/slot-ports.js';
import { PostgresSlotStore } from '../adapters/postgres/slots.js';
import { WordNetCategories } from '../adapters/local-models/category-words.js';
import { limitHeapGrowth, MemoryBudget, type Shed } from './memory-budget.js';
import type { ProjectionQueue } from '../application/projection-ports.js';
import type { ProjectionSchedule } from '../application/projection-scheduler.js';
import { PostgresProjectionQueue } from '../adapters/postgres/projection-queue.js';

export interface Runtime extends Deps {
  settings: Settings;
  /** Which store is in use, for /health. */
  backend: 'pglite' | 'postgres' | 'cosmos';
  /** Present on the PostgreSQL backends: the local host pumps it into the change-feed function. */
  changeFeed?: ChangeFeed;
  /** Every model call, counted per operation. */
  meter: UsageMeter;
  /** Detail memory: artifacts (store + Blob Storage) and the offload limits. */
  detail: DetailMemory;
  /** Session-end and long-term reflection settings. */
  reflection: ReflectionConfig;
  /** What retention deletes, and when (RETENTION_* settings). */
  retention: RetentionPolicy;
  /** Forget: tombstones, purge and the verification scan of the store in use. */
  forgets: ForgetStore;
  /** Forget: the wait before the last purge round (FORGET_GRACE_SECONDS). */
  forget: ForgetConfig;
  /** API keys (hashes) and the authenticator of AUTH_MODE that every HTTP route and the /mcp endpoint use. */
  apiKeys: ApiKeyStore;
  auth: Authenticator;
  /** Slots (core memory): one event stream per slot. */
  slots: SlotStore;
  /** MEMORY_BUDGET_MB > 0: the governor that sheds caches and refuses appends over the budget (memory-budget.ts). */
  admission?: MemoryBudget;
  /** Sessions whose projection may be pending, and how they are served (PROJECTION_* settings). */
  projectionQueue: ProjectionQueue;
  projection: ProjectionSchedule;
}

/**
 * The models of MODEL_PROVIDER. The embedder every use case gets shares its calls across callers (EmbeddingBatcher):
 * sessions projected at once embed in one call, up to EMBEDDING_BATCH_TEXTS texts, EMBEDDING_CONCURRENCY calls at once,
 * and a text embedded lately is answered from memory. The periods turns refer to are parsed on model threads
 * (`modelThreads` of them): offline, the threads that embed; with hosted models, threads that only parse (the encoder
 * never loads there).
 */
async function openModels(s: Settings, meter: UsageMeter): Promise<Pick<Deps, 'chat' | 'embedder' | 'periods'> & { close: () => Promise<void> }> {
  if (s.MODEL_PROVIDER === 'local') {
    const threads = new ModelThreadPool(modelThreads(s));
    if (s.EMBEDDING_DIMENSIONS !== 512) throw new Error('Invalid settings: EMBEDDING_DIMENSIONS must be 512 with MODEL_PROVIDER=local (the offline sentence encoder)');
    const { embedder, ...local } = createLocalModels(meter, threads);
    return { ...local, periods: threads, embedder: new EmbeddingBatcher(embedder, { maxTexts: s.EMBEDDING_BATCH_TEXTS ?? 32, concurrency: s.EMBEDDING_CONCURRENCY ?? 2 * threads.size }) };
  }
  // Loaded only when used, so the offline default never pulls in the OpenAI SDK.
  const { createOpenAIModels, openAIOptionsFromSettings } = await import('../adapters/openai/index.js');
  const maxTexts = s.EMBEDDING_BATCH_TEXTS ?? 256;
  const { embedder, ...hosted } = createOpenAIModels({ ...openAIOptionsFromSettings(s), embeddingBatch: { maxInputs: maxTexts } }, meter);
  const threads = new ModelThreadPool(modelThreads(s), { resourceLimits: SHORT_LIVED_HEAP });
  return { ...hosted, periods: threads, close: () => threads.close(), embedder: new EmbeddingBatcher(embedder, { maxTexts, concurrency: s.EMBEDDING_CONCURRENCY ?? 4 }) };
}

async function openBlobs(s: Settings): Promise<BlobStore | null> {
  if (!s.ARTIFACTS_BLOB_CONNECTION_STRING && !s.ARTIFACTS_BLOB_ENDPOINT) return null;
  // Loaded only when used, like the Cosmos SDK.
  const { openBlobStore, ensureBlobContainer } = await import('../adapters/blob/azure-blob.js');
  const blobs = openBlobStore({
    container: s.ARTIFACTS_CONTAINER,
    ...(s.ARTIFACTS_BLOB_CONNECTION_STRING ? { connectionString: s.ARTIFACTS_BLOB_CONNECTION_STRING } : { endpoint: s.ARTIFACTS_BLOB_ENDPOINT! }),
  });
  // Azurite / a development account: create the container; in Azure it comes from Bicep.
  if (s.ARTIFACTS_BLOB_CONNECTION_STRING) await ensureBlobContainer(blobs);
  return blobs;
}

async function openStores(
  s: Settings,
  embeddingModel: string,
): Promise<Pick<Runtime, 'backend' | 'changeFeed' | 'forgets' | 'apiKeys' | 'slots' | 'projectionQueue'> & Stores & { artifacts: ArtifactStore; sheds?: Shed[] }> {
  if (s.STORAGE_BACKEND === 'cosmos') {
    // Loaded only when used, so the embedded default never pulls in the Cosmos SDK.
    const { openCosmos } = await import('../adapters/cosmos/client.js');
    const { cosmosStores } = await import('../adapters/cosmos/stores.js');
    const { database } = await openCosmos({ endpoint: s.COSMOS__accountEndpoint!, databaseName: s.COSMOS_DATABASE, ...(s.COSMOS_KEY && { key: s.COSMOS_KEY }) });
    const { CosmosArtifactStore } = await import('../adapters/cosmos/artifacts.js');
    const { COSMOS_CONTAINERS } = await import('../adapters/cosmos/containers.js');
    const { CosmosForgetStore } = await import('../adapters/cosmos/forget.js');
    const { CosmosApiKeyStore } = await import('../adapters/cosmos/api-keys.js');
    const { CosmosSlotStore } = await import('../adapters/cosmos/slots.js');
    const { CosmosProjectionQueue } = await import('../adapters/cosmos/projection-queue.js');
    return {
      backend: 'cosmos',
      ...cosmosStores(database, { ownsClient: true, retention: retentionPolicy(s.RETENTION_SUPERSEDED_INSIGHT_DAYS) }),
      artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)),
      forgets: new CosmosForgetStore(database),
      apiKeys: new CosmosApiKeyStore(database.container(COSMOS_CONTAINERS.apiKeys.name)),
      slots: new CosmosSlotStore(database.container(COSMOS_CONTAINERS.slots.name)),
      projectionQueue: new CosmosProjectionQueue(database.container(COSMOS_CONTAINERS.projectionQueue.name)),
    };
  }
  const db = await openPostgresDb(s);
  await assertPgvector(db);
  await migrate(db);
  await assertOneEmbeddingModel(db, embeddingModel);
  const stores = postgresStores(db);
  // PGlite ranks in process up to SEARCH_SNAPSHOT_ROWS rows (search-snapshot.ts); a PostgreSQL server always in SQL.
  // A failed background build leaves the searches in SQL (the next search starts another): its class and message.
  const onError = (error: unknown) => console.warn(`Search snapshot build failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
  const snapshots = db.kind === 'pglite' && s.SEARCH_SNAPSHOT_ROWS > 0 ? new SnapshotSearchIndex(db, stores.search, { maxRows: s.SEARCH_SNAPSHOT_ROWS, onError }) : undefined;
  const search = snapshots ?? stores.search;
  // Off the request path: the most recently written users' snapshots are built now; searches meanwhile rank in SQL.
  snapshots?.warmRecent().catch(onError);
  return {
    backend: db.kind,
    changeFeed: stores.events,
    ...stores,
    close: async () => {
      await snapshots?.close();
      await stores.close();
    },
    search,
    // What the memory budget's soft mark drops: the snapshots, largest first (rebuilt on their users' next searches).
    ...(snapshots && { sheds: [(bytes: number) => snapshots.shed(bytes)] }),
    artifacts: new PostgresArtifactStore(db),
    forgets: new PostgresForgetStore(db, snapshots),
    apiKeys: new PostgresApiKeyStore(db),
    slots: new PostgresSlotStore(db),
    projectionQueue: new PostgresProjectionQueue(db),
  };
}

/** MEMORY_BUDGET_MB: the governor, shedding `sheds` and V8's garbage (`node --expose-gc`: npm start passes it). */
function memoryBudget(budgetMb: number, sheds: Shed[]): MemoryBudget {
  const collectGarbage = (globalThis as { gc?: () => void }).gc;
  if (!collectGarbage) console.warn('MEMORY_BUDGET_MB without node --expose-gc: over the soft mark only caches are dropped, and garbage waits for V8 (README, Bounded memory)');
  return new MemoryBudget({ budgetBytes: budgetMb * 2 ** 20, sheds, ...(collectGarbage && { collectGarbage }), log: (line) => console.warn(line) });
}

/** The API key store alone, for `npm run keys` (no models, no other stores). */
export async function openApiKeyStore(s: Settings = readSettings()): Promise<{ apiKeys: ApiKeyStore; close: () => Promise<void> }> {
  if (s.STORAGE_BACKEND === 'cosmos') {
    const { openCosmos } = await import('../adapters/cosmos/client.js');
    const { CosmosApiKeyStore } = await import('../adapters/cosmos/api-keys.js');
    const { COSMOS_CONTAINERS } = await import('../adapters/cosmos/containers.js');
    const { client, database } = await openCosmos({ endpoint: s.COSMOS__accountEndpoint!, databaseName: s.COSMOS_DATABASE, ...(s.COSMOS_KEY && { key: s.COSMOS_KEY }) });
    return { apiKeys: new CosmosApiKeyStore(database.container(COSMOS_CONTAINERS.apiKeys.name)), close: async () => client.dispose() };
  }
  const db = await openPostgresDb(s);
  await migrate(db);
  return { apiKeys: new PostgresApiKeyStore(db), close: () => db.close() };
}

export async function createRuntime(s: Settings = readSettings()): Promise<Runtime> {
  limitHeapGrowth(s.HEAP_GROWTH_PERCENT);
  const meter = new UsageMeter();
  // The model threads start on first use; closing the runtime terminates them, after the stores.
  const { close: closeModels, ...models } = await openModels(s, meter);
  const { artifacts, sheds, close: closeStores, ...stores } = await openStores(s, models.embedder.model);
  const blobs = await openBlobs(s);
  // WordNet is data, not a model: the same adapter serves the offline and the hosted models (about 40 MB of heap).
  const categories = s.CATEGORY_LEVELS > 0 ? await WordNetCategories.open({ levels: s.CATEGORY_LEVELS, senses: s.CATEGORY_SENSES, minDepth: s.CATEGORY_MIN_DEPTH }) : undefined;
  const admission = s.MEMORY_BUDGET_MB > 0 ? memoryBudget(s.MEMORY_BUDGET_MB, sheds ?? []) : undefined;
  admission?.start();
  return {
    settings: s,
    ...stores,
    ...(admission && { admission }),
    close: async () => {
      admission?.stop();
      try {
        await closeStores();
      } finally {
        await closeModels();
      }
    },
    detail: {
      artifacts,
      blobs,
      limits: { offloadThresholdTokens: s.OFFLOAD_THRESHOLD_TOKENS, inlineMaxBytes: s.ARTIFACT_INLINE_MAX_BYTES, maxBytes: s.ARTIFACT_MAX_BYTES },
    },
    ...models,
    ...(categories && { categories }),
    meter,
    clock: { now: () => new Date() },
    ids: { newId: randomUUID },
    memory: { kTurnBuffer: s.K_TURN_BUFFER, nActiveTurns: s.N_ACTIVE_TURNS, numRecentSessions: s.NUM_RECENT_SESSIONS, topKFacts: s.TOP_K_FACTS },
    reflection: {
      categories: s.INSIGHT_CATEGORIES,
      confidenceThreshold: s.INSIGHT_CONFIDENCE_THRESHOLD,
      similarityThreshold: s.INSIGHT_SIMILARITY_THRESHOLD,
      minSessionsForAggregation: s.MIN_SESSIONS_FOR_AGGREGATION,
    },
    retention: retentionPolicy(s.RETENTION_SUPERSEDED_INSIGHT_DAYS),
    forget: { graceSeconds: s.FORGET_GRACE_SECONDS },
    projection: { sliceEvents: s.PROJECTION_SLICE_EVENTS, parallelism: projectionParallelism(s), budgetMs: s.PROJECTION_BUDGET_MS },
    apiKeys: stores.apiKeys,
    auth: createAuthenticator(s, stores.apiKeys),
  };
}

let current: Promise<Runtime> | undefined;

/** The process-wide runtime, built on first use (a Functions worker keeps it warm across invocations). */
export const getRuntime = (): Promise<Runtime> => (current ??= createRuntime());

/** Lets a host (or a test) provide the runtime instead of building it from settings. */
export function useRuntime(runtime: Runtime | Promise<Runtime>): void {
  current = Promise.resolve(runtime);
}

export async function closeRuntime(): Promise<void> {
  const runtime = current;
  current = undefined;
  if (runtime) await (await runtime).close();
}

/** A PostgreSQL server when DATABASE_URL is set, else PGlite in this process (PGLITE_* settings). */
function openPostgresDb(s: Settings): Promise<Db> {
  return s.DATABASE_URL ? openPostgres(s.DATABASE_URL) : openPglite(s.MEMORY_DATA_DIR, { sharedBuffersMb: s.PGLITE_SHARED_BUFFERS_MB, ownThread: s.PGLITE_THREAD === 'own' });
}
