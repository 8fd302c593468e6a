import { randomUUID } from 'node:crypto';
import type { ChangeFeed, Deps, Stores } from '../application/ports.js';
import { openPglite, openPostgres } from '../adapters/postgres/db.js';
import { migrate } from '../adapters/postgres/migrations.js';
import { postgresStores } from '../adapters/postgres/stores.js';
import { createLocalModels } from '../adapters/local-models/index.js';
import { UsageMeter } from '../application/metering.js';
import { settings as readSettings, type Settings } from './config.js';

export interface Runtime extends Deps {
  settings: Settings;
  /** Which store is in use, for /health. */
  backend: 'pglite' | 'postgres' | 'cosmos';
  /** Present on the PostgreSQL backends: the local host pumps it into the change-feed function. */
  changeFeed?: ChangeFeed;
  /** Every model call, counted per operation. */
  meter: UsageMeter;
}

async function openModels(s: Settings, meter: UsageMeter): Promise<Pick<Deps, 'chat' | 'embedder'>> {
  if (s.MODEL_PROVIDER === 'local') {
    if (s.EMBEDDING_DIMENSIONS !== 512) throw new Error('Invalid settings: EMBEDDING_DIMENSIONS must be 512 with MODEL_PROVIDER=local (the offline sentence encoder)');
    return createLocalModels(meter);
  }
  // Loaded only when used, so the offline default never pulls in the OpenAI SDK.
  const { createOpenAIModels, openAIOptionsFromSettings } = await import('../adapters/openai/index.js');
  return createOpenAIModels(openAIOptionsFromSettings(s), meter);
}

async function openStores(s: Settings): Promise<Pick<Runtime, 'backend' | 'changeFeed'> & Stores> {
  if (s.STORAGE_BACKEND === 'cosmos') {
    // Loaded only when used, so the embedded default never pulls in the Cosmos SDK.
    const { openCosmos } = await import('../adapters/cosmos/client.js');
    const { cosmosStores } = await import('../adapters/cosmos/stores.js');
    const { database } = await openCosmos({ endpoint: s.COSMOS__accountEndpoint!, databaseName: s.COSMOS_DATABASE, ...(s.COSMOS_KEY && { key: s.COSMOS_KEY }) });
    return { backend: 'cosmos', ...cosmosStores(database, { ownsClient: true }) };
  }
  const db = s.DATABASE_URL ? await openPostgres(s.DATABASE_URL) : await openPglite(s.MEMORY_DATA_DIR);
  await migrate(db);
  const stores = postgresStores(db);
  return { backend: db.kind, changeFeed: stores.events, ...stores };
}

export async function createRuntime(s: Settings = readSettings()): Promise<Runtime> {
  const meter = new UsageMeter();
  const models = await openModels(s, meter);
  const stores = await openStores(s);
  return {
    settings: s,
    ...stores,
    ...models,
    meter,
    clock: { now: () => new Date() },
    ids: { newId: randomUUID },
    memory: { kTurnBuffer: s.K_TURN_BUFFER, nActiveTurns: s.N_ACTIVE_TURNS, numRecentSessions: s.NUM_RECENT_SESSIONS, topKFacts: s.TOP_K_FACTS },
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
