import { describe, expect, it } from 'vitest';
import { isWithin, periodNamedIn } from '../../../shared/domain/time-expressions.js';

const now = new Date('2026-11-22T10:00:00Z');

describe('periodNamedIn', () => {
  it('reads a named month, with or without its year, relative to now', () => {
    expect(periodNamedIn('What did I say last May?', now)).toEqual({ from: '2026-05-01T00:00:00.000Z', to: '2026-05-31T23:59:59.999Z' });
    expect(periodNamedIn('What did Mel paint in July 2023?', now)).toEqual({ from: '2023-07-01T00:00:00.000Z', to: '2023-07-31T23:59:59.999Z' });
  });

  it('reads a day, a year and a relative period', () => {
    expect(periodNamedIn('What painting did Melanie show on October 13, 2023?', now)).toEqual({ from: '2023-10-13T00:00:00.000Z', to: '2023-10-13T23:59:59.999Z' });
    expect(periodNamedIn('How often did she go to the beach in 2023?', now)).toEqual({ from: '2023-01-01T00:00:00.000Z', to: '2023-12-31T23:59:59.999Z' });
    expect(periodNamedIn('what did we discuss yesterday', now)).toEqual({ from: '2026-11-21T00:00:00.000Z', to: '2026-11-21T23:59:59.999Z' });
  });

  it('finds no period in a query that names none, and none in the future', () => {
    expect(periodNamedIn('When did Caroline go to the support group?', now)).toBeUndefined();
    expect(periodNamedIn('Does the user have a dog?', now)).toBeUndefined();
    expect(periodNamedIn('What are my plans for June?', now)).toBeUndefined(); // read as next June
  });
});

describe('isWithin', () => {
  it('includes both ends and compares instants, whatever the offset', () => {
    const may = { from: '2026-05-01T00:00:00.000Z', to: '2026-05-31T23:59:59.999Z' };
    expect(isWithin(may, '2026-05-31T23:59:59.999Z')).toBe(true);
    expect(isWithin(may, '2026-06-01T01:00:00+02:00')).toBe(true);
    expect(isWithin(may, '2026-06-01T00:00:00Z')).toBe(false);
  });
});
