import { beforeAll, describe, expect, it } from 'vitest';
import { WordNetCategories } from '../../../../shared/adapters/local-models/category-words.js';
import { categoriesOf, nounBases, WordNet } from '../../../../shared/adapters/local-models/wordnet.js';

// A tiny database in WordNet's own format: a synset's offset is its line's byte offset in data.noun. Offsets are
// written with 8 digits, so a line's length does not depend on them: lay the lines out first, then write them.
type Spec = { id: string; words: string[]; hypernyms?: string[]; instanceOf?: string[] };
function database(synsets: Spec[], index: Record<string, string[]>): WordNet {
  const header = '  1 This is a licence header line\n';
  const eight = (n: number) => String(n).padStart(8, '0');
  const line = (s: Spec, offsetOf: (id: string) => number) => {
    const pointers = [...(s.hypernyms ?? []).map((h) => `@ ${eight(offsetOf(h))} n 0000`), ...(s.instanceOf ?? []).map((h) => `@i ${eight(offsetOf(h))} n 0000`)];
    const words = s.words.map((w) => `${w} 0`).join(' ');
    return `${eight(offsetOf(s.id))} 03 n ${s.words.length.toString(16).padStart(2, '0')} ${words} ${String(pointers.length).padStart(3, '0')} ${pointers.join(' ')} | a gloss  \n`;
  };
  const offsets = new Map<string, number>();
  let at = header.length;
  for (const s of synsets) {
    offsets.set(s.id, at);
    at += line(s, () => 0).length;
  }
  const offsetOf = (id: string) => offsets.get(id)!;
  const entries = Object.entries(index).map(([lemma, ids]) => `${lemma} n ${ids.length} 1 @ ${ids.length} 0 ${ids.map((id) => eight(offsetOf(id))).join(' ')}  \n`);
  return new WordNet(`  1 licence\n${entries.join('')}`, header + synsets.map((s) => line(s, offsetOf)).join(''));
}

describe('WordNet reader', () => {
  const wordnet = database(
    [
      { id: 'entity', words: ['entity'] },
      { id: 'region', words: ['region'], hypernyms: ['entity'] },
      { id: 'country', words: ['country', 'state', 'land'], hypernyms: ['region'] },
      { id: 'european', words: ['European_country', 'European_nation'], hypernyms: ['country'] },
      { id: 'spain', words: ['Spain', 'Kingdom_of_Spain'], instanceOf: ['european'] },
      { id: 'toilet', words: ['toilet', 'john'], hypernyms: ['region'] },
      { id: 'apostle', words: ['John', 'Saint_John'], hypernyms: ['region'] },
    ],
    { spain: ['spain'], john: ['toilet', 'apostle'], european_country: ['european'] },
  );

  it('reads a lemma’s senses, most frequent first, and each synset’s words and hypernyms', () => {
    const [spain] = wordnet.senses('Spain');
    expect(wordnet.synset(spain!).words).toEqual(['spain', 'kingdom of spain']);
    const [european] = wordnet.synset(spain!).hypernyms;
    expect(wordnet.synset(european!).words).toEqual(['european country', 'european nation']);
    expect(wordnet.senses('European country')).toEqual([european]);
    expect(wordnet.senses('atlantis')).toEqual([]);
    expect(wordnet.depth(spain!)).toBe(4);
  });

  it('given a noun, its categories are its hypernyms’ head words up to the levels asked, leaving out those near the root', () => {
    expect(categoriesOf(wordnet, 'spain', { levels: 1, senses: 'first', minDepth: 0 })).toEqual(['european country']);
    expect(categoriesOf(wordnet, 'spain', { levels: 2, senses: 'first', minDepth: 0 })).toEqual(['european country', 'country']);
    expect(categoriesOf(wordnet, 'spain', { levels: 9, senses: 'first', minDepth: 0 })).toEqual(['european country', 'country', 'region', 'entity']);
    expect(categoriesOf(wordnet, 'spain', { levels: 9, senses: 'first', minDepth: 2 })).toEqual(['european country', 'country']);
  });

  it('given a noun with several senses, the first sense only or all of them', () => {
    expect(categoriesOf(wordnet, 'john', { levels: 1, senses: 'first', minDepth: 0 })).toEqual(['region']);
    expect(categoriesOf(wordnet, 'john', { levels: 2, senses: 'all', minDepth: 0 })).toEqual(['region', 'entity']);
  });

  it('reads a plural’s base forms by WordNet’s detachment rules', () => {
    expect(nounBases('countries')).toContain('country');
    expect(nounBases('dishes')).toContain('dish');
    expect(nounBases('women')).toContain('woman');
    expect(nounBases('games')[0]).toBe('games');
  });
});

describe('category words from the WordNet 3.1 database', () => {
  let wordnet: WordNet;
  beforeAll(async () => {
    wordnet = await WordNet.open();
  });

  it('given the real database, a country is a European country, a state an American state, a sport an activity', () => {
    expect(categoriesOf(wordnet, 'spain', { levels: 2, senses: 'first', minDepth: 4 })).toEqual(['european country', 'country']);
    expect(categoriesOf(wordnet, 'oregon', { levels: 2, senses: 'first', minDepth: 4 })).toEqual(['american state', 'state']);
    expect(categoriesOf(wordnet, 'swimming', { levels: 4, senses: 'first', minDepth: 4 })).toContain('activity');
  });

  it('given a turn, its nouns’ categories, names of people and unknown words left out', async () => {
    const categories = new WordNetCategories(wordnet, { levels: 2, senses: 'first', minDepth: 4 });
    const [spain, john, games] = await categories.categories(['We spent a week in Spain, John and I.', 'John called.', 'I play video games.']);
    expect(spain).toContain('european country');
    expect(spain).toContain('country');
    // "John" is a name here, not WordNet's first sense of "john" (a toilet).
    expect(john).toEqual([]);
    expect(games).toContain('game');
  });
});
