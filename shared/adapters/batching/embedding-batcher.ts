import type { Embedder } from '../../application/ports.js';
import { MemoryError } from '../../domain/errors.js';
import { RecentVectors } from './recent-vectors.js';

export interface EmbeddingBatcherOptions {
  /** Most texts in one call of the wrapped embedder (a caller with more is split over several calls). */
  maxTexts: number;
  /** Calls of the wrapped embedder in flight at once; callers arriving while all are busy wait and share the next ones. */
  concurrency: number;
  /** What the memory of recent texts may hold (default RECENT_LIMITS). */
  recent?: { numbers: number; chars: number };
}

/**
 * The memory of recent texts: 2M numbers (8 MB as float32: 4,096 vectors of 512 dimensions, 1,365 of 1,536) and a
 * million characters of text. A projection asks for a window's turns again when it decides the window, a slice after
 * their own (a window's vector is the mean of its turns'), and under load other sessions' slices come between.
 */
const RECENT_LIMITS = { numbers: 2_000_000, chars: 1_000_000 };

/**
 * Callers with this few texts left go first: a search's query, or a session with a turn or two, is not held behind a
 * long backlog's hundreds of texts. The rest keep arrival order and fill each call's remaining room, so they progress.
 */
const SMALL_CALL_TEXTS = 4;

interface Waiting {
  texts: readonly string[];
  vectors: number[][];
  /** Texts not yet handed to a call. */
  next: number;
  /** Texts whose vectors are still to come. */
  outstanding: number;
  failed: boolean;
  resolve: (vectors: number[][]) => void;
  reject: (error: unknown) => void;
}

/** A caller's share of one call: its texts [from, from + count) at [at, at + count) of the call's input. */
interface Part {
  caller: Waiting;
  from: number;
  count: number;
  at: number;
}

/**
 * An Embedder that coalesces concurrent `embed` calls (sessions projected in parallel) into shared calls of the one it
 * wraps: one request of up to `maxTexts` texts instead of one per session, which is what a hosted endpoint's latency
 * and a model thread's per-call overhead reward. Each caller gets its own vectors, in its order.
 *
 * No added delay when idle: a call that finds a free slot goes out once the calls made in the same turn of the event
 * loop have joined it (one setImmediate). Batches grow only under load, while every slot is busy. Callers with a few
 * texts go before larger ones (SMALL_CALL_TEXTS).
 *
 * A text embedded lately is answered from memory (RecentVectors), and a caller's repeated texts are embedded once.
 *
 * A call that fails and carried several callers is repeated once per caller alone, so each caller gets its own
 * outcome (one caller's unembeddable text does not fail the others) — except when the error says the endpoint was
 * unreachable, timed out or overloaded (the endpoint's retries are already spent), which is every caller's error.
 */
export class EmbeddingBatcher implements Embedder {
  readonly model: string;
  readonly dimensions: number;
  private readonly queue: Waiting[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly recent: RecentVectors;

  constructor(
    private readonly inner: Embedder,
    private readonly options: EmbeddingBatcherOptions,
  ) {
    this.model = inner.model;
    this.dimensions = inner.dimensions;
    this.recent = new RecentVectors(options.recent ?? RECENT_LIMITS);
    if (!(options.maxTexts >= 1 && options.concurrency >= 1)) throw new RangeError('EmbeddingBatcher needs maxTexts and concurrency of at least 1');
  }

  warmUp(): Promise<void> {
    return this.inner.warmUp?.() ?? Promise.resolve();
  }

  async embed(texts: readonly string[]): Promise<number[][]> {
    // This caller's vectors, the remembered ones first: held here, as other callers may push them out of memory meanwhile.
    const unique = [...new Set(texts)];
    const found = new Map<string, number[]>();
    for (const text of unique) {
      const vector = this.recent.get(text);
      if (vector) found.set(text, vector);
    }
    const missing = unique.filter((t) => !found.has(t));
    const vectors = await this.queued(missing);
    missing.forEach((text, i) => (found.set(text, vectors[i]!), this.recent.set(text, vectors[i]!)));
    // A repeated text's vector is a copy: callers own what they get.
    const given = new Set<string>();
    return texts.map((t) => (given.has(t) ? found.get(t)!.slice() : (given.add(t), found.get(t)!)));
  }

  remembers(text: string): boolean {
    return this.recent.has(text);
  }

  private queued(texts: readonly string[]): Promise<number[][]> {
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise<number[][]>((resolve, reject) => {
      this.queue.push({ texts, vectors: new Array<number[]>(texts.length), next: 0, outstanding: texts.length, failed: false, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.options.concurrency) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.dispatch();
    });
  }

  /** Starts calls while slots are free, each taking waiting texts in arrival order up to maxTexts. */
  private dispatch(): void {
    while (this.inFlight < this.options.concurrency && this.queue.length > 0) {
      const parts: Part[] = [];
      let size = 0;
      while (size < this.options.maxTexts && this.queue.length > 0) {
        const small = this.queue.findIndex((c) => c.texts.length - c.next <= SMALL_CALL_TEXTS);
        const index = small === -1 ? 0 : small;
        const caller = this.queue[index]!;
        const count = Math.min(caller.texts.length - caller.next, this.options.maxTexts - size);
        parts.push({ caller, from: caller.next, count, at: size });
        caller.next += count;
        size += count;
        if (caller.next === caller.texts.length) this.queue.splice(index, 1);
      }
      this.inFlight += 1;
      void this.run(parts).finally(() => {
        this.inFlight -= 1;
        if (this.queue.length > 0) this.schedule();
      });
    }
  }

  private async run(parts: readonly Part[]): Promise<void> {
    const input = parts.flatMap((p) => p.caller.texts.slice(p.from, p.from + p.count));
    try {
      const vectors = await this.inner.embed(input);
      if (vectors.length !== input.length) throw new MemoryError('internal', `The embedder returned ${vectors.length} vectors for ${input.length} texts`, { model: this.model });
      for (const part of parts) deliver(part, vectors.slice(part.at, part.at + part.count));
    } catch (error) {
      const callers = new Set(parts.map((p) => p.caller));
      if (callers.size === 1 || concernsEveryCaller(error)) {
        for (const part of parts) fail(part.caller, error);
        return;
      }
      // Who does the error belong to? Each caller's share again, alone.
      await Promise.all(
        parts.map(async (part) => {
          try {
            deliver(part, await this.inner.embed(part.caller.texts.slice(part.from, part.from + part.count)));
          } catch (own) {
            fail(part.caller, own);
          }
        }),
      );
    }
  }
}

function deliver({ caller, from, count }: Part, vectors: readonly number[][]): void {
  if (caller.failed) return;
  if (vectors.length !== count) return fail(caller, new MemoryError('internal', `The embedder returned ${vectors.length} vectors for ${count} texts`));
  vectors.forEach((v, i) => (caller.vectors[from + i] = v));
  caller.outstanding -= count;
  if (caller.outstanding === 0) caller.resolve(caller.vectors);
}

function fail(caller: Waiting, error: unknown): void {
  if (caller.failed) return;
  caller.failed = true;
  caller.reject(error);
}

/**
 * An unreachable, timed-out or overloaded endpoint (the hosted adapter's `upstream_unavailable` with a connection
 * reason or a 408/429/5xx status) fails whatever was sent: repeating each caller's share alone would only repeat it.
 */
function concernsEveryCaller(error: unknown): boolean {
  if (!(error instanceof MemoryError) || error.code !== 'upstream_unavailable') return false;
  const { reason, status } = error.details as { reason?: unknown; status?: unknown };
  if (reason === 'timeout' || reason === 'connection') return true;
  return typeof status === 'number' && (status === 408 || status === 429 || status >= 500);
}
