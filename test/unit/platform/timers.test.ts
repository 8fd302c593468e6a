import { describe, expect, it } from 'vitest';
import { nextOccurrence } from '../../../shared/platform/local-host/timers.js';

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
