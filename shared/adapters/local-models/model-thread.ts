import type { ResourceLimits, Worker } from 'node:worker_threads';
import type { ChatTaskInput, ChatTaskName } from '../../application/model-tasks.js';
import type { PeriodReader } from '../../application/ports.js';
import type { ErrorCode } from '../../contracts/problem.js';
import { MemoryError } from '../../domain/errors.js';
import type { Period } from '../../domain/time-expressions.js';
import type { LoadEncoder } from './use-lite.js';
import { siblingModule, startWorker } from '../worker-threads.js';

/** What the main thread asks the model thread (model-worker.ts). */
export type ModelRequest =
  | { id: number; op: 'load' }
  | { id: number; op: 'embed'; texts: string[] }
  | { id: number; op: 'solve'; task: string; input: unknown }
  | { id: number; op: 'periods'; turns: { text: string; at: string }[] };

/**
 * The model thread's answer to one request: raw vectors (row-major float32), a task's unvalidated output, the periods
 * turns refer to, or an error.
 */
export type ModelReply =
  | { id: number; ok: true; vectors?: { rows: number; dimensions: number; data: Float32Array }; output?: unknown; periods?: (Period | undefined)[] }
  | { id: number; ok: false; error: { message: string; code?: ErrorCode; details?: Record<string, unknown> } };

export interface ModelThreadData {
  nice: number;
}

export interface ModelThreadOptions {
  /**
   * Linux nice value for the thread (default 10; 0 keeps the process's priority). Model work is background work
   * (projection, reflection): when the CPU is saturated, requests get it first and the projection catches up when the
   * load drops. Where the kernel's autogroup scheduling is on (as on the machines this was measured on), a nice value
   * ranks threads within the process's session only; where it is off, also against other busy processes.
   */
  nice?: number;
  /**
   * The thread's V8 heap limits (default: V8's). A thread that only parses periods keeps a small young generation: at
   * V8's default (semi-spaces of 16 MB) its heap is twice what it holds live.
   */
  resourceLimits?: ResourceLimits;
  /** The worker module (tests substitute one). Default: model-worker next to this module, `.ts` or `.js` like it. */
  entry?: URL;
}

type Request = ModelRequest extends infer R ? (R extends ModelRequest ? Omit<R, 'id'> : never) : never;
type Success = Extract<ModelReply, { ok: true }>;

const CLOSED = 'The model threads were closed';

/**
 * The models' own thread (a `worker_threads` Worker running model-worker.ts): TensorFlow.js inference, the local chat
 * model's rules and the date parser of referred periods run there, so a projection never holds up the requests this
 * thread serves.
 * - Lazy: the thread starts on the first request, and the model loads in it on the first `load` or `embed` (never for
 *   `periods` alone: with hosted models the thread only parses periods).
 * - Requests are answered one at a time, chat tasks and periods before waiting embedding batches. A request that fails in the
 *   thread rejects with a MemoryError (the thread's own code when it threw one, `internal` otherwise).
 * - If the thread dies (an uncaught error, an out-of-memory exit), every request in flight rejects with an error that
 *   says so, and the next request starts a new thread.
 * - It keeps the process alive only while a request is in flight, and `close()` terminates it (the runtime's close).
 */
export class ModelThread implements OfflineModelThreads, PeriodReader {
  readonly size = 1;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (reply: Success) => void; reject: (error: Error) => void }>();
  private nextId = 0;
  private closed = false;
  /** How many threads were started: 1 after the first request, one more after each crash. */
  starts = 0;

  /** Requests sent and not yet answered (the pool gives an embedding batch to the least busy thread). */
  get inFlight(): number {
    return this.pending.size;
  }

  constructor(private readonly options: ModelThreadOptions = {}) {}

  /** A loader for SentenceEncoderEmbedder: the model loads (and later runs) in this thread. */
  readonly encoder: LoadEncoder = async () => {
    await this.request({ op: 'load' });
    return { embed: (texts: string[]) => this.embed(texts) };
  };

  /** The sentence encoder's raw (unnormalised) vectors, one per text unless the model dropped a row. */
  async embed(texts: readonly string[]): Promise<number[][]> {
    const { vectors } = await this.request({ op: 'embed', texts: [...texts] });
    if (!vectors) throw new MemoryError('internal', 'The model thread answered an embed request without vectors');
    const { rows, dimensions, data } = vectors;
    // A loop, not Array.from over the typed array: that goes through an iterator, about 8× slower here.
    return Array.from({ length: rows }, (_, i) => {
      const row = new Array<number>(dimensions);
      for (let j = 0; j < dimensions; j++) row[j] = data[i * dimensions + j]!;
      return row;
    });
  }

  /** Runs a local chat task's rules in the thread; the caller validates input and output. */
  async solve<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<unknown> {
    return (await this.request({ op: 'solve', task, input })).output;
  }

  /** The period each turn refers to, parsed in the thread (time-expressions.ts `periodReferredTo`). */
  async referredPeriods(turns: readonly { text: string; at: string }[]): Promise<(Period | undefined)[]> {
    const { periods } = await this.request({ op: 'periods', turns: [...turns] });
    if (periods?.length !== turns.length) throw new MemoryError('internal', 'The model thread answered a periods request without a period per turn');
    return periods;
  }

  /** Terminates the thread; requests in flight and later ones reject. */
  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new MemoryError('internal', CLOSED));
    await worker?.terminate();
  }

  private request(body: Request): Promise<Success> {
    if (this.closed) return Promise.reject(new MemoryError('internal', CLOSED));
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    return new Promise<Success>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      try {
        worker.postMessage({ ...body, id });
      } catch (error) {
        this.settle(worker, id);
        reject(new MemoryError('internal', `The model thread could not be sent the request: ${error instanceof Error ? error.message : String(error)}`));
      }
    });
  }

  private start(): Worker {
    const workerData: ModelThreadData = { nice: this.options.nice ?? 10 };
    const worker = startWorker(this.options.entry ?? siblingModule(import.meta.url, 'model-worker'), { workerData, ...(this.options.resourceLimits && { resourceLimits: this.options.resourceLimits }) });
    this.worker = worker;
    this.starts += 1;
    worker.unref();
    let failure: Error | undefined;
    worker.on('message', (reply: ModelReply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.settle(worker, reply.id);
      if (reply.ok) waiting.resolve(reply);
      else waiting.reject(new MemoryError(reply.error.code ?? 'internal', reply.error.code ? reply.error.message : `The model thread failed: ${reply.error.message}`, reply.error.details ?? {}));
    });
    worker.on('messageerror', (error) => {
      failure = error;
      void worker.terminate();
    });
    worker.on('error', (error) => (failure = error));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return; // closed (or already replaced): nothing in flight belongs to it
      this.worker = undefined;
      const why = failure ? `${failure.name}: ${failure.message}` : `exit code ${code}`;
      this.failAll(new MemoryError('internal', `The model thread stopped (${why}); the next call starts a new one`));
    });
    return worker;
  }

  private settle(worker: Worker, id: number): void {
    this.pending.delete(id);
    if (this.pending.size === 0) worker.unref();
  }

  private failAll(error: MemoryError): void {
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const w of waiting) w.reject(error);
  }
}

/** What the offline models run on: one ModelThread, or a pool of them (ModelThreadPool). */
export interface OfflineModelThreads {
  /** Threads that embed at once: the sentence encoder splits a call over them and keeps twice as many batches in flight. */
  readonly size: number;
  readonly encoder: LoadEncoder;
  solve<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<unknown>;
  close(): Promise<void>;
}

/**
 * Embedding on every core: `size` model threads (MODEL_THREADS), each with its own copy of the model (about 160 MB of RSS),
 * each batch and each chat task given to the thread with the fewest requests waiting (sessions that complete windows
 * together summarise them side by side); in each thread, chat tasks go before waiting batches, as with one thread.
 * Each thread keeps its own nice value and crash recovery. With hosted models the pool only parses referred periods.
 */
export class ModelThreadPool implements OfflineModelThreads, PeriodReader {
  readonly threads: readonly ModelThread[];

  constructor(
    readonly size: number,
    readonly options: ModelThreadOptions = {},
  ) {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError('A model thread pool needs at least one thread');
    this.threads = Array.from({ length: size }, () => new ModelThread(options));
  }

  /** Loads the model in every thread at once, so no thread pays its load during a projection. */
  readonly encoder: LoadEncoder = async () => {
    await Promise.all(this.threads.map((t) => t.encoder()));
    return { embed: (texts: string[]) => this.leastBusy().embed(texts) };
  };

  solve<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<unknown> {
    return this.leastBusy().solve(task, input);
  }

  referredPeriods(turns: readonly { text: string; at: string }[]): Promise<(Period | undefined)[]> {
    return this.leastBusy().referredPeriods(turns);
  }

  /** Threads started so far, restarts after a crash included. */
  get starts(): number {
    return this.threads.reduce((n, t) => n + t.starts, 0);
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.close()));
  }

  private leastBusy(): ModelThread {
    return this.threads.reduce((best, t) => (t.inFlight < best.inFlight ? t : best));
  }
}
