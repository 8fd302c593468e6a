import { describe, expect, it, vi } from 'vitest';
import { LocalTimer, nextOccurrence } from '../../../shared/platform/local-host/timers.js';

describe('NCRONTAB next occurrence (local timers)', () => {
  it('the nightly default fires at 03:00:00 UTC, the next day once past it', () => {
    expect(nextOccurrence('0 0 3 * * *', new Date('2026-01-05T01:30:00Z')).toISOString()).toBe('2026-01-05T03:00:00.000Z');
    expect(nextOccurrence('0 0 3 * * *', new Date('2026-01-05T03:00:00Z')).toISOString()).toBe('2026-01-06T03:00:00.000Z');
  });

  it('steps, ranges, lists and weekdays', () => {
    expect(nextOccurrence('0 */5 * * * *', new Date('2026-01-05T10:07:30Z')).toISOString()).toBe('2026-01-05T10:10:00.000Z');
    expect(nextOccurrence('30 15 9-17 * * 1-5', new Date('2026-01-10T12:00:00Z')).toISOString()).toBe('2026-01-12T09:15:30.000Z');
    expect(nextOccurrence('0,30 * * * * *', new Date('2026-01-05T10:00:10Z')).toISOString()).toBe('2026-01-05T10:00:30.000Z');
  });

  it('rejects malformed schedules', () => {
    expect(() => nextOccurrence('0 0 3 * *', new Date())).toThrow(/6 fields/);
    expect(() => nextOccurrence('0 61 * * * *', new Date())).toThrow(/Invalid/);
  });
});

describe('local timer runs', () => {
  const failing = async (): Promise<void> => {
    throw new Error('store closed');
  };

  it('a run that fails while the host runs is logged as failed', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    try {
      await new LocalTimer('timer-x', '0 0 3 * * *', failing).fire();
      expect(error).toHaveBeenCalledWith('timer timer-x failed: Error');
    } finally {
      error.mockRestore();
    }
  });

  it('a run that fails after stop (the host closed its stores) is logged as abandoned, not failed', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const timer = new LocalTimer('timer-x', '0 0 3 * * *', async () => {
        await released;
        await failing();
      });
      const run = timer.fire();
      await timer.stop();
      release();
      await run;
      expect(error).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledWith('timer timer-x: run abandoned at shutdown');
    } finally {
      error.mockRestore();
      warn.mockRestore();
    }
  });
});
