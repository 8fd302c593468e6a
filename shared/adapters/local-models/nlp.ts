import nlp from 'compromise';
import { STOPWORDS } from './text.js';

/** Terms as compromise tags them (its `json()` shape, reduced to what is used here). */
interface Term {
  text: string;
  /** Punctuation and space after the term. */
  post?: string;
  normal: string;
  tags: string[];
  implicit?: string | null;
}

type Doc = ReturnType<typeof nlp>;

/** One compromise parse of a text, shared by topics and entities. */
export interface Analysis {
  text: string;
  doc: Doc;
  sentences: Term[][];
}

/**
 * compromise's steps after tokenizing, up to its pre-tagger: each word tagged from the lexicon, its ending, its case
 * and its neighbours. Not its post-tagger (hundreds of match rules that refine those tags, and the hooks plugins add
 * after it: compromise-dates, loaded in the same thread for the periods turns refer to, tags "about 28,000 a" as a
 * date), which cost about three quarters of a parse. Topics and entities are runs of nouns and names, which the
 * pre-tagger tells already: on LoCoMo's 249 ten-turn windows 91% of the tags were the same and a window's topics
 * and entities agree about 0.9 (Jaccard) with the full parse's, for a quarter of its CPU (README, Scale).
 */
const PRE_TAGGING = ['index', 'id', 'lexicon', 'preTagger', 'contractionTwo'];

export function analyse(text: string): Analysis {
  const doc = nlp.tokenize(text);
  doc.compute(PRE_TAGGING);
  return { text, doc, sentences: (doc.json() as { terms: Term[] }[]).map((s) => s.terms) };
}

const has = (t: Term, tag: string) => t.tags.includes(tag);
/** Punctuation after a term ends a phrase. */
const breaks = (t: Term) => /[,;:.!?)(\]"—–-]/.test(t.post ?? '');
const clean = (s: string) => s.replace(/^[^\p{L}\p{N}$£€]+|[^\p{L}\p{N}%)]+$/gu, '').replace(/['’]s$/, '');

/** Nouns too general to be a topic. */
const GENERIC = new Set(
  `thing things time times way ways lot lots bit today tomorrow yesterday question questions idea ideas people person guy guys
  stuff kind sort part point case fact day days week weeks month months year years minute minutes hour hours moment morning
  evening night afternoon user assistant agent advisor sense problem problems something anything everything nothing someone
  anyone everyone number numbers option options plan plans place start end side hand example look chat conversation call
  question answer info information detail details couple word words name`.split(/\s+/),
);

const singular = (w: string) => (w.length > 4 && w.endsWith('ies') ? `${w.slice(0, -3)}y` : w.length > 3 && /[^su]s$/.test(w) ? w.slice(0, -1) : w);

/** A noun-ish term: a noun that is not a pronoun/possessive/date word, or a number with letters (401k, 529 plan). */
const nounish = (t: Term) =>
  (has(t, 'Noun') && !has(t, 'Pronoun') && !has(t, 'Possessive') && !has(t, 'Date') && !has(t, 'Value')) ||
  (has(t, 'Value') && /\d[a-z]/i.test(t.text) && !t.text.startsWith('$'));

/**
 * Key topics of a text: runs of nouns (compound nouns such as "retirement savings", names such as "Roth IRA"), ranked by
 * how often they occur (multi-word phrases slightly preferred), then by first mention. Lower-cased unless proper nouns.
 */
export function topics({ sentences }: Analysis, max: number): string[] {
  const found = new Map<string, { surface: string; count: number; first: number; size: number }>();
  let position = 0;
  for (const sentence of sentences) {
    let run: Term[] = [];
    const flush = () => {
      const kept = run.filter((t) => !t.implicit || t.text !== '');
      while (kept.length > 0 && GENERIC.has(kept[0]!.normal)) kept.shift();
      run = [];
      if (kept.length === 0 || kept.length > 3) return;
      const proper = kept.every((t) => has(t, 'ProperNoun') || has(t, 'Acronym'));
      const surface = kept.map((t) => clean(proper ? t.text : t.normal)).join(' ').trim();
      const key = kept.map((t) => singular(clean(t.normal).toLowerCase())).join(' ');
      if (surface.length < 3 || GENERIC.has(key) || STOPWORDS.has(key) || !/\p{L}/u.test(surface)) return;
      const entry = found.get(key) ?? { surface, count: 0, first: position, size: kept.length };
      entry.count += 1;
      found.set(key, entry);
    };
    for (const t of sentence) {
      position++;
      // "daughter Emma": a name after a common noun starts a new phrase.
      const last = run[run.length - 1];
      if (last && !has(last, 'ProperNoun') && has(t, 'ProperNoun')) flush();
      if (nounish(t) && t.text !== '') run.push(t);
      else flush();
      if (breaks(t)) flush();
    }
    flush();
  }
  return [...found.values()]
    .sort((a, b) => b.count * (1 + 0.3 * (b.size - 1)) - a.count * (1 + 0.3 * (a.size - 1)) || a.first - b.first)
    .slice(0, max)
    .map((e) => e.surface);
}

const MONEY = /(?:[$£€]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn|million|thousand|billion)\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:dollars|euros|pounds|usd|eur)\b)/gi;
const PERCENT = /\b\d+(?:\.\d+)?\s?%/g;
const ACCOUNT = /\b(?:401\(?k\)?|403\(?b\)?|457\(?b\)?|529(?: plan)?|roth ira|traditional ira|sep ira|ira|hsa|fsa|etfs?|cds?)\b/gi;
const ACRONYM = /\b[A-Z][A-Z0-9&]{1,6}s?\b/g;
const YEAR = /\b(?:19|20)\d{2}\b/g;
const NUMBER = /\b\d[\d,]*(?:\.\d+)?\b/g;
const NOT_ACRONYMS = new Set(['I', 'OK', 'AM', 'PM', 'TV', 'ID', 'US']);

/**
 * Named entities and amounts, as written: people, organisations, places and other proper names (compromise), then
 * accounts and acronyms, money, percentages, dates and other numbers — each once (case-insensitive, a name already
 * inside a longer one is dropped), in that order, at most `max`.
 */
export function entities({ text, doc, sentences }: Analysis, max: number): string[] {
  const lowercase = new Set(text.match(/\b[a-z][a-z'-]*\b/g) ?? []);
  const list = (view: { out(format: 'array'): string[] }) => view.out('array').map(clean);
  const proper: string[] = [];
  for (const sentence of sentences) {
    let run: string[] = [];
    const flush = () => {
      if (run.length > 0) proper.push(clean(run.join(' ')));
      run = [];
    };
    sentence.forEach((t, i) => {
      const isProper = has(t, 'ProperNoun') && !has(t, 'Date') && t.text !== '' && (i > 0 || has(t, 'Person') || has(t, 'Place') || has(t, 'Organization'));
      if (isProper) run.push(t.text);
      else flush();
      if (breaks(t)) flush();
    });
    flush();
  }
  const dates: string[] = [];
  for (const sentence of sentences) {
    let run: string[] = [];
    const flush = () => {
      // "March 3rd", "last Tuesday", "2030" — not bare "today" or "ago".
      if (run.some((w) => /\p{L}/u.test(w)) && run.some((w) => /\d|^\p{Lu}/u.test(w))) dates.push(clean(run.join(' ')));
      run = [];
    };
    for (const t of sentence) {
      if (has(t, 'Date') && t.text !== '' && !has(t, 'Duration')) run.push(t.text);
      else flush();
    }
    flush();
  }
  const all = [
    ...list(doc.people()),
    ...list(doc.organizations()),
    ...list(doc.places()),
    ...proper,
    ...(text.match(ACCOUNT) ?? []),
    ...(text.match(ACRONYM) ?? []).filter((a) => !NOT_ACRONYMS.has(a)),
    ...(text.match(MONEY) ?? []),
    ...(text.match(PERCENT) ?? []),
    ...dates,
    ...(text.match(YEAR) ?? []),
    ...(text.match(NUMBER) ?? []),
  ]
    .map((e) => clean(e.trim()))
    .filter((e) => e.length > 0 && !STOPWORDS.has(e.toLowerCase()) && !commonEverywhere(e, lowercase));
  const kept: string[] = [];
  for (const e of all) {
    const lower = e.toLowerCase();
    if (kept.some((k) => containsWord(k.toLowerCase(), lower))) continue;
    // A longer form replaces a shorter one already kept ("John" → "John Smith").
    const shorter = kept.findIndex((k) => containsWord(lower, k.toLowerCase()));
    if (shorter >= 0) kept[shorter] = e;
    else kept.push(e);
  }
  return [...new Set(kept)].slice(0, max);
}

/** A capitalised phrase whose every word also occurs in lower case in the text is a sentence-initial common noun. */
const commonEverywhere = (entity: string, lowercase: ReadonlySet<string>) => {
  const ws = entity.split(/\s+/);
  return /^[A-Z][a-z]/.test(entity) && ws.every((w) => lowercase.has(w.toLowerCase()));
};

const containsWord = (haystack: string, needle: string) =>
  haystack === needle || new RegExp(`(^|[^\\p{L}\\p{N}])${needle.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}($|[^\\p{L}\\p{N}])`, 'u').test(haystack);
