import { countTokens as exact } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { cutText } from '../../../shared/domain/text.js';
import { countTokens } from '../../../shared/domain/tokens.js';

describe('token counting', () => {
  it('is exact up to 4 KiB', () => {
    for (const text of ['', 'hello world', 'The quick brown fox. '.repeat(190), '😀'.repeat(2000)]) expect(countTokens(text)).toBe(exact(text));
  });

  it('counts long prose within a token per piece', () => {
    const prose = 'The quick brown fox jumps over the lazy dog. '.repeat(2000);
    const pieces = Math.ceil(prose.length / 1024);
    expect(Math.abs(countTokens(prose) - exact(prose))).toBeLessThanOrEqual(pieces);
  });

  it('counts a 900k unbroken run in pieces (near-linear), close to the exact count of its pieces', () => {
    const run = 'x9'.repeat(450_000);
    const tokens = countTokens(run);
    expect(tokens).toBeGreaterThan(0);
    const piece = exact(run.slice(0, 1024));
    expect(tokens).toBeGreaterThanOrEqual(piece * Math.floor(run.length / 1024));
    expect(tokens).toBeLessThanOrEqual(piece * Math.ceil(run.length / 1024) + 1);
  });

  it('never cuts an emoji in half', () => {
    const emoji = '😀'.repeat(3000); // 6000 UTF-16 units, one unbroken run
    expect(countTokens(emoji)).toBeGreaterThan(0);
    expect(cutText(emoji, 1025)).toBe('😀'.repeat(512));
    expect(cutText('ab', 5)).toBe('ab');
  });
});
