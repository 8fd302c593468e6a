import type { Timer } from '@azure/functions';
import type { TimerHandler } from '../functions.js';
import { invocationContext } from './invocation.js';

const RANGES: [number, number][] = [
  [0, 59], // second
  [0, 59], // minute
  [0, 23], // hour
  [1, 31], // day of month
  [1, 12], // month
  [0, 6], // day of week (0 = Sunday)
];

function parseField(field: string, [min, max]: [number, number]): Set<number> {
  const values = new Set<number>();
  for (const part of field.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    const bounds = range === '*' ? [min, max] : range!.split('-').map(Number);
    const from = bounds[0]!;
    const to = bounds[1] ?? (stepText === undefined ? from : max);
    if (!Number.isInteger(from) || !Number.isInteger(to) || !Number.isInteger(step) || step < 1 || from < min || to > max) {
      throw new Error(`Invalid NCRONTAB field '${field}'`);
    }
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return values;
}

/** The first time after `after` (UTC) matching a 6-field NCRONTAB expression (`sec min hour day month weekday`). */
export function nextOccurrence(expression: string, after: Date): Date {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 6) throw new Error(`NCRONTAB needs 6 fields, got '${expression}'`);
  const [sec, min, hour, dom, mon, dow] = fields.map((f, i) => parseField(f, RANGES[i]!));
  const t = new Date(after.getTime());
  t.setUTCMilliseconds(0);
  t.setUTCSeconds(t.getUTCSeconds() + 1);
  // Minute by minute for up to a year and a day; within a matching minute, the first matching second.
  for (let i = 0; i < 527_100; i++) {
    const minuteMatches = min!.has(t.getUTCMinutes()) && hour!.has(t.getUTCHours()) && dom!.has(t.getUTCDate()) && mon!.has(t.getUTCMonth() + 1) && dow!.has(t.getUTCDay());
    if (minuteMatches) {
      const second = [...sec!].sort((a, b) => a - b).find((s) => s >= t.getUTCSeconds());
      if (second !== undefined) return new Date(Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes(), second));
    }
    t.setUTCSeconds(0);
    t.setUTCMinutes(t.getUTCMinutes() + 1);
  }
  throw new Error(`NCRONTAB '${expression}' never fires`);
}

/** Fires a timer function on its schedule like the Functions host (one invocation at a time; a failure is logged and the next occurrence still fires). */
export class LocalTimer {
  private handle: NodeJS.Timeout | undefined;
  private last: Date | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    readonly name: string,
    private readonly schedule: string,
    private readonly handler: TimerHandler,
  ) {
    nextOccurrence(schedule, new Date());
  }

  start(): void {
    if (this.stopped) return;
    const now = new Date();
    const next = nextOccurrence(this.schedule, now);
    // setTimeout takes at most ~24.8 days; a longer wait is re-armed.
    const wait = Math.min(next.getTime() - now.getTime(), 2 ** 31 - 1);
    this.handle = setTimeout(() => {
      if (new Date() < next) return this.start();
      this.running = this.fire(next).finally(() => this.start());
    }, wait);
    this.handle.unref();
  }

  /** Invokes the handler now (also used by tests). */
  async fire(at = new Date()): Promise<void> {
    const info: Timer = {
      isPastDue: false,
      schedule: { adjustForDST: false },
      scheduleStatus: { last: (this.last ?? new Date(0)).toISOString(), next: nextOccurrence(this.schedule, at).toISOString(), lastUpdated: at.toISOString() },
    };
    try {
      await this.handler(info, invocationContext(this.name));
      this.last = at;
    } catch (error) {
      // After stop, the host closes the stores a run still in flight waits on: that run is abandoned, not failed, and
      // what it had claimed is served again at the next start.
      if (this.stopped) console.warn(`timer ${this.name}: run abandoned at shutdown`);
      else console.error(`timer ${this.name} failed: ${error instanceof Error ? error.name : 'unknown'}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.handle) clearTimeout(this.handle);
    await this.running;
  }
}
