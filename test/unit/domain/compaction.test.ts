import { describe, expect, it } from 'vitest';
import { describeContent, detectContentKind } from '../../../shared/domain/compaction.js';
import { countContentTokens, offloadTokens, placeholder, shouldOffload } from '../../../shared/domain/memory-ref.js';
import { countTokens } from '../../../shared/domain/tokens.js';

const json = JSON.stringify({ results: Array.from({ length: 42 }, (_, i) => ({ id: i, name: `row ${i}` })), total: 42, next: null });
const log = [
  '2026-01-05 10:00:00 INFO starting build',
  ...Array.from({ length: 50 }, (_, i) => `2026-01-05 10:00:${String(i % 60).padStart(2, '0')} INFO step ${i}`),
  '2026-01-05 10:01:00 ERROR Cannot find module "left-pad"',
  '2026-01-05 10:01:01 INFO done with failures',
].join('\n');
const html = '<!doctype html><html><head><title>Quarterly &amp; Annual Report</title><style>p{}</style></head><body><h1>Results 2025</h1><p>Revenue grew by 12 percent.</p><script>var x=1</script></body></html>';
const code = ['import fs from "node:fs";', '', 'export function readConfig(path) {', '  return JSON.parse(fs.readFileSync(path));', '}', '', 'export class Cache {', '  get(key) { return 1; }', '}', 'const helper = async () => {};'].join('\n');

describe('compaction plugins', () => {
  it('detects the content kind', () => {
    expect(detectContentKind(json)).toBe('json');
    expect(detectContentKind(log)).toBe('log');
    expect(detectContentKind(html)).toBe('html');
    expect(detectContentKind(code)).toBe('code');
    expect(detectContentKind('Just some prose about retirement plans. Nothing else here.')).toBe('text');
    expect(detectContentKind('{ not json at all')).toBe('text');
  });

  it('JSON: shape, keys and counts', () => {
    expect(describeContent(json)).toBe('JSON object with 3 keys: results: array(42) of object{id, name}; total: number; next: null');
    expect(describeContent('[1,2,3]')).toBe('JSON array(3) of number');
  });

  it('logs: line count, error count, head, tail and the error lines', () => {
    const d = describeContent(log);
    expect(d).toMatch(/^Log of 53 lines, 2 error lines/);
    expect(d).toContain('first: 2026-01-05 10:00:00 INFO starting build');
    expect(d).toContain('last: 2026-01-05 10:01:01 INFO done with failures');
    expect(d).toContain('Cannot find module "left-pad"');
  });

  it('web pages: title, heading and visible text, without scripts and styles', () => {
    const d = describeContent(html);
    expect(d).toContain('title "Quarterly & Annual Report"');
    expect(d).toContain('heading "Results 2025"');
    expect(d).toContain('Revenue grew by 12 percent.');
    expect(d).not.toContain('var x');
  });

  it('code: an outline of the declarations', () => {
    expect(describeContent(code)).toBe('Code, 10 lines; outline: function readConfig, class Cache, function helper');
  });

  it('fallback: an excerpt of the text; a plugin that cannot read its input falls back too', () => {
    expect(describeContent('Alpha beta gamma.')).toBe('Text, 3 words: Alpha beta gamma.');
    expect(describeContent('not json', 'json')).toBe('Text, 2 words: not json');
  });

  it('labels with the source, stays short and never breaks the placeholder syntax', () => {
    const d = describeContent(`[x] ${'word '.repeat(500)}`, 'text', 'web_fetch');
    expect(d.startsWith('web_fetch: Text, 501 words: x word')).toBe(true);
    expect(d.length).toBeLessThanOrEqual(400);
    expect(d).not.toMatch(/[[\]]/);
  });
});

describe('MemoryRef placeholders', () => {
  it('renders the two-layer format', () => {
    expect(placeholder({ key: 'turn-abc', description: 'NPM install output', tokens: 2340 })).toBe('[MemoryRef: turn-abc - NPM install output - 2340 tokens]');
  });

  it('offloads strictly above the threshold', () => {
    expect(shouldOffload(499, 500)).toBe(false);
    expect(shouldOffload(500, 500)).toBe(false);
    expect(shouldOffload(501, 500)).toBe(true);
  });

  it('counts only a text long enough to exceed the threshold, and gives the count of one that does', () => {
    const counted: string[] = [];
    const count = (text: string) => (counted.push(text), countTokens(text));
    // A token is at least a byte: 30 bytes cannot make more than 30 tokens.
    const runes = 'ᚠ'.repeat(10); // 3 bytes and 3 tokens each
    expect(offloadTokens(runes, 30, count)).toBeUndefined();
    expect(offloadTokens('x'.repeat(30), 30, count)).toBeUndefined();
    expect(counted).toEqual([]);
    // Over the threshold in bytes: counted, and offloaded only if its tokens are over it too.
    expect(offloadTokens(runes, 29, count)).toBe(30);
    expect(offloadTokens('x '.repeat(20), 29, count)).toBeUndefined();
    expect(counted).toEqual([runes, 'x '.repeat(20)]);
  });
});

describe('countContentTokens', () => {
  it('is exact up to 4 KiB and within a token per 4 KiB chunk beyond', () => {
    const small = 'The quick brown fox jumps over the lazy dog. '.repeat(80);
    expect(small.length).toBeLessThanOrEqual(4096);
    expect(countContentTokens(small, countTokens)).toBe(countTokens(small));
    const large = 'The quick brown fox jumps over the lazy dog.\n'.repeat(5000);
    const exact = countTokens(large);
    expect(Math.abs(countContentTokens(large, countTokens) - exact)).toBeLessThanOrEqual(Math.ceil(large.length / 4096));
  });

  it('counts a long unbroken run in chunks, so it never stalls', () => {
    const chunks: number[] = [];
    const total = countContentTokens(`start ${'x'.repeat(300_000)} end`, (t) => (chunks.push(t.length), countTokens(t)));
    expect(Math.max(...chunks)).toBeLessThanOrEqual(4096);
    expect(total).toBeGreaterThan(30_000);
  });
});
