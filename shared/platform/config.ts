import { fileURLToPath } from 'node:url';
import { z } from 'zod';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));

const int = (fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER) => z.coerce.number().int().min(min).max(max).default(fallback);
const optionalText = z.string().trim().min(1).optional().catch(undefined);

/** Every app setting the service reads, with its default. Parsed once; a malformed setting fails fast with its name. */
export const Settings = z.object({
  /** `postgres` (PGlite in-process unless DATABASE_URL is set) or `cosmos`. */
  STORAGE_BACKEND: z.enum(['postgres', 'cosmos']).default('postgres'),
  /** PGlite data folder for the embedded default. */
  MEMORY_DATA_DIR: z.string().default(`${projectRoot}.data/pglite`),
  /** Any PostgreSQL 15+ with pgvector; replaces PGlite when set. */
  DATABASE_URL: optionalText,
  COSMOS_DATABASE: z.string().default('agent_memory'),
  /** Cosmos DB account endpoint; identity-based (managed identity / DefaultAzureCredential). */
  COSMOS__accountEndpoint: optionalText,
  /** Only for the Cosmos DB emulator; production uses identity. */
  COSMOS_KEY: optionalText,
  /** `local` = offline models (the default). */
  MODEL_PROVIDER: z.enum(['local']).default('local'),
  EMBEDDING_DIMENSIONS: int(256, 8, 4096),
  K_TURN_BUFFER: int(10, 2, 200),
  N_ACTIVE_TURNS: int(5, 1, 200),
  NUM_RECENT_SESSIONS: int(2, 0, 20),
  /** Largest accepted request body, in bytes. */
  MAX_REQUEST_BYTES: int(1_048_576, 1_024),
  /** Local host: listening address and port. */
  HOST: z.string().default('127.0.0.1'),
  PORT: int(7071, 0, 65_535),
  /** Local host: how often the change-feed pump polls when idle. */
  PUMP_INTERVAL_MS: int(100, 5, 60_000),
  /** Local host: events per pump batch. */
  PUMP_BATCH_SIZE: int(500, 1, 10_000),
});
export type Settings = z.infer<typeof Settings>;

export function loadSettings(env: Record<string, string | undefined> = process.env): Settings {
  const known = Object.fromEntries(Object.keys(Settings.shape).map((k) => [k, env[k] === '' ? undefined : env[k]]));
  const parsed = Settings.safeParse(known);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`Invalid settings: ${problems}`);
  }
  if (parsed.data.STORAGE_BACKEND === 'cosmos' && !parsed.data.COSMOS__accountEndpoint) {
    throw new Error('Invalid settings: COSMOS__accountEndpoint is required when STORAGE_BACKEND=cosmos');
  }
  return parsed.data;
}

let cached: Settings | undefined;
/** The process's settings, read once. */
export const settings = (): Settings => (cached ??= loadSettings());
