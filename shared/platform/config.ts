import os from 'node:os';
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
  /** PGlite's page cache (PostgreSQL's shared_buffers) in MB: most of its WASM memory, which never shrinks. */
  PGLITE_SHARED_BUFFERS_MB: int(32, 1, 4096),
  /**
   * `own`: PGlite runs on a thread of its own, so Postgres runs beside the service's thread instead of on it; `service`:
   * on the service's thread (README, Settings).
   */
  PGLITE_THREAD: z.enum(['own', 'service']).default('own'),
  /** Any PostgreSQL 15+ with pgvector; replaces PGlite when set. */
  DATABASE_URL: optionalText,
  COSMOS_DATABASE: z.string().default('agent_memory'),
  /** Cosmos DB account endpoint; identity-based (managed identity / DefaultAzureCredential). */
  COSMOS__accountEndpoint: optionalText,
  /** Only for the Cosmos DB emulator; production uses identity. */
  COSMOS_KEY: optionalText,
  /** `local` = offline models (the default, no network); `azure-openai`; `openai` = any OpenAI-compatible endpoint. */
  MODEL_PROVIDER: z.enum(['local', 'azure-openai', 'openai']).default('local'),
  /** Azure OpenAI endpoint; identity-based (Cognitive Services OpenAI User) unless AZURE_OPENAI_API_KEY is set. */
  AZURE_OPENAI_ENDPOINT: optionalText,
  AZURE_OPENAI_API_KEY: optionalText,
  AZURE_OPENAI_API_VERSION: z.string().default('2024-10-21'),
  AZURE_OPENAI_CHAT_DEPLOYMENT: z.string().default('chat'),
  AZURE_OPENAI_MINI_DEPLOYMENT: z.string().default('mini'),
  AZURE_OPENAI_EMBEDDING_DEPLOYMENT: z.string().default('embeddings'),
  /** OpenAI-compatible endpoint (MODEL_PROVIDER=openai). */
  OPENAI_BASE_URL: optionalText,
  OPENAI_API_KEY: optionalText,
  OPENAI_CHAT_MODEL: z.string().default('gpt-4o'),
  OPENAI_MINI_MODEL: z.string().default('gpt-4o-mini'),
  OPENAI_EMBEDDING_MODEL: z.string().default('text-embedding-3-small'),
  /** Vector size: 512 for the offline sentence encoder; for hosted models the size requested from the embedding model. */
  EMBEDDING_DIMENSIONS: int(512, 8, 4096),
  /** Per-call timeout and retries (429/5xx/timeouts, honouring retry-after) for hosted models. */
  MODEL_TIMEOUT_MS: int(30_000, 100),
  MODEL_MAX_RETRIES: int(4, 0, 10),
  /**
   * Model threads. Offline models: threads that embed, run the chat tasks and parse referred periods, each with its own
   * copy of the model. Hosted models: threads that only parse the periods turns refer to. Default: modelThreads.
   */
  MODEL_THREADS: z.coerce.number().int().min(1).max(64).optional(),
  /** Most texts in one embedding call, shared by the sessions projected at once; default 256 hosted, 32 offline. */
  EMBEDDING_BATCH_TEXTS: z.coerce.number().int().min(1).max(2048).optional(),
  /** Embedding calls in flight at once; callers arriving meanwhile share the next call. Default 4 hosted, 2 × MODEL_THREADS offline. */
  EMBEDDING_CONCURRENCY: z.coerce.number().int().min(1).max(256).optional(),
  /** Insight categories for session reflection, comma-separated. */
  INSIGHT_CATEGORIES: z
    .string()
    .default('demographics,financial_goals,risk_profile,current_situation,concern,preference')
    .transform((s) => s.split(',').map((c) => c.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'categories are snake_case words')).min(1)),
  K_TURN_BUFFER: int(10, 2, 200),
  N_ACTIVE_TURNS: int(5, 1, 200),
  NUM_RECENT_SESSIONS: int(2, 0, 20),
  /**
   * PGlite: rows (turns and interactions, about 1.1–1.35 kB each with 512-d vectors) of recently searched users kept in memory and
   * ranked there (README, Fact search); a user larger than this is ranked in SQL. The default holds a 100k-turn user. 0 =
   * always SQL. Unused with DATABASE_URL.
   */
  SEARCH_SNAPSHOT_ROWS: int(200_000, 0),
  /**
   * Resident memory the process should stay under, in MB (README, Bounded memory); 0 = no budget. Over 80% it drops
   * search snapshots; over 90% appends are refused with 503 `overloaded` and Retry-After until it is back under 85%.
   */
  MEMORY_BUDGET_MB: z.coerce.number().int().max(1_048_576).refine((mb) => mb === 0 || mb >= 128, 'at least 128 (MB), or 0 for no budget').default(0),
  /**
   * How far V8 lets the JavaScript heap grow past what its last full collection kept, in percent (README, Bounded
   * memory); 0 = V8's own choice, which under a high allocation rate is up to 4× and so most of the growth is garbage.
   */
  HEAP_GROWTH_PERCENT: int(50, 0, 300),
  /**
   * Category words (README, Fact search): each turn's nouns are matched with their WordNet hypernyms up to this many
   * levels ("Spain" → "European country", "country"); 0 = none. CATEGORY_SENSES: the noun's most frequent sense
   * (`first`) or all; CATEGORY_MIN_DEPTH: categories closer to WordNet's root than this ("entity", "act") are left out.
   */
  CATEGORY_LEVELS: int(2, 0, 6),
  CATEGORY_SENSES: z.enum(['first', 'all']).default('first'),
  CATEGORY_MIN_DEPTH: int(4, 0, 20),
  /** Facts a search returns unless the request sets topK. */
  TOP_K_FACTS: int(5, 1, 100),
  /** Turns with more tokens than this are stored as artifacts at append; the event keeps a MemoryRef. */
  OFFLOAD_THRESHOLD_TOKENS: int(500, 1, 1_000_000),
  /** Artifact contents up to this many bytes stay in the database; larger ones go to Blob Storage. */
  ARTIFACT_INLINE_MAX_BYTES: int(65_536, 0, 1_048_576),
  /** Largest artifact content, in bytes (413 above it). */
  ARTIFACT_MAX_BYTES: int(16_777_216, 1_024, 268_435_456),
  /** Blob endpoint for artifact contents in Azure, reached with the managed identity. */
  ARTIFACTS_BLOB_ENDPOINT: optionalText,
  /** Connection string for Azurite or a development account (instead of the endpoint). */
  ARTIFACTS_BLOB_CONNECTION_STRING: optionalText,
  /** Blob container of artifact contents. */
  ARTIFACTS_CONTAINER: z.string().regex(/^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$/, 'a blob container name').default('artifacts'),
  /**
   * Local host: Azurite (started unless a blob endpoint or connection string is set) keeps its data here; default
   * `.data/azurite` beside the default PGlite folder, `<MEMORY_DATA_DIR>-azurite` for another one, memory only for memory://.
   */
  AZURITE_DATA_DIR: optionalText,
  /** Local host: Azurite's blob port; 0 = any free port. */
  AZURITE_BLOB_PORT: int(0, 0, 65_535),
  /**
   * Who may call (README, Authentication and authorization): `entra` (Entra ID bearer tokens), `apikey` (keys made by
   * `npm run keys`), `entra+apikey` (either), or `open` (no credentials; the local host only, bound to loopback).
   * Unset means `open` outside Azure; in Azure (the Functions host) an unset or `open` AUTH_MODE refuses to start.
   */
  AUTH_MODE: z.enum(['entra', 'apikey', 'entra+apikey', 'open']).default('open'),
  /** Entra ID tenant (directory) id whose tokens are accepted: issuer `https://login.microsoftonline.com/<tenant>/v2.0` (or the v1 `sts.windows.net` one). */
  ENTRA_TENANT_ID: optionalText,
  /** Accepted token audiences, comma-separated: the API's app registration (`api://…` Application ID URI and/or its client id). */
  ENTRA_AUDIENCE: optionalText,
  /** The tenant's signing keys; default `https://login.microsoftonline.com/<tenant>/discovery/v2.0/keys`. */
  ENTRA_JWKS_URL: optionalText,
  /** The token claim that is the user id of a user-bound token. */
  ENTRA_USER_CLAIM: z.string().trim().min(1).default('oid'),
  /** The app role (`roles` claim) that gives a token every user: for services (client credentials) and admin tools. */
  ENTRA_ALL_USERS_ROLE: z.string().trim().min(1).default('Memory.All'),
  /** Largest accepted request body, in bytes. */
  MAX_REQUEST_BYTES: int(1_048_576, 1_024),
  /** Local host: a request body that pauses longer than this is answered 408 and its connection closed. */
  BODY_TIMEOUT_MS: int(5_000, 50, 300_000),
  /** Local host: listening address and port. */
  HOST: z.string().default('127.0.0.1'),
  PORT: int(7071, 0, 65_535),
  /** Local host: how often the change-feed pump polls when idle. */
  PUMP_INTERVAL_MS: int(100, 5, 60_000),
  /** Local host: events per pump batch. */
  PUMP_BATCH_SIZE: int(500, 1, 10_000),
  /** Projection: events past a session's checkpoint projected per slice; sessions take turns slice by slice. */
  PROJECTION_SLICE_EVENTS: int(128, 1, 10_000),
  /**
   * Projection: queued sessions served at once. Default 4 with the offline models (the model threads are the
   * bound), 32 with hosted ones (each session mostly waits on the endpoint).
   */
  PROJECTION_PARALLELISM: z.coerce.number().int().min(1).max(256).optional(),
  /** Projection: how long one serving of the queue (the timer, the local host's loop) goes on claiming slices. */
  PROJECTION_BUDGET_MS: int(60_000, 100, 600_000),
  /** NCRONTAB schedule (6 fields, UTC) of the projection queue's timer, which serves what the change feed left queued. */
  PROJECTION_QUEUE_SCHEDULE: z.string().trim().min(1).default('*/5 * * * * *'),
  /** Session end: a session without turns for this long is ended by the idle check. */
  SESSION_IDLE_TIMEOUT_MINUTES: int(30, 1, 10_080),
  /** NCRONTAB schedule (6 fields, UTC) of the idle-session check. */
  IDLE_CHECK_SCHEDULE: z.string().trim().min(1).default('0 */5 * * * *'),
  /** No-insight sessions reflected on together once this many have piled up. */
  MIN_SESSIONS_FOR_AGGREGATION: int(3, 1, 100),
  /** Insights below this confidence are dropped. */
  INSIGHT_CONFIDENCE_THRESHOLD: z.coerce.number().min(0).max(1).default(0.7),
  /** Cosine similarity at or above which two insights of one category are merged as near-duplicates. */
  INSIGHT_SIMILARITY_THRESHOLD: z.coerce.number().min(0).max(1).default(0.92),
  /** NCRONTAB schedule (6 fields, UTC) of the nightly consolidation. */
  NIGHTLY_SCHEDULE: z.string().trim().min(1).default('0 0 3 * * *'),
  /** Users reflected on at once by the nightly consolidation. */
  NIGHTLY_PARALLELISM: int(4, 1, 64),
  /** Days a superseded or merged insight is kept for audit before retention deletes it; 0 = keep for good. */
  RETENTION_SUPERSEDED_INSIGHT_DAYS: int(30, 0, 3650),
  /**
   * Forget: how long the tombstone stays after a clean scan before the last purge round and its clear, so a write that
   * raced the forget and whose writer died before its check lands first (README, Forget). At least the function
   * timeout (host.json `functionTimeout`, 10 minutes); 0 = no wait.
   */
  FORGET_GRACE_SECONDS: int(600, 0, 86_400),
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
  checkAuth(parsed.data, env);
  return parsed.data;
}

/**
 * MODEL_THREADS, or its default for the models in use: every core for the offline encoder; one parse thread for hosted
 * models, which only parse the turns that may refer to another day (at 200 and 1,000 turns/s one thread projected as
 * fast as two and saved its 57 MB; README, Scale).
 */
export const modelThreads = (s: Settings): number => s.MODEL_THREADS ?? (s.MODEL_PROVIDER === 'local' ? os.availableParallelism() : 1);

/** PROJECTION_PARALLELISM, or its default for the models in use. */
export const projectionParallelism = (s: Settings): number => s.PROJECTION_PARALLELISM ?? (s.MODEL_PROVIDER === 'local' ? 4 : 32);

/** True under the Functions host (Azure sets WEBSITE_INSTANCE_ID; the host and `func start` set FUNCTIONS_WORKER_RUNTIME). */
export const inFunctionsHost = (env: Record<string, string | undefined> = process.env) => Boolean(env.WEBSITE_INSTANCE_ID || env.FUNCTIONS_WORKER_RUNTIME);

function checkAuth(s: Settings, env: Record<string, string | undefined>): void {
  if (inFunctionsHost(env) && (!env.AUTH_MODE || s.AUTH_MODE === 'open')) {
    throw new Error('Invalid settings: AUTH_MODE must be entra, apikey or entra+apikey under the Functions host (open is for the local host on loopback)');
  }
  if (s.AUTH_MODE.includes('entra') && (!s.ENTRA_TENANT_ID || !s.ENTRA_AUDIENCE)) {
    throw new Error(`Invalid settings: ENTRA_TENANT_ID and ENTRA_AUDIENCE are required when AUTH_MODE=${s.AUTH_MODE}`);
  }
}

let cached: Settings | undefined;
/** The process's settings, read once. */
export const settings = (): Settings => (cached ??= loadSettings());
