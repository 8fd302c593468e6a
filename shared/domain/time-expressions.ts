import nlp from 'compromise';
import datePlugin from 'compromise-dates';

/** A period of time, as ISO 8601 instants (inclusive). */
export interface Period {
  from: string;
  to: string;
}

type Compile = (pattern: unknown, options?: object, world?: unknown) => object[];

/**
 * `compile` remembering the last `limit` patterns it compiled: compromise compiles a match pattern string on every
 * match, a quarter of a date parse, though a parse uses the same few hundred patterns (82,029 compilations of 959
 * strings for 401 texts). Each call gets its own copy of the tokens, as a fresh compilation would be: compromise's
 * `growLeft`, `growRight` and `mergeIf` set `start` / `end` on the tokens they are given, and nothing changes what is
 * inside a token. Bounded, because a pattern can be built from text.
 */
export function compiledOnce(compile: Compile, limit: number): Compile {
  const kept = new Map<string, object[]>();
  return (pattern, options, world) => {
    if (typeof pattern !== 'string') return compile(pattern, options, world);
    // A JSON object ends where it ends, so no two (options, pattern) pairs share a key.
    const key = `${options === undefined ? '{}' : JSON.stringify(options)}${pattern}`;
    let tokens = kept.get(key);
    if (!tokens) {
      tokens = compile(pattern, options, world);
      if (kept.size >= limit) kept.delete(kept.keys().next().value!);
      kept.set(key, tokens);
    }
    return tokens.map((token) => ({ ...token }));
  };
}

type Fold = (text: string, world?: unknown) => string;

/**
 * `fold` (compromise's `killUnicode`, "Björk" → "Bjork", one character at a time through `table`) skipped for a text
 * with no character the table changes: it runs on every pattern matched and every word, and splits and joins each.
 */
export function foldedWhenNeeded(fold: Fold, table: Record<string, string>): Fold {
  const changed = Object.keys(table).filter((c) => table[c] && table[c] !== c);
  const anyChanged = new RegExp(`[${changed.map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}]`);
  return (text, world) => (text && !anyChanged.test(text) ? text : fold(text, world));
}

/** The compromise internals used here, which its plugins may replace (package.json pins compromise exactly). */
interface CompromiseOne {
  parseMatch: Compile;
  killUnicode: Fold;
  tokenize: { splitSentences: (text: string, world: unknown) => string[] };
}

const parser = nlp.extend(datePlugin);
const world = parser.world();
const { one } = parser.methods() as { one: CompromiseOne };
const { unicode } = (parser.model() as { one: { unicode: Record<string, string> } }).one;
// Both replace compromise's own for every use of compromise in the thread (it has one world); installed after the
// date plugin, whose words and rules the patterns compile against: nothing adds words or characters later.
parser.extend({ methods: { one: { parseMatch: compiledOnce(one.parseMatch, 5000), killUnicode: foldedWhenNeeded(one.killUnicode, unicode) } } });

/** Time words that name a day or a period on their own ("yesterday", "in June", "on Saturday", "2019"). */
const NAMING = String.raw`jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?|mon(day)?|tue(sday)?|wed(nesday)?|thu(rsday)?|fri(day)?|sat(urday)?|sun(day)?|yesterday|tomorrow|weekends?|spring|summer|autumn|fall|winter|ago|(19|20)\d\d`;
/** Units of time: with a number or alone they measure ("for twelve years", "28,000 a year"), which the parser reads as today. */
const UNITS = 'days?|weeks?|months?|years?|decades?|fortnights?';
/** Words that place a unit on the calendar ("last week", "in a month", "the day before", "two years back"). */
const PLACING =
  'last|next|this|past|previous|coming|following|upcoming|in|within|from|since|after|before|later|earlier|end|start|beginning|middle|mid|early|late|other|that|same|every|each|back|ahead|prior|recent|recently';
const anyWord = (alternatives: string) => new RegExp(String.raw`\b(${alternatives})\b`, 'i');
const NAMING_WORDS = anyWord(NAMING);
const UNIT_WORDS = anyWord(UNITS);
const PLACING_WORDS = anyWord(PLACING);

/**
 * Words without which a text names no calendar period. The date parser costs tens of milliseconds, so a query or a
 * turn without any of them (most of both) skips it.
 */
const TIME_WORDS = anyWord(`${NAMING}|${UNITS}|today|tonight`);

/**
 * Whether a text may name a calendar period: false means the parser would find none, so a caller need not ask it.
 */
export const mayReferToPeriod = (text: string): boolean => TIME_WORDS.test(text);

/**
 * Whether a text may refer to a period other than its own day, what a turn's parse keeps (periodReferredTo): a time
 * word that names one, or a unit with a word that places it. Stricter than mayReferToPeriod, which a query needs
 * ("what did I do today?"): a sentence that only measures time ("we have twelve years left on the mortgage") or says
 * "today" is read as the turn's own day, which its timestamp says already, so it is not parsed.
 */
export const mayReferToAnotherDay = (text: string): boolean => NAMING_WORDS.test(text) || (UNIT_WORDS.test(text) && PLACING_WORDS.test(text));

/** A period found in a text, and whether it could be a forward reading of a past event (see periodReferredTo). */
type Found = Period & { doubtful: boolean };

/** A weekday or month named without a day, a year or a direction ("on Saturday", "in June"): the parser reads it forward. */
const BARE = /^(?!.*(\d|\b(next|this|coming|upcoming|tomorrow)\b))/i;

/** Sentences parsed as one document: much of compromise's cost is per document, so sentences share one. */
const SENTENCES_PER_DOCUMENT = 12;

/**
 * The calendar periods each text names, as compromise-dates reads them relative to its anchor's day (UTC), in order.
 * Only the sentences `mayName` lets through are parsed (compromise tags each sentence on its own, so the others only
 * cost time), and those of texts with the same anchor day together, up to SENTENCES_PER_DOCUMENT a document, one sentence
 * a paragraph: 20–45% less CPU a sentence than one document each (test/bench/periods.ts prints both).
 */
function periodsIn(texts: readonly { text: string; anchor: Date }[], mayName: (sentence: string) => boolean): Found[][] {
  const found: Found[][] = texts.map(() => []);
  const byDay = new Map<string, { text: number; said: string }[]>();
  texts.forEach(({ text, anchor }, i) => {
    const said = one.tokenize.splitSentences(text, world).filter(mayName);
    if (said.length === 0) return;
    const today = anchor.toISOString().slice(0, 10);
    const sameDay = byDay.get(today) ?? [];
    byDay.set(today, sameDay);
    for (const s of said) sameDay.push({ text: i, said: s });
  });
  for (const [today, sentences] of byDay) {
    for (let at = 0; at < sentences.length; at += SENTENCES_PER_DOCUMENT) {
      const part = sentences.slice(at, at + SENTENCES_PER_DOCUMENT);
      let parsed = datesOf(part.map((s) => s.said).join('\n\n'), today);
      // A sentence the paragraphs did not keep apart (or split further) is parsed on its own, as each was before.
      if (parsed.length !== part.length) parsed = part.map(({ said }) => datesOf(said, today).flat());
      parsed.forEach((dates, i) => found[part[i]!.text]!.push(...dates));
    }
  }
  return found;
}

/** The periods each sentence of `text` names, read relative to `today` (a UTC date). */
function datesOf(text: string, today: string): Found[][] {
  const sentences: Found[][] = [];
  parser(text)
    .sentences()
    .forEach((sentence: ReturnType<typeof parser>) => {
      // Numbers as digits: the parser misses "two days ago" unless it ends the sentence, but not "2 days ago". Only in
      // a sentence with a number word, as when each was parsed alone ("a few" becomes a number beside one).
      if (sentence.has('#TextValue')) sentence.numbers().toNumber();
      const pastTense = sentence.has('#PastTense') && !sentence.has('(#FutureTense|will|going)');
      const found: Found[] = [];
      for (const { text: named, dates } of sentence.dates({ timezone: 'UTC', today }).json() as { text: string; dates?: { start?: string; end?: string } }[]) {
        if (!dates?.start || !dates.end) continue;
        const from = new Date(dates.start);
        const to = new Date(dates.end);
        if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || from > to) continue;
        found.push({ from: from.toISOString(), to: to.toISOString(), doubtful: pastTense && BARE.test(named) });
      }
      sentences.push(found);
    });
  return sentences;
}

/**
 * The first calendar period a query names ("last May", "in July 2023", "on 8 May, 2023", "last week"), read relative
 * to `now` in UTC, or undefined. Periods after `now` are kept: a turn can refer to a plan ("next month", see
 * periodReferredTo).
 */
export function periodNamedIn(text: string, now: Date): Period | undefined {
  const [first] = periodsIn([{ text, anchor: now }], mayReferToPeriod)[0]!;
  return first && { from: first.from, to: first.to };
}

/**
 * The period a turn's text refers to ("yesterday", "last week", "next month", "two years ago", "on 3 March", "in
 * 2019"), resolved against the turn's own time: what the turn is about, which its timestamp alone does not say. The
 * first one named; plans in the future count ("next month", and "I moved the appointment to 4 October"). Left out:
 * the turn's own day ("today", "for three years" read as now), which its timestamp says already, and a bare weekday or
 * month read into the future in a sentence told in the past tense ("the barbecue on Saturday was a disaster"): the
 * parser reads such a name forward, and the past tense says that reading is wrong.
 */
export function periodReferredTo(text: string, at: Date): Period | undefined {
  return periodsReferredTo([{ text, at }])[0];
}

/** periodReferredTo of each turn, the turns parsed together (see periodsIn): what a projection asks for a slice's turns. */
export function periodsReferredTo(turns: readonly { text: string; at: Date }[]): (Period | undefined)[] {
  return periodsIn(turns.map(({ text, at }) => ({ text, anchor: at })), mayReferToAnotherDay).map((found, i) => {
    const at = turns[i]!.at.toISOString();
    const day = at.slice(0, 10);
    const first = found.find((p) => !(p.from.slice(0, 10) === day && p.to.slice(0, 10) === day) && !(p.doubtful && p.from > at));
    return first && { from: first.from, to: first.to };
  });
}

export const isWithin = (period: Period, timestamp: string): boolean => {
  const at = new Date(timestamp).toISOString();
  return at >= period.from && at <= period.to;
};

/** Whether two periods share an instant (ends included). */
export const overlaps = (a: Period, b: Period): boolean => a.from <= b.to && b.from <= a.to;

const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

/**
 * A period as the words a question names it with, for full-text matching: a day as "14 September", a stretch within
 * one month as "September", up to three months as their names ("June July"), anything longer as its years ("2019",
 * "2019 2020"). A day or a month goes without its year: the named-period boost matches the year exactly, and as a
 * word "2021" would match every turn of that year to a question about one of its months.
 */
export function periodWords({ from, to }: Period): string {
  const start = new Date(from);
  const end = new Date(to);
  const month = (d: Date) => MONTH_NAMES[d.getUTCMonth()]!;
  if (from.slice(0, 10) === to.slice(0, 10)) return `${start.getUTCDate()} ${month(start)}`;
  const months: string[] = [];
  for (let d = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth(), 1)); d <= end && months.length <= 3; d.setUTCMonth(d.getUTCMonth() + 1)) months.push(month(d));
  if (months.length <= 3) return months.join(' ');
  const years: number[] = [];
  for (let y = start.getUTCFullYear(); y <= end.getUTCFullYear(); y++) years.push(y);
  return years.join(' ');
}
