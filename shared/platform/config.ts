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
  /** Insight categories for session reflection, comma-separated. */
  INSIGHT_CATEGORIES: z
    .string()
    .default('demographics,financial_goals,risk_profile,current_situation,concern,preference')
    .transform((s) => s.split(',').map((c) => c.trim()).filter(Boolean))
    .pipe(z.array(z.string().regex(/^[a-z][a-z0-9_]*$/, 'categories are snake_case words')).min(1)),
  K_TURN_BUFFER: int(10, 2, 200),
  N_ACTIVE_TURNS: int(5, 1, 200),
  NUM_RECENT_SESSIONS: int(2, 0, 20),
  /** Facts a search returns unless the request sets topK. */
  TOP_K_FACTS: int(5, 1, 100),
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
