import type { ChatModel, Embedder, Meter } from '../../application/ports.js';
import { OpenAIChatModel } from './chat-model.js';
import { OpenAIEmbedder } from './embedder.js';
import { createClient, ModelEndpoint, retryPolicy } from './endpoint.js';
import type { OpenAIModelOptions } from './options.js';

export { openAIOptionsFromSettings, type ModelNames, type ModelSettings, type OpenAIModelOptions, type RetryPolicy } from './options.js';

/**
 * The hosted models (Azure OpenAI or any OpenAI-compatible endpoint) behind the ChatModel and Embedder ports, sharing
 * one SDK client. Every request — retries and failures included — is recorded through `meter`. Nothing here logs;
 * errors carry statuses and reasons, never prompts, outputs or keys.
 */
export function createOpenAIModels(options: OpenAIModelOptions, meter: Meter): { chat: ChatModel; embedder: Embedder } {
  const endpoint = new ModelEndpoint(createClient(options), retryPolicy(options), meter);
  const names = options.provider === 'azure-openai' ? options.deployments : options.models;
  return {
    chat: new OpenAIChatModel(endpoint, options.provider, { chat: names.chat, mini: names.mini }),
    embedder: new OpenAIEmbedder(endpoint, {
      provider: options.provider,
      name: names.embeddings,
      dimensions: options.dimensions,
      requestDimensions: options.requestDimensions ?? !/ada-002/i.test(names.embeddings),
      encoding: options.embeddingEncoding ?? 'base64',
      maxInputs: options.embeddingBatch?.maxInputs ?? 256,
      maxTokens: options.embeddingBatch?.maxTokens ?? 100_000,
    }),
  };
}
