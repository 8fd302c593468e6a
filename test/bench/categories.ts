/**
 * Category words' cost on the projecting thread (category-words.ts), over the LoCoMo dev turns as the evaluation
 * ingests them (a shared photo's caption appended):
 *
 *   npx tsx test/bench/categories.ts [locomo-dev.json]      # prints JSON
 *
 * Figures, each the median of BENCH_CATEGORY_ROUNDS (5) passes over every turn after one warm-up pass, in ms a turn
 * and turns a second:
 * - `compromiseTagging`: compromise's full tagging of a turn (`analyse`), which the category words ran before reading
 *   nouns from compromise's lexicon instead (topics and entities still run it, per window);
 * - `nouns`: the nouns read from compromise's lexicon (`nouns`);
 * - `categoryWords`: the whole port, nouns and their WordNet lookups (`WordNetCategories.categories`);
 * and the category words and distinct nouns a turn gets, and the time to open WordNet.
 */
import { readFileSync } from 'node:fs';
import { nouns, WordNetCategories } from '../../shared/adapters/local-models/category-words.js';
import { analyse } from '../../shared/adapters/local-models/nlp.js';
import { WordNet } from '../../shared/adapters/local-models/wordnet.js';
import { round } from './stats.js';

const dataPath = process.argv[2] ?? new URL('../../../shared/data/locomo/locomo-dev.json', import.meta.url).pathname;
const rounds = Number(process.env.BENCH_CATEGORY_ROUNDS ?? 5);

interface Turn {
  text: string;
  blip_caption?: string;
}
const conversations = JSON.parse(readFileSync(dataPath, 'utf8')) as { conversation: Record<string, string | Turn[]> }[];
const texts = conversations.flatMap((c) =>
  Object.entries(c.conversation)
    .filter(([key, turns]) => /^session_\d+$/.test(key) && Array.isArray(turns))
    .flatMap(([, turns]) => (turns as Turn[]).map((t) => (t.blip_caption ? `${t.text} [shared a photo: ${t.blip_caption}]` : t.text))),
);

const t0 = performance.now();
const wordnet = await WordNet.open();
const openMs = performance.now() - t0;
const categories = new WordNetCategories(wordnet, { levels: 2, senses: 'first', minDepth: 4 });

/** ms a turn and turns a second of `run` over every turn: the median of `rounds` passes after a warm-up pass. */
async function timed(run: (text: string) => unknown): Promise<{ msPerTurn: number; turnsPerSecond: number }> {
  const passes: number[] = [];
  for (let r = 0; r <= rounds; r++) {
    const start = performance.now();
    for (const text of texts) await run(text);
    if (r > 0) passes.push(performance.now() - start);
  }
  const median = passes.sort((a, b) => a - b)[Math.floor(passes.length / 2)]!;
  return { msPerTurn: round(median / texts.length, 3), turnsPerSecond: Math.round((1000 * texts.length) / median) };
}

const words = await categories.categories(texts);
console.log(
  JSON.stringify(
    {
      turns: texts.length,
      wordnetOpenMs: Math.round(openMs),
      compromiseTagging: await timed(analyse),
      nouns: await timed(nouns),
      categoryWords: await timed((text) => categories.categories([text])),
      categoryWordsPerTurn: round(words.reduce((n, w) => n + w.length, 0) / texts.length, 2),
      distinctNounsPerTurn: round(texts.reduce((n, text) => n + new Set(nouns(text).flat()).size, 0) / texts.length, 2),
    },
    null,
    2,
  ),
);
