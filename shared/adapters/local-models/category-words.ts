import nlp from 'compromise';
import type { CategoryWords } from '../../application/ports.js';
import { STOPWORDS } from './text.js';
import { categoriesOf, nounBases, WordNet, type CategoryOptions } from './wordnet.js';

/**
 * How a word is read, from compromise's lexicon (a word → its usual tag, and the words its tagger may read either way)
 * without compromise's tagging, which cost about 1.6 ms a turn: always a `noun`; `never` one (a name, pronoun, date,
 * number, adjective or function word, as compromise's tagger left them out); a `name` of a person (a noun only when
 * written in lower case: "rose"); or `either` (a noun or a verb or adjective: the words around it decide).
 */
type Reading = { kind: 'noun' | 'never' | 'name' } | { kind: 'either'; usually: 'noun' | 'verb' | 'adjective' };
/**
 * What the word before tells of an `either` word: "a run", "for support", "is key" (`noun`) vs "I run", "to support"
 * (`verb`); after a noun (`compound`), a noun unless an object follows ("support group" vs "kids love it").
 */
type Cue = 'noun' | 'verb' | 'compound' | undefined;

const model = nlp.model() as unknown as {
  one: { lexicon: Record<string, string | string[]>; tagSet: Record<string, { parents: string[] }> };
  two: { switches: Record<string, string>; suffixPatterns: (Record<string, string> | null)[] };
};

/** The word's tags and their ancestors ("FemaleName" → FemaleName, Noun, Singular, Person, FirstName, ProperNoun); a
 * word not in the lexicon is tagged by its ending as compromise guesses ("-ous" an adjective, "-ing" a gerund). */
function lexiconTags(word: string): Set<string> {
  let tags = [model.one.lexicon[word] ?? []].flat();
  if (tags.length === 0) {
    const patterns = model.two.suffixPatterns;
    for (let n = Math.min(word.length - 1, patterns.length - 1); n > 0 && tags.length === 0; n--) {
      const tag = patterns[n]?.[word.slice(-n)];
      if (tag) tags = [tag];
    }
  }
  const all = new Set<string>();
  for (const tag of tags) for (const t of [tag, ...(model.one.tagSet[tag]?.parents ?? [])]) all.add(t);
  return all;
}

const NEVER = ['Pronoun', 'Date', 'Value', 'Duration', 'Determiner', 'Preposition', 'Conjunction', 'Adverb', 'Expression', 'QuestionWord', 'Negative', 'Modal', 'Copula', 'Condition'];

function readingOf(word: string): Reading {
  if (STOPWORDS.has(word)) return { kind: 'never' };
  const tags = lexiconTags(word);
  if (tags.has('Person')) return { kind: 'name' };
  if (NEVER.some((tag) => tags.has(tag))) return { kind: 'never' };
  const switches = model.two.switches[word] ?? '';
  // "camping", and "supporting" (an adjective or a gerund) as compromise's tagger read them.
  if (tags.has('Gerund') || switches.includes('Gerund')) return { kind: 'noun' };
  if (tags.has('Noun')) return /Verb|Adj/.test(switches) ? { kind: 'either', usually: 'noun' } : { kind: 'noun' };
  if (tags.has('Verb')) return { kind: 'either', usually: 'verb' };
  // An adjective guessed from its ending ("pic" as "-ic") may well be a noun.
  if (tags.has('Adjective')) return /Noun/.test(switches) || !(word in model.one.lexicon) ? { kind: 'either', usually: 'adjective' } : { kind: 'never' };
  // A word compromise does not know at all: WordNet decides, unless the words around it read it as a verb.
  return { kind: 'either', usually: 'noun' };
}

/** Words an object follows, not a noun: a verb comes first ("hope you", "check this", "love my"). */
const OBJECT = ['Pronoun', 'Determiner', 'Possessive'];

function cueOf(word: string): Cue {
  if (word === 'to' || /n[’']t$/.test(word)) return 'verb';
  const tags = lexiconTags(word);
  if (['Determiner', 'Possessive', 'Preposition', 'Adjective', 'Value', 'Copula'].some((tag) => tags.has(tag))) return 'noun';
  // "I run", "made me feel", "can run", "really love".
  if (['Pronoun', 'Modal', 'Adverb', 'Negative'].some((tag) => tags.has(tag))) return 'verb';
  return undefined;
}

/** Readings are cached per word, up to a bound (users' text may hold any number of distinct tokens). */
const memo = <T>(of: (word: string) => T) => {
  const cache = new Map<string, T>();
  return (word: string): T => {
    if (!cache.has(word)) {
      if (cache.size >= 50_000) cache.clear();
      cache.set(word, of(word));
    }
    return cache.get(word)!;
  };
};
const reading = memo(readingOf);
const tagsOf = memo(lexiconTags);
const cue = memo(cueOf);

/** Words, and the punctuation that ends a phrase; a hyphen joins nothing ("self-care" is "self care"). */
const TOKEN = /\p{L}[\p{L}'’]*|[^\s\p{L}-]/gu;

/**
 * The runs of nouns in a text, as compromise's tagger would have found them, read from its lexicon and the words
 * around each ambiguous one: names of people (capitalised), pronouns, dates, numbers, adjectives and function words
 * left out; "a run", "for support" and "have fun" kept, "I run", "to support" and "hope you" not.
 */
export function nouns(text: string): string[][] {
  // null: punctuation, a break between phrases.
  const tokens = [...text.matchAll(TOKEN)].map(([token]) => (/\p{L}/u.test(token) ? { token, word: token.toLowerCase().replace(/[’']s$/, '') } : null));
  const runs: string[][] = [];
  let run: string[] = [];
  let before: Cue;
  for (let i = 0; i < tokens.length; i++) {
    const current = tokens[i];
    const read: Reading = current && /^[a-z][a-z']*$/.test(current.word) ? reading(current.word) : { kind: 'never' };
    const next = tokens[i + 1];
    const isNoun =
      read.kind === 'noun' ||
      (read.kind === 'name' && current!.token[0] === current!.word[0]) ||
      (read.kind === 'either' && eitherIsNoun(read.usually, before, next ? reading(next.word) : undefined, next?.word));
    if (isNoun) run.push(current!.word);
    else if (run.length > 0) {
      runs.push(run);
      run = [];
    }
    before = !current ? undefined : isNoun ? 'compound' : cue(current.word);
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

function eitherIsNoun(usually: 'noun' | 'verb' | 'adjective', before: Cue, next: Reading | undefined, nextWord: string | undefined): boolean {
  // "a positive impact": an adjective before a noun describes it.
  if (usually === 'adjective') return before === 'noun' && (next === undefined || next.kind === 'never');
  if (before === 'noun' || before === 'verb') return before === 'noun';
  // Else a word followed by an object is a verb: "check this out", "hope you are well".
  if (nextWord && OBJECT.some((tag) => tagsOf(nextWord).has(tag))) return false;
  return usually === 'noun' || before === 'compound';
}

/**
 * Category words from WordNet (the `CategoryWords` port; offline, data only): the nouns of a text, and each one's
 * hypernyms a few levels up ("we spent a week in Spain" → "european country country"). Two nouns in a row are looked up
 * together first ("video game"). A word WordNet does not know adds nothing.
 */
export class WordNetCategories implements CategoryWords {
  constructor(
    private readonly wordnet: WordNet,
    private readonly options: CategoryOptions,
  ) {}

  static async open(options: CategoryOptions): Promise<WordNetCategories> {
    return new WordNetCategories(await WordNet.open(), options);
  }

  categories(texts: readonly string[]): Promise<string[][]> {
    return Promise.resolve(texts.map((text) => this.#of(text)));
  }

  #of(text: string): string[] {
    const words = new Set<string>();
    const lemmas = new Set<string>();
    for (const run of nouns(text)) {
      for (let i = 0; i < run.length; i++) {
        const pair = i + 1 < run.length ? this.#lemma(`${run[i]} ${run[i + 1]}`) : undefined;
        if (pair) {
          lemmas.add(pair);
          i++;
          continue;
        }
        const single = this.#lemma(run[i]!);
        if (single) lemmas.add(single);
      }
    }
    for (const lemma of lemmas) for (const category of categoriesOf(this.wordnet, lemma, this.options)) words.add(category);
    return [...words];
  }

  /** The form WordNet has the word under ("countries" → "country"), if any. */
  #lemma(word: string): string | undefined {
    return nounBases(word).find((base) => this.wordnet.senses(base).length > 0);
  }
}
