import { describe, expect, it } from 'vitest';
import { applyTransform, MAX_FILTER_LINES } from '../../../shared/domain/transforms.js';

const lines = Array.from({ length: 100 }, (_, i) => (i % 10 === 9 ? `line ${i + 1} ERROR disk full` : `line ${i + 1} ok`));
const content = lines.join('\n');

describe('transforms', () => {
  it('full returns the content unchanged', () => {
    expect(applyTransform(content, 'log', { transform: 'full' })).toEqual({ content, partial: false });
  });

  it('first_n and last_n keep n lines (20 by default)', () => {
    expect(applyTransform(content, 'log', { transform: 'first_n', n: 3 })).toEqual({ content: 'line 1 ok\nline 2 ok\nline 3 ok', partial: true, lines: { kept: 3, total: 100 } });
    expect(applyTransform(content, 'log', { transform: 'last_n', n: 2 }).content).toBe('line 99 ok\nline 100 ERROR disk full');
    expect(applyTransform(content, 'log', { transform: 'first_n' }).lines).toEqual({ kept: 20, total: 100 });
    expect(applyTransform('a\nb', 'text', { transform: 'last_n', n: 10 }).content).toBe('a\nb');
  });

  it('filtered keeps the lines matching the pattern, case-insensitively, at most n', () => {
    const all = applyTransform(content, 'log', { transform: 'filtered', pattern: 'error' });
    expect(all.lines).toEqual({ kept: 10, total: 100 });
    expect(all.content.split('\n').every((l) => l.includes('ERROR'))).toBe(true);
    expect(applyTransform(content, 'log', { transform: 'filtered', pattern: 'line (5|6)0 ', n: 1 }).content).toBe('line 50 ERROR disk full');
  });

  it('filtered with an invalid regular expression is a validation error', () => {
    expect(() => applyTransform(content, 'log', { transform: 'filtered', pattern: '(' })).toThrow(expect.objectContaining({ code: 'validation_failed' }));
  });

  it('excerpt keeps the opening n characters without splitting a word', () => {
    const text = 'alpha beta gamma delta epsilon';
    expect(applyTransform(text, 'text', { transform: 'excerpt', n: 14 }).content).toBe('alpha beta gam…');
    expect(applyTransform(text, 'text', { transform: 'excerpt', n: 12 }).content).toBe('alpha beta…');
    expect(applyTransform(text, 'text', { transform: 'excerpt', n: 100 }).content).toBe(text);
  });

  it('summary: the plugin description, plus the error lines of a log', () => {
    const summary = applyTransform(content, 'log', { transform: 'summary' }).content;
    expect(summary.split('\n')[0]).toMatch(/^Log of 100 lines, 10 error lines/);
    expect(summary).toContain('Error lines:\nline 10 ERROR disk full');
    expect(applyTransform('{"a":[1,2]}', 'json', { transform: 'summary' }).content).toBe('JSON object with 1 keys: a: array(2) of number');
  });
});

describe('filtered runs in linear time with a bound on work', () => {
  it('a catastrophic pattern for a backtracking engine, (a+)+$, matches with RE2', () => {
    const hostile = Array.from({ length: 4 }, () => `${'a'.repeat(5000)}!`).join('\n');
    expect(applyTransform(hostile, 'text', { transform: 'filtered', pattern: '(a+)+$' }).lines).toEqual({ kept: 0, total: 4 });
    expect(applyTransform('aaa\nb', 'text', { transform: 'filtered', pattern: '(a+)+$' }).content).toBe('aaa');
  });

  it('what RE2 does not have (backreferences, lookahead) is a validation error', () => {
    for (const pattern of ['(a)\\1', '(?=a)b']) {
      expect(() => applyTransform('a', 'text', { transform: 'filtered', pattern })).toThrow(expect.objectContaining({ code: 'validation_failed' }));
    }
  });

  it(`scans at most ${MAX_FILTER_LINES} lines and says how many it scanned`, () => {
    const many = Array.from({ length: MAX_FILTER_LINES + 5 }, () => 'x').join('\n');
    expect(applyTransform(many, 'text', { transform: 'filtered', pattern: 'y' }).lines).toEqual({ kept: 0, total: MAX_FILTER_LINES + 5, scanned: MAX_FILTER_LINES });
  });
});
