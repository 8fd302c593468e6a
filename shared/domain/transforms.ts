import type { ContentKind, Transform } from '../contracts/artifacts.js';
import { describeContent } from './compaction.js';
import { MemoryError } from './errors.js';

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
  lines?: { kept: number; total: number };
}

export const DEFAULT_LINES = 20;
export const DEFAULT_EXCERPT_CHARS = 2000;

const splitLines = (content: string) => content.split('\n');

/** Builds the pattern of `filtered`; an invalid regular expression is the caller's error. */
export function linePattern(pattern: string): RegExp {
  try {
    return new RegExp(pattern, 'i');
  } catch {
    throw new MemoryError('validation_failed', 'pattern is not a valid regular expression', { errors: [{ path: 'query.pattern', message: 'invalid regular expression' }] });
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
      const kept = all.filter((l) => re.test(l));
      const limited = request.n === undefined ? kept : kept.slice(0, request.n);
      return { content: limited.join('\n'), partial: true, lines: { kept: limited.length, total: all.length } };
    }
  }
}
