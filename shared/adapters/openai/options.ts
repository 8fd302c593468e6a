/** Deployment names (Azure OpenAI) or model names (OpenAI-compatible) per use. */
export interface ModelNames {
  /** Reflection and synthesis. */
  chat: string;
  /** Metadata, session summaries, the retrieval agent. */
  mini: string;
  embeddings: string;
}

export interface RetryPolicy {
  /** Retries after the first attempt, for 408/429/5xx, timeouts and connection errors. */
  maxRetries: number;
  /** First backoff delay; doubles per retry, with jitter. */
  initialDelayMs: number;
  maxDelayMs: number;
  /** A longer `retry-after` / `retry-after-ms` than this is cut to it. */
  maxRetryAfterMs: number;
}

interface CommonOptions {
  /** The size every embedding must have; requested from text-embedding-3 models. */
  dimensions: number;
  /** Per-request timeout (each attempt). */
  timeoutMs: number;
  maxRetries: number;
  /** Backoff tuning; defaults suit production (0.5 s doubling to 8 s, retry-after capped at 30 s). */
  backoff?: Partial<Omit<RetryPolicy, 'maxRetries'>>;
  /** Send `dimensions` with embedding requests (text-embedding-3 models). Default: true unless the model is ada-002. */
  requestDimensions?: boolean;
  /** Wire encoding of embeddings; `base64` (the SDK default) is smaller. Use `float` for servers without base64. */
  embeddingEncoding?: 'base64' | 'float';
  /** Limits per embedding request: inputs (default 256) and an approximate token total (default 100 000). */
  embeddingBatch?: { maxInputs?: number; maxTokens?: number };
}

export type OpenAIModelOptions = CommonOptions &
  (
    | {
        provider: 'azure-openai';
        /** Resource endpoint, e.g. `https://my-resource.openai.azure.com`. */
        endpoint: string;
        apiVersion: string;
        deployments: ModelNames;
        /** Without a key, Microsoft Entra ID through DefaultAzureCredential (managed identity in Azure). */
        apiKey?: string;
        /** Overrides the Entra ID token source (tests, custom credentials). */
        azureTokenProvider?: () => Promise<string>;
      }
    | {
        provider: 'openai';
        /** Base URL including the version path, e.g. `https://api.openai.com/v1`. */
        baseURL: string;
        apiKey: string;
        models: ModelNames;
      }
  );

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';

/** The app settings the hosted model adapters read (the platform's `Settings` has them; the adapter does not import it). */
export interface ModelSettings {
  MODEL_PROVIDER: string;
  AZURE_OPENAI_ENDPOINT?: string | undefined;
  AZURE_OPENAI_API_KEY?: string | undefined;
  AZURE_OPENAI_API_VERSION: string;
  AZURE_OPENAI_CHAT_DEPLOYMENT: string;
  AZURE_OPENAI_MINI_DEPLOYMENT: string;
  AZURE_OPENAI_EMBEDDING_DEPLOYMENT: string;
  OPENAI_BASE_URL?: string | undefined;
  OPENAI_API_KEY?: string | undefined;
  OPENAI_CHAT_MODEL: string;
  OPENAI_MINI_MODEL: string;
  OPENAI_EMBEDDING_MODEL: string;
  EMBEDDING_DIMENSIONS: number;
  MODEL_TIMEOUT_MS: number;
  MODEL_MAX_RETRIES: number;
}

/**
 * Maps the app settings to adapter options for MODEL_PROVIDER `azure-openai` or `openai`. Throws naming the missing
 * setting: AZURE_OPENAI_ENDPOINT for Azure (the key is optional: identity is the default), OPENAI_API_KEY for OpenAI
 * (OPENAI_BASE_URL defaults to api.openai.com; a keyless local server takes any placeholder key).
 */
export function openAIOptionsFromSettings(settings: ModelSettings): OpenAIModelOptions {
  const common = {
    dimensions: settings.EMBEDDING_DIMENSIONS,
    timeoutMs: settings.MODEL_TIMEOUT_MS,
    maxRetries: settings.MODEL_MAX_RETRIES,
  };
  switch (settings.MODEL_PROVIDER) {
    case 'azure-openai': {
      if (!settings.AZURE_OPENAI_ENDPOINT) throw new Error('Invalid settings: AZURE_OPENAI_ENDPOINT is required when MODEL_PROVIDER=azure-openai');
      return {
        ...common,
        provider: 'azure-openai',
        endpoint: settings.AZURE_OPENAI_ENDPOINT,
        apiVersion: settings.AZURE_OPENAI_API_VERSION,
        deployments: {
          chat: settings.AZURE_OPENAI_CHAT_DEPLOYMENT,
          mini: settings.AZURE_OPENAI_MINI_DEPLOYMENT,
          embeddings: settings.AZURE_OPENAI_EMBEDDING_DEPLOYMENT,
        },
        ...(settings.AZURE_OPENAI_API_KEY && { apiKey: settings.AZURE_OPENAI_API_KEY }),
      };
    }
    case 'openai': {
      if (!settings.OPENAI_API_KEY) throw new Error('Invalid settings: OPENAI_API_KEY is required when MODEL_PROVIDER=openai');
      return {
        ...common,
        provider: 'openai',
        baseURL: settings.OPENAI_BASE_URL ?? DEFAULT_OPENAI_BASE_URL,
        apiKey: settings.OPENAI_API_KEY,
        models: { chat: settings.OPENAI_CHAT_MODEL, mini: settings.OPENAI_MINI_MODEL, embeddings: settings.OPENAI_EMBEDDING_MODEL },
      };
    }
    default:
      throw new Error(`Invalid settings: MODEL_PROVIDER=${settings.MODEL_PROVIDER} is not a hosted model provider (expected azure-openai or openai)`);
  }
}
