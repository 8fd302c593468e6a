/**
 * The rule-based atomic-fact extractor's cost (atomic-facts.ts), over the LoCoMo dev turns as the evaluation ingests
 * them (a shared photo's caption appended), each turn's addressee the speaker before it:
 *
 *   npx tsx test/bench/atomic-facts.ts [locomo-dev.json]      # prints JSON
 *
 * ms a turn: the median of BENCH_FACT_ROUNDS (5) passes over every turn after one warm-up pass; and the facts and
 * their words a turn gets.
 */
import { readFileSync } from 'node:fs';
import { atomicFacts, factText } from '../../shared/adapters/local-models/atomic-facts.js';
import { round } from './stats.js';

const dataPath = process.argv[2] ?? new URL('../../../shared/data/locomo/locomo-dev.json', import.meta.url).pathname;
const rounds = Number(process.env.BENCH_FACT_ROUNDS ?? 5);

interface Turn {
  speaker: string;
  text: string;
  blip_caption?: string;
}
const conversations = JSON.parse(readFileSync(dataPath, 'utf8')) as { conversation: Record<string, string | Turn[]> }[];
const turns = conversations.flatMap((c) =>
  Object.entries(c.conversation)
    .filter(([key, ts]) => /^session_\d+$/.test(key) && Array.isArray(ts))
    .flatMap(([, ts]) =>
      (ts as Turn[]).map((t, i, all) => ({
        text: t.blip_caption ? `${t.text} [shared a photo: ${t.blip_caption}]` : t.text,
        voices: { speaker: t.speaker, addressee: all[i - 1]?.speaker ?? all[i + 1]?.speaker },
      })),
    ),
);

const passes: number[] = [];
for (let r = 0; r <= rounds; r++) {
  const start = performance.now();
  for (const t of turns) atomicFacts(t.text, t.voices);
  if (r > 0) passes.push(performance.now() - start);
}
const median = passes.sort((a, b) => a - b)[Math.floor(passes.length / 2)]!;
const facts = turns.map((t) => atomicFacts(t.text, t.voices).map(factText));
const words = facts.flat().reduce((n, f) => n + f.split(' ').length, 0);
console.log(
  JSON.stringify({
    turns: turns.length,
    msPerTurn: round(median / turns.length, 3),
    turnsPerSecond: Math.round((1000 * turns.length) / median),
    factsPerTurn: round(facts.flat().length / turns.length, 2),
    wordsPerTurn: round(words / turns.length, 2),
  }),
);
