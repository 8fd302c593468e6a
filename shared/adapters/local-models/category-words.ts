import nlp from 'compromise';
import type { CategoryWords } from '../../application/ports.js';
import { categoriesOf, nounBases, WordNet, type CategoryOptions } from './wordnet.js';

/**
 * How a word is read, from compromise's lexicon (a word → its usual tag, and the words its tagger may read either way)
 * without compromise's tagging, which cost about 1.6 ms a turn: always a `noun`; `never` one (a pronoun, date, number,
 * adjective or function word, as compromise's tagger left them out); a `name` of a person (a noun only when written in
 * lower case: "rose"); a `verb` (a noun only after a determiner: "a blast"); or `either` (a noun, or a verb or an
 * adjective: the words around it decide).
 */
type Reading = { kind: 'noun' | 'never' | 'name' | 'verb' } | { kind: 'either'; usually: 'noun' | 'verb' | 'adjective' };
/**
 * What the word before tells of the next: a `determiner` ("a run", "my love") or a word a `noun` follows ("for
 * support", "is key", "great support") vs a `verb` ("I run", "to support", "can't wait"); or that it is a noun itself
 * (`compound`).
 */
type Cue = 'determiner' | 'noun' | 'verb' | 'compound' | undefined;

// The shape of compromise's model is its own, not its documented API: package.json pins compromise exactly, and the
// unit tests of `nouns` fail if an upgrade changes it.
const model = nlp.model() as unknown as {
  one: { lexicon: Record<string, string | string[]>; tagSet: Record<string, { parents: string[] }> };
  two: { switches: Record<string, string>; suffixPatterns: (Record<string, string> | null)[] };
};

/**
 * The word's tags and their ancestors ("FemaleName" → FemaleName, Noun, Singular, Person, FirstName, ProperNoun); a
 * word not in the lexicon is tagged by its ending as compromise guesses ("-ous" an adjective, "-ing" a gerund).
 */
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

const NEVER = ['Pronoun', 'Possessive', 'Date', 'Value', 'Duration', 'Determiner', 'Preposition', 'Conjunction', 'Adverb', 'Expression', 'QuestionWord', 'Negative', 'Modal', 'Copula', 'Condition'];

function readingOf(word: string): Reading {
  const tags = tagsOf(word);
  if (tags.has('Person')) return { kind: 'name' };
  if (NEVER.some((tag) => tags.has(tag))) return { kind: 'never' };
  const switches = model.two.switches[word] ?? '';
  // "camping", and "supporting" (an adjective or a gerund), as compromise's tagger read them.
  if (tags.has('Gerund') || switches.includes('Gerund')) return { kind: 'noun' };
  if (tags.has('Noun')) return /Verb|Adj/.test(switches) ? { kind: 'either', usually: 'noun' } : { kind: 'noun' };
  if (tags.has('Verb')) return /Noun|Plural|Actor/.test(switches) ? { kind: 'either', usually: 'verb' } : { kind: 'verb' };
  // An adjective guessed from its ending ("pic" as "-ic") may well be a noun.
  if (tags.has('Adjective')) return /Noun/.test(switches) || !(word in model.one.lexicon) ? { kind: 'either', usually: 'adjective' } : { kind: 'never' };
  // A word compromise does not know at all: WordNet decides, unless the words around it read it as a verb.
  return { kind: 'either', usually: 'noun' };
}

function cueOf(word: string): Cue {
  if (word === 'to' || /n[’']t$/.test(word)) return 'verb';
  const tags = tagsOf(word);
  if (tags.has('Determiner') || tags.has('Possessive')) return 'determiner';
  if (['Preposition', 'Adjective', 'Value', 'Copula'].some((tag) => tags.has(tag))) return 'noun';
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
const tagsOf = memo(lexiconTags);
const reading = memo(readingOf);
const cue = memo(cueOf);

/** Words, and the punctuation that ends a phrase; a hyphen joins nothing ("self-care" is "self care"). */
const TOKEN = /\p{L}[\p{L}'’]*|[^\s\p{L}-]/gu;

/**
 * The runs of nouns in a text, as compromise's tagger would have found them, read from its lexicon and the words
 * around each ambiguous one: names of people (capitalised), pronouns, dates, numbers, adjectives and function words
 * left out; "a run", "for support" and "a support group" kept, "I run", "to support" and "hope you" not.
 */
export function nouns(text: string): string[][] {
  // null: punctuation, a break between phrases.
  const tokens = (text.match(TOKEN) ?? []).map((token) => (/\p{L}/u.test(token) ? { token, word: token.toLowerCase().replace(/[’']s$/, '') } : null));
  const readings = tokens.map((t): Reading => (t && /^[a-z][a-z']*$/.test(t.word) ? reading(t.word) : { kind: 'never' }));
  // Two words the lexicon has together are read as one ("a lot" is an adverb, "a few" a number); phrasal verbs
  // ("looking forward") are left to each word, as compromise's tagger read a gerund as a noun.
  for (let i = 0; i + 1 < tokens.length; i++) {
    const words = tokens[i] && tokens[i + 1] ? `${tokens[i]!.word} ${tokens[i + 1]!.word}` : '';
    const pair = words in model.one.lexicon ? tagsOf(words) : undefined;
    if (pair && !pair.has('Verb')) readings[i] = readings[i + 1] = { kind: pair.has('Noun') ? 'noun' : 'never' };
  }
  const runs: string[][] = [];
  let run: string[] = [];
  let before: Cue;
  for (let i = 0; i < tokens.length; i++) {
    const current = tokens[i];
    const read = readings[i]!;
    const isNoun =
      read.kind === 'noun' ||
      (read.kind === 'name' && current!.token[0] === current!.word[0]) ||
      (read.kind === 'verb' && before === 'determiner') ||
      (read.kind === 'either' && eitherIsNoun(read.usually, before, readings[i + 1], tokens[i + 1]?.word));
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

/** Words an object follows, not a noun: a verb comes first ("hope you", "check this", "love my"). */
const OBJECT = ['Pronoun', 'Determiner', 'Possessive'];

function eitherIsNoun(usually: 'noun' | 'verb' | 'adjective', before: Cue, next: Reading | undefined, nextWord: string | undefined): boolean {
  const nounFollows = next?.kind === 'noun' || (next?.kind === 'either' && next.usually === 'noun');
  // "a positive impact": an adjective before a noun describes it.
  if (usually === 'adjective') return (before === 'determiner' || before === 'noun') && !nounFollows && next?.kind !== 'either';
  if (before === 'determiner' || before === 'noun') return true;
  if (before === 'verb') return false;
  // Else a word followed by an object is a verb: "check this out", "hope you are well".
  if (nextWord && OBJECT.some((tag) => tagsOf(nextWord).has(tag))) return false;
  // After a noun, a verb is a compound's part if a noun or the phrase's end follows: "support group", "learning
  // experience." but "kids have fun".
  if (before === 'compound' && usually === 'verb') return nounFollows || nextWord === undefined;
  return usually === 'noun';
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
    for (const run of nouns(text)) {
      for (let i = 0; i < run.length; i++) {
        const pair = i + 1 < run.length ? this.#categoriesOf(`${run[i]} ${run[i + 1]}`) : undefined;
        if (pair) i++;
        for (const category of pair ?? this.#categoriesOf(run[i]!) ?? []) words.add(category);
      }
    }
    return [...words];
  }

  /**
   * A noun's (or two nouns') categories, under the form WordNet has it ("countries" → "country"); undefined if WordNet
   * lacks it. Cached: a turn's nouns are mostly ones seen before, and reading them from WordNet each time was most of
   * what category words allocated.
   */
  readonly #categoriesOf = memo((noun: string): readonly string[] | undefined => {
    const lemma = nounBases(noun).find((base) => this.wordnet.senses(base).length > 0);
    return lemma === undefined ? undefined : categoriesOf(this.wordnet, lemma, this.options);
  });
}
