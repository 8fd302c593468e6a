import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { MemoryError } from '../../../shared/domain/errors.js';
import { loadSettings } from '../../../shared/platform/config.js';
import { HARD_MARK, MemoryBudget, RETRY_AFTER_SECONDS, SOFT_MARK } from '../../../shared/platform/memory-budget.js';

const MB = 2 ** 20;
const BUDGET = 1000 * MB;

/** A governor over an injected reading (never the process's own RSS), with one recorded shed. */
function governor(freedPerShed = 50 * MB) {
  let rss = 100 * MB;
  const asked: number[] = [];
  const lines: string[] = [];
  const collections = { count: 0 };
  const budget = new MemoryBudget({
    budgetBytes: BUDGET,
    readRss: () => rss,
    sheds: [(bytes) => (asked.push(bytes), freedPerShed)],
    collectGarbage: () => void (collections.count += 1),
    log: (l) => lines.push(l),
  });
  return { budget, asked, lines, collections, read: (mb: number) => ((rss = mb * MB), budget.sample()) };
}

const refusal = (budget: MemoryBudget) => {
  try {
    budget.admit();
    return undefined;
  } catch (error) {
    return error;
  }
};

describe('memory budget governor', () => {
  it('takes appends and sheds nothing under the soft mark', () => {
    const { budget, asked, read } = governor();
    expect(read(SOFT_MARK * 1000 - 1)).toBe('ok');
    expect(refusal(budget)).toBeUndefined();
    expect(asked).toEqual([]);
  });

  it('over the soft mark sheds caches by the excess, still taking appends, and does not shed again on every reading', () => {
    const { budget, asked, read, collections } = governor();
    expect(read(850)).toBe('shedding');
    expect(refusal(budget)).toBeUndefined();
    expect(asked).toEqual([50 * MB]); // 850 MB read, soft mark 800 MB
    expect(collections.count).toBe(1); // and the garbage
    expect(budget.timesShed).toBe(1);
    read(860);
    expect(asked).toHaveLength(1); // freed memory shows only after a collection: waits some readings
    for (let i = 0; i < 10; i++) read(860);
    expect(asked).toHaveLength(2);
    expect(collections.count).toBe(2);
  });

  it('asks each shed only for what the ones before it left', () => {
    let rss = 900 * MB;
    const asked: number[][] = [[], []];
    const budget = new MemoryBudget({ budgetBytes: BUDGET, readRss: () => rss, sheds: [(b) => (asked[0]!.push(b), 30 * MB), (b) => (asked[1]!.push(b), 0)] });
    budget.sample();
    expect(asked).toEqual([[100 * MB], [70 * MB]]);
    rss = 850 * MB;
    const enough = new MemoryBudget({ budgetBytes: BUDGET, readRss: () => rss, sheds: [() => 60 * MB, () => { throw new Error('not asked once enough was freed'); }] });
    expect(enough.sample()).toBe('shedding');
  });

  it('over the hard mark refuses appends with overloaded and a retry-after, until back under the midpoint of the marks', () => {
    const { budget, read, lines } = governor();
    expect(read(HARD_MARK * 1000)).toBe('overloaded');
    const error = refusal(budget);
    expect(error).toBeInstanceOf(MemoryError);
    expect((error as MemoryError).code).toBe('overloaded');
    expect((error as MemoryError).details).toEqual({ retryAfter: RETRY_AFTER_SECONDS });
    expect(read(860)).toBe('overloaded'); // under the hard mark, over the midpoint (850 MB): still refused
    expect(read(849)).toBe('shedding');
    expect(refusal(budget)).toBeUndefined();
    expect(read(500)).toBe('ok');
    expect(budget.timesOverloaded).toBe(1);
    expect(lines.filter((l) => /overloaded/.test(l))).toHaveLength(2); // into the hard mark and out of it
    expect(budget.status()).toEqual({ state: 'ok', budgetMb: 1000, rssMb: 500 });
  });

  it('lets a queued append wait until appends are taken again, and refuses it if the governor stops first', async () => {
    const { budget, read } = governor();
    await budget.whenAdmitted(60_000); // not overloaded: at once
    read(950);
    let admitted = false;
    const waiting = budget.whenAdmitted(60_000).then(() => (admitted = true));
    read(900);
    await Promise.resolve();
    expect(admitted).toBe(false);
    read(700);
    await waiting;
    expect(admitted).toBe(true);

    read(950);
    const refused = budget.whenAdmitted(60_000);
    budget.stop();
    await expect(refused).rejects.toMatchObject({ code: 'overloaded' });
  });

  it('is off unless MEMORY_BUDGET_MB is set, and refuses a budget too small to mean anything', () => {
    expect(loadSettings({}).MEMORY_BUDGET_MB).toBe(0);
    expect(loadSettings({ MEMORY_BUDGET_MB: '1500' }).MEMORY_BUDGET_MB).toBe(1500);
    expect(() => loadSettings({ MEMORY_BUDGET_MB: '64' })).toThrow(/MEMORY_BUDGET_MB: at least 128/);
    expect(() => loadSettings({ MEMORY_BUDGET_MB: 'lots' })).toThrow(/MEMORY_BUDGET_MB/);
  });
});

describe('limitHeapGrowth', () => {
  /**
   * A process that keeps about 20 MB alive while it allocates about twenty times that as short-lived garbage, and
   * prints the largest heap it had. Run apart: the flag is process-wide.
   */
  const largestHeapMb = (percent: number): number => {
    const module = new URL('../../../shared/platform/memory-budget.ts', import.meta.url).href;
    const script = `
      import { limitHeapGrowth } from ${JSON.stringify(module)};
      limitHeapGrowth(${percent});
      const ring = [];
      let largest = 0;
      for (let round = 0; round < 2000; round++) {
        for (let i = 0; i < 1000; i++) ring.push({ values: new Array(20).fill(round) });
        if (ring.length > 100_000) ring.splice(0, 1000);
        if (round % 20 === 0) largest = Math.max(largest, process.memoryUsage().heapTotal);
      }
      console.log(Math.round(largest / 2 ** 20));`;
    return Number(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' }).trim());
  };

  it('keeps the heap much nearer its live data than V8 left alone does', () => {
    const own = largestHeapMb(0);
    const limited = largestHeapMb(30);
    expect(limited).toBeLessThan(own * 0.75);
  });

  it('is 50% unless HEAP_GROWTH_PERCENT says otherwise (0: V8 decides)', () => {
    expect(loadSettings({}).HEAP_GROWTH_PERCENT).toBe(50);
    expect(loadSettings({ HEAP_GROWTH_PERCENT: '0' }).HEAP_GROWTH_PERCENT).toBe(0);
    expect(() => loadSettings({ HEAP_GROWTH_PERCENT: '-5' })).toThrow(/HEAP_GROWTH_PERCENT/);
  });
});
