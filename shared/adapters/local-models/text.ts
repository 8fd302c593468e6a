/** Small text utilities for the offline models: transcript parsing, sentence splitting, word tokens, bounds. */

import { cutText } from '../../domain/text.js';

export type Speaker = 'user' | 'assistant' | 'tool' | 'system';

/** One turn of a rendered transcript (see shared/domain/turns.ts: `role (name) [for id]: content [tool calls: …]`). */
export interface TranscriptTurn {
  role: Speaker;
  name?: string;
  content: string;
}

const TURN_START = /^(user|assistant|tool|system)(?: \(([^)]*)\))?(?: \[for [^\]]*\])?: ?(.*)$/;
const TOOL_CALLS_SUFFIX = /(?:^| )\[tool calls: .*\]$/;

/**
 * Turns of a transcript. A line opening with a role starts a turn; any other line continues the previous turn
 * (contents may span lines). Text before the first role line is kept as a `user` turn only when the whole text has no
 * role lines at all (a bare text handed to the model).
 */
export function parseTranscript(conversation: string): TranscriptTurn[] {
  const turns: TranscriptTurn[] = [];
  const orphan: string[] = [];
  for (const line of conversation.split(/\r?\n/)) {
    const m = TURN_START.exec(line);
    if (m) {
      turns.push({ role: m[1] as Speaker, ...(m[2] && { name: m[2] }), content: m[3] ?? '' });
    } else if (turns.length > 0) {
      turns[turns.length - 1]!.content += `\n${line}`;
    } else {
      orphan.push(line);
    }
  }
  for (const t of turns) t.content = t.content.replace(TOOL_CALLS_SUFFIX, '').trim();
  if (turns.length === 0 && orphan.join('').trim()) return [{ role: 'user', content: orphan.join('\n').trim() }];
  return turns.filter((t) => t.content.length > 0);
}

const ABBREVIATIONS = new Set(['mr', 'mrs', 'ms', 'dr', 'prof', 'st', 'jr', 'sr', 'vs', 'etc', 'e.g', 'i.e', 'approx', 'inc', 'ltd', 'co', 'no', 'u.s', 'a.m', 'p.m']);

/** Sentences of a text: split after . ! ? (not after common abbreviations) and at line breaks. */
export function sentences(text: string): string[] {
  const pieces = text.split(/(?<=[.!?…])["')\]]?\s+|\n+/);
  const out: string[] = [];
  for (const raw of pieces) {
    const piece = raw.trim();
    if (!piece) continue;
    const previous = out[out.length - 1];
    const lastWord = previous?.match(/([A-Za-z.]+)\.$/)?.[1]?.toLowerCase();
    if (previous !== undefined && lastWord !== undefined && ABBREVIATIONS.has(lastWord)) out[out.length - 1] = `${previous} ${piece}`;
    else out.push(piece);
  }
  return out;
}

export const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9][a-z0-9'’-]*/g)?.map((w) => w.replace(/’/g, "'")) ?? [];

export const STOPWORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by
  can could did do does doing down during each few for from further had has have having he her here hers herself him himself
  his how i if in into is it its itself just let me more most my myself no nor not now of off on once only or other our ours
  ourselves out over own same she should so some such than that the their theirs them themselves then there these they this
  those through to too under until up very was we were what when where which while who whom why will with would you your
  yours yourself yourselves yes yeah okay ok oh hi hello hey thanks thank really also like get got going go know think well
  i'm it's that's don't dont can't cant won't isn't aren't didn't doesn't i've i'd i'll you're we're they're let's there's
  what's user assistant tool system sure much many one lot things thing want would need make made way good great right see say
  said tell us maybe just still even ever every something anything everything nothing else quite pretty kind sort`.split(/\s+/),
);

/** A crude English stem so that `dogs`/`dog`, `retiring`/`retire` and `savings`/`saving` meet. */
export function stem(word: string): string {
  let w = word.replace(/'s$/, '');
  if (w.length > 4 && w.endsWith('ies')) w = `${w.slice(0, -3)}y`;
  else if (w.length > 4 && /(ches|shes|xes|sses)$/.test(w)) w = w.slice(0, -2);
  else if (w.length > 3 && w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.length > 5 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2);
  if (w.length > 4 && w.endsWith('e')) w = w.slice(0, -1);
  return w;
}

export const contentWords = (text: string): string[] => words(text).filter((w) => w.length > 2 && !STOPWORDS.has(w));

/** Stemmed content words, each once. */
export const terms = (text: string): Set<string> => new Set(contentWords(text).map(stem));

/** Share of the smaller set's terms that the other set also has (1 = one contains the other). */
export function overlap(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  return shared / Math.min(a.size, b.size);
}

/** Jaccard similarity of two term sets. */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let shared = 0;
  for (const t of a) if (b.has(t)) shared++;
  return shared / (a.size + b.size - shared);
}

/** Cuts text at a sentence or word boundary so it stays within `max` characters. */
export function bound(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = cutText(text, max);
  const end = Math.max(cut.lastIndexOf('. '), cut.lastIndexOf('! '), cut.lastIndexOf('? '));
  if (end > max * 0.5) return cut.slice(0, end + 1);
  const space = cut.slice(0, max - 1).lastIndexOf(' ');
  return `${cutText(cut, space > 0 ? space : max - 1).replace(/[\s,;:]+$/, '')}…`;
}

/** Collapses whitespace. */
export const squash = (text: string): string => text.replace(/\s+/g, ' ').trim();

/** Ensures a sentence ends with terminal punctuation. */
export const terminate = (sentence: string): string => (/[.!?…"')\]]$/.test(sentence) ? sentence : `${sentence}.`);

/** Capitalised role label used in extractive summaries. */
export const label = (role: Speaker): string => role.charAt(0).toUpperCase() + role.slice(1);
