import type { ContentKind, Transform } from '../contracts/artifacts.js';
import { describeContent } from './compaction.js';
import { MemoryError } from './errors.js';
import { RE2JS } from 're2js';

export interface TransformRequest {
  transform: Transform;
  n?: number;
  pattern?: string;
}

export interface Transformed {
  content: string;
  /** False only for `full`: the content is a view of the artifact. */
  partial: boolean;
  /** Lines of the original the view kept (line-based transforms). */
  lines?: { kept: number; total: number; /** filtered: lines scanned, when the bound on work stopped it before the end. */ scanned?: number };
}

export const DEFAULT_LINES = 20;
export const DEFAULT_EXCERPT_CHARS = 2000;

const splitLines = (content: string) => content.split('\n');

/** `filtered` scans at most this many lines, and at most MAX_FILTER_CHARS characters of them: a bound on work per request. */
export const MAX_FILTER_LINES = 100_000;
export const MAX_FILTER_CHARS = 4_000_000;

export interface LinePattern {
  test(line: string): boolean;
}

/**
 * Builds the pattern of `filtered` with RE2 (re2js): matching runs in time linear in the line's length, so no pattern
 * backtracks (`(a+)+$` included). RE2 syntax has no backreferences or lookaround; a pattern it cannot compile is the
 * caller's error (400).
 */
export function linePattern(pattern: string): LinePattern {
  try {
    const re = RE2JS.compile(pattern, RE2JS.CASE_INSENSITIVE);
    return { test: (line) => re.test(line) };
  } catch {
    throw new MemoryError('validation_failed', 'pattern is not a valid RE2 regular expression', { errors: [{ path: 'query.pattern', message: 'invalid RE2 regular expression' }] });
  }
}

/** A view of an artifact's content (seed 001's transforms). Pure; `full` returns the content byte for byte. */
export function applyTransform(content: string, kind: ContentKind, request: TransformRequest): Transformed {
  switch (request.transform) {
    case 'full':
      return { content, partial: false };
    case 'excerpt': {
      const n = request.n ?? DEFAULT_EXCERPT_CHARS;
      if (content.length <= n) return { content, partial: true };
      // Cut at the last whitespace before n so no word is split, unless that throws away most of it.
      const cut = content.lastIndexOf(' ', n);
      return { content: `${content.slice(0, cut > n * 0.8 ? cut : n)}…`, partial: true };
    }
    case 'summary': {
      const all = splitLines(content);
      const errors = kind === 'log' ? all.filter((l) => /\b(error|err!|fatal|exception|failed)\b/i.test(l)).slice(0, 20) : [];
      const body = [describeContent(content, kind), ...(errors.length ? ['Error lines:', ...errors] : [])];
      return { content: body.join('\n'), partial: true };
    }
    case 'first_n':
    case 'last_n': {
      const all = splitLines(content);
      const n = request.n ?? DEFAULT_LINES;
      const kept = request.transform === 'first_n' ? all.slice(0, n) : all.slice(Math.max(0, all.length - n));
      return { content: kept.join('\n'), partial: true, lines: { kept: kept.length, total: all.length } };
    }
    case 'filtered': {
      if (!request.pattern) throw new MemoryError('validation_failed', 'transform=filtered needs a pattern');
      const re = linePattern(request.pattern);
      const all = splitLines(content);
      const wanted = request.n ?? Number.POSITIVE_INFINITY;
      const kept: string[] = [];
      let chars = 0;
      let scanned = 0;
      for (const line of all) {
        if (kept.length >= wanted || scanned >= MAX_FILTER_LINES || chars + line.length > MAX_FILTER_CHARS) break;
        scanned += 1;
        chars += line.length + 1;
        if (re.test(line)) kept.push(line);
      }
      return { content: kept.join('\n'), partial: true, lines: { kept: kept.length, total: all.length, ...(scanned < all.length && kept.length < wanted && { scanned }) } };
    }
  }
}
