import { setFlagsFromString } from 'node:v8';
import type { Admission } from '../application/ports.js';
import { overloaded } from '../domain/errors.js';

/**
 * HEAP_GROWTH_PERCENT: after each full collection V8 sets the heap's next limit at what survived times a factor, which it
 * raises up to 4 when the program allocates fast and collects cheaply. Under an ingestion load that is hundreds of MB
 * of garbage held between collections; a fixed factor (1.5) kept the growth to a third of that, for about the same CPU
 * on the service's thread and 5% more in the offline model threads (README, Bounded memory). Process-wide: worker
 * threads' heaps too. 0 leaves V8's choice.
 */
export function limitHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}

/** `ok`; `shedding`: over the soft mark, caches are dropped; `overloaded`: over the hard mark, appends are refused. */
export type MemoryState = 'ok' | 'shedding' | 'overloaded';

/** Frees up to `bytes` of memory that can be rebuilt (a cache); returns the bytes it reckons it freed. */
export type Shed = (bytes: number) => number;

/** The marks, as fractions of the budget: room above the hard mark for what arrives between two readings. */
export const SOFT_MARK = 0.8;
export const HARD_MARK = 0.9;
/** Over the hard mark, appends are refused until the reading is back under the midpoint of the marks (no flapping). */
const RESUME_MARK = (SOFT_MARK + HARD_MARK) / 2;
/** What a refused append is told to wait (`Retry-After`): a few readings, time for the projection to drain some backlog. */
export const RETRY_AFTER_SECONDS = 2;
/** Readings between two sheds: freed memory shows in the resident set only after a garbage collection. */
const SHED_EVERY = 10;
const MB = 2 ** 20;

export interface MemoryBudgetOptions {
  budgetBytes: number;
  /** The process's resident set size in bytes (default: process.memoryUsage.rss, a cheap read of /proc). */
  readRss?: () => number;
  /** What the soft mark drops, in order (composition: the search snapshots, largest first). */
  sheds?: readonly Shed[];
  /**
   * A full garbage collection, run after the sheds (V8's `gc`, exposed by `node --expose-gc`). Under a high allocation
   * rate V8 lets the heap grow to several times what is live before it collects: that garbage, not live data, is most
   * of the growth (README, Bounded memory).
   */
  collectGarbage?: () => void;
  /** How often start() reads (default 500 ms). */
  sampleMs?: number;
  /** Crossings of the hard mark, in megabytes (never anything of a request). */
  log?: (line: string) => void;
}

/**
 * MEMORY_BUDGET_MB: keeps the process under a budget of resident memory by reading its RSS every `sampleMs`.
 * - Over the soft mark (80%) it sheds what can be rebuilt: the `sheds`, given the excess in bytes, then collects the
 *   garbage (`collectGarbage`); then waits SHED_EVERY readings before shedding again.
 * - Over the hard mark (90%) it is `overloaded`: `admit()` throws `overloaded` (503 with Retry-After), so appends over
 *   HTTP and MCP are refused before anything is written, and Service Bus messages wait (`whenAdmitted`) or go back to
 *   the queue. Nothing else stops: reads are answered and the change-feed pump keeps projecting, so the backlog drains.
 * - Back under the midpoint of the marks, appends are taken again.
 */
export class MemoryBudget implements Admission {
  private current: MemoryState = 'ok';
  private rss = 0;
  private sinceShed = SHED_EVERY;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly waiting = new Set<() => void>();
  /** Times the soft mark shed, and times the hard mark was crossed (the bench reports them). */
  timesShed = 0;
  timesOverloaded = 0;

  private readonly readRss: () => number;
  private readonly soft: number;
  private readonly hard: number;

  constructor(private readonly options: MemoryBudgetOptions) {
    this.readRss = options.readRss ?? (() => process.memoryUsage.rss());
    this.soft = options.budgetBytes * SOFT_MARK;
    this.hard = options.budgetBytes * HARD_MARK;
  }

  get state(): MemoryState {
    return this.current;
  }

  /** For /health: the state, the budget and the last reading, in MB. */
  status(): { state: MemoryState; budgetMb: number; rssMb: number } {
    return { state: this.current, budgetMb: Math.round(this.options.budgetBytes / MB), rssMb: Math.round(this.rss / MB) };
  }

  start(): void {
    this.sample();
    this.timer ??= setInterval(() => this.sample(), this.options.sampleMs ?? 500);
    // A reading never keeps the process alive.
    this.timer.unref();
  }

  /** Stops reading; Service Bus messages still waiting are refused (they go back to the queue). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopped = true;
    for (const wake of [...this.waiting]) wake();
  }

  /** Throws `overloaded` (503, Retry-After) while over the hard mark. */
  admit(): void {
    if (this.current === 'overloaded') throw overloaded(RETRY_AFTER_SECONDS);
  }

  /** Resolves once appends are taken (at once if they are); throws `overloaded` if that takes longer than `maxWaitMs`. */
  async whenAdmitted(maxWaitMs: number): Promise<void> {
    if (this.current !== 'overloaded') return;
    if (this.stopped) throw overloaded(RETRY_AFTER_SECONDS);
    let timer: NodeJS.Timeout | undefined;
    let wake: () => void = () => undefined;
    const admitted = await new Promise<boolean>((resolve) => {
      wake = () => resolve(this.current !== 'overloaded' && !this.stopped);
      this.waiting.add(wake);
      timer = setTimeout(() => resolve(false), maxWaitMs);
    });
    clearTimeout(timer);
    this.waiting.delete(wake);
    if (!admitted) throw overloaded(RETRY_AFTER_SECONDS);
  }

  /** One reading, and what it calls for. */
  sample(): MemoryState {
    const rss = this.readRss();
    this.rss = rss;
    const before = this.current;
    this.current = rss >= this.hard || (before === 'overloaded' && rss >= this.options.budgetBytes * RESUME_MARK) ? 'overloaded' : rss >= this.soft ? 'shedding' : 'ok';
    if (this.current === 'overloaded' && before !== 'overloaded') this.timesOverloaded += 1;
    // Only the hard mark's changes: the soft mark's come and go with each collection, and its sheds say what they drop.
    if (this.current !== before && (this.current === 'overloaded' || before === 'overloaded')) this.options.log?.(`memory budget: ${before} → ${this.current} (RSS ${Math.round(rss / MB)} MB of ${Math.round(this.options.budgetBytes / MB)} MB)`);
    this.sinceShed += 1;
    if (this.current !== 'ok' && this.sinceShed >= SHED_EVERY) this.shed(rss - this.soft);
    if (this.current !== 'overloaded') for (const wake of [...this.waiting]) wake();
    return this.current;
  }

  private shed(excess: number): void {
    this.sinceShed = 0;
    this.timesShed += 1;
    // Not logged: it runs every few seconds while over the soft mark (the bench counts it, /health shows the state).
    let freed = 0;
    for (const shed of this.options.sheds ?? []) {
      if (freed >= excess) break;
      freed += shed(excess - freed);
    }
    this.options.collectGarbage?.();
  }
}
