import type { ContentKind } from '../contracts/artifacts.js';
import { cutText } from './text.js';

/**
 * Compaction plugins (pure): from a large content, a short description the context shows in its MemoryRef
 * placeholder. One plugin per content kind; the kind is detected from the content unless the producer names it.
 */

const MAX_DESCRIPTION_CHARS = 400;

export function detectContentKind(content: string): ContentKind {
  const head = cutText(content.trimStart(), 2000);
  if (/^[[{]/.test(head)) {
    try {
      JSON.parse(content);
      return 'json';
    } catch {
      // not JSON after all
    }
  }
  if (/^<!doctype html|^<html[\s>]|<(head|body|title|div|p)[\s>]/i.test(head)) return 'html';
  const lines = content.split('\n', 200);
  const logLike = lines.filter((l) => /^\s*(\[?\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\[?(INFO|WARN|WARNING|ERROR|DEBUG|TRACE|FATAL)\b|npm (WARN|ERR!)|\d{2}:\d{2}:\d{2})/i.test(l)).length;
  if (logLike >= Math.max(3, lines.length * 0.3)) return 'log';
  const codeLike = lines.filter((l) => /^\s*(import |export |function |class |def |const |let |var |public |private |fn |func |package |#include|interface |type )|[;{}]\s*$/.test(l)).length;
  if (codeLike >= Math.max(3, lines.length * 0.3)) return 'code';
  return 'text';
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();
const clip = (s: string, max: number) => (s.length <= max ? s : `${cutText(s, max - 1).trimEnd()}…`);

function describeValue(value: unknown, depth: number): string {
  if (Array.isArray(value)) {
    const first = value[0];
    return value.length === 0 ? 'array(0)' : `array(${value.length}) of ${depth > 1 ? typeOf(first) : describeValue(first, depth + 1)}`;
  }
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    const shown = keys.slice(0, 8).join(', ');
    return `object{${shown}${keys.length > 8 ? `, +${keys.length - 8} more` : ''}}`;
  }
  return typeOf(value);
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** JSON: the shape — top-level keys with their types and array counts. */
export function describeJson(content: string): string {
  const value: unknown = JSON.parse(content);
  if (Array.isArray(value)) return `JSON ${describeValue(value, 0)}`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    const parts = entries.slice(0, 10).map(([k, v]) => `${k}: ${describeValue(v, 1)}`);
    return `JSON object with ${entries.length} keys: ${parts.join('; ')}${entries.length > 10 ? '; …' : ''}`;
  }
  return `JSON ${typeOf(value)}`;
}

const ERROR_LINE = /\b(error|err!|fatal|exception|failed|failures?|traceback|panic)\b/i;

/** Logs: line count, error count, first and last line, the first error lines. */
export function describeLog(content: string): string {
  const lines = content.split('\n').filter((l) => l.trim() !== '');
  const errors = lines.filter((l) => ERROR_LINE.test(l));
  const parts = [`Log of ${lines.length} lines, ${errors.length} error lines`];
  if (lines[0]) parts.push(`first: ${clip(oneLine(lines[0]), 80)}`);
  if (lines.length > 1) parts.push(`last: ${clip(oneLine(lines.at(-1)!), 80)}`);
  if (errors.length > 0) parts.push(`errors: ${errors.slice(0, 2).map((e) => clip(oneLine(e), 80)).join(' | ')}`);
  return parts.join('; ');
}

const decodeEntities = (s: string) => s.replace(/&nbsp;/g, ' ').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'");

/** Web pages: title, first heading and an excerpt of the visible text. */
export function describeHtml(content: string): string {
  const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(content)?.[1];
  const h1 = /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(content)?.[1];
  const text = decodeEntities(
    content
      .replace(/<(script|style|head|nav|footer)[\s\S]*?<\/\1>/gi, ' ')
      .replace(/<[^>]+>/g, ' '),
  );
  const parts = ['Web page'];
  if (title) parts.push(`title "${clip(oneLine(decodeEntities(title.replace(/<[^>]+>/g, ''))), 100)}"`);
  if (h1) parts.push(`heading "${clip(oneLine(decodeEntities(h1.replace(/<[^>]+>/g, ''))), 100)}"`);
  const excerpt = oneLine(text);
  if (excerpt) parts.push(`excerpt: ${clip(excerpt, 160)}`);
  return parts.join('; ');
}

const DECLARATION = /^\s*(export\s+)?(default\s+)?(async\s+)?(function\*?|class|interface|type|enum|def|fn|func|struct|impl|public\s+class|module)\s+([A-Za-z_$][\w$]*)/;
const CONST_FN = /^\s*(export\s+)?const\s+([A-Za-z_$][\w$]*)\s*=\s*(async\s*)?(\(|function)/;

/** Code: line count and the outline of its top-level declarations. */
export function describeCode(content: string): string {
  const lines = content.split('\n');
  const names: string[] = [];
  for (const line of lines) {
    const d = DECLARATION.exec(line);
    if (d) names.push(`${d[4]!.replace(/\s+/g, ' ')} ${d[5]}`);
    else {
      const c = CONST_FN.exec(line);
      if (c) names.push(`function ${c[2]}`);
    }
  }
  const outline = names.slice(0, 12).join(', ');
  return `Code, ${lines.length} lines${names.length ? `; outline: ${outline}${names.length > 12 ? `, +${names.length - 12} more` : ''}` : ''}`;
}

/** Fallback: the opening of the text. */
export function describeText(content: string): string {
  const words = content.split(/\s+/).filter(Boolean).length;
  return `Text, ${words} words: ${clip(oneLine(content), 200)}`;
}

const PLUGINS: Record<ContentKind, (content: string) => string> = {
  json: describeJson,
  log: describeLog,
  html: describeHtml,
  code: describeCode,
  text: describeText,
};

/** The description of a content by its kind's plugin; a plugin that cannot read it falls back to the excerpt. */
export function describeContent(content: string, kind: ContentKind = detectContentKind(content), label?: string): string {
  let description: string;
  try {
    description = PLUGINS[kind](content);
  } catch {
    description = describeText(content);
  }
  const prefixed = label ? `${label}: ${description}` : description;
  // The placeholder delimiter ` - ` and brackets stay unambiguous.
  return clip(oneLine(prefixed).replace(/\[|\]/g, ''), MAX_DESCRIPTION_CHARS);
}
