import type { CategoryWords } from '../../application/ports.js';
import { analyse } from './nlp.js';
import { categoriesOf, nounBases, WordNet, type CategoryOptions } from './wordnet.js';

interface Term {
  normal: string;
  tags: string[];
}

/** A term whose categories are looked up: a noun (not a person's name, a pronoun, a date or a number) or a gerund ("camping"). */
const candidate = ({ tags, normal }: Term): boolean =>
  (tags.includes('Noun') || tags.includes('Gerund')) &&
  !['Pronoun', 'Person', 'Date', 'Value', 'Duration'].some((tag) => tags.includes(tag)) &&
  /^[a-z][a-z'-]*$/.test(normal.replace(/['’]s$/, ''));

/**
 * Category words from WordNet (the `CategoryWords` port; offline, data only): the nouns compromise tags in a text,
 * and each one's hypernyms a few levels up ("we spent a week in Spain" → "european country country"). Two nouns in a
 * row are looked up together first ("video game"). A word WordNet does not know adds nothing.
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
    for (const sentence of analyse(text).sentences as Term[][]) {
      for (let i = 0; i < sentence.length; i++) {
        const term = sentence[i]!;
        if (!candidate(term)) continue;
        const next = sentence[i + 1];
        const pair = next && candidate(next) ? this.#lemma(`${clean(term.normal)} ${clean(next.normal)}`) : undefined;
        if (pair) {
          lemmas.add(pair);
          i++;
          continue;
        }
        const single = this.#lemma(clean(term.normal));
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

const clean = (normal: string) => normal.replace(/['’]s$/, '').toLowerCase();
