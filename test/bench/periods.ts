/**
 * The referred-period parse's cost (`periodReferredTo`, time-expressions.ts), on the texts a projection parses: the
 * LoCoMo dev turns that may refer to another day (`mayReferToAnotherDay`; as the evaluation ingests them, against
 * their session's time) and the bench fixture's (`turnContent`, the first 300 turns, as the sustained bench appends
 * them):
 *
 *   npx tsx test/bench/periods.ts [locomo-dev.json]      # prints JSON
 *
 * Each text is parsed once to warm up, then BENCH_PERIOD_ROUNDS (3) times; per set, the texts, the ones given a
 * period, p50 / p95 / mean ms a text over every timed parse, and the process's CPU time a text (`cpu`, what says more on a
 * loaded machine: it leaves out the time the parse waited for a core). `together`: the same texts as a projection asks
 * for them (`periodsReferredTo`, a slice of SLICE turns of the set at a time, their sentences parsed together), CPU
 * time a text with a time word, and whether every period equals the one parsed alone.
 */
import { readFileSync } from 'node:fs';
import { mayReferToAnotherDay, periodReferredTo, periodsReferredTo } from '../../shared/domain/time-expressions.js';
import { sessionDate } from '../support/locomo.js';
import { turnContent } from './fixtures.js';
import { round, summarize } from './stats.js';

const dataPath = process.argv[2] ?? new URL('../../../shared/data/locomo/locomo-dev.json', import.meta.url).pathname;
const rounds = Number(process.env.BENCH_PERIOD_ROUNDS ?? 3);

interface Turn {
  text: string;
  blip_caption?: string;
}
type Said = { text: string; at: Date };
const conversations = JSON.parse(readFileSync(dataPath, 'utf8')) as { conversation: Record<string, string | Turn[]> }[];
const locomo: Said[] = conversations.flatMap(({ conversation }) =>
  Object.entries(conversation)
    .filter(([key, turns]) => /^session_\d+$/.test(key) && Array.isArray(turns))
    .flatMap(([key, turns]) => {
      const at = sessionDate(conversation[`${key}_date_time`] as string);
      return (turns as Turn[]).map((t, i) => ({ text: t.blip_caption ? `${t.text} [shared a photo: ${t.blip_caption}]` : t.text, at: new Date(at.getTime() + i * 1000) }));
    }),
);
const bench: Said[] = Array.from({ length: 300 }, (_, i) => ({ text: turnContent(i), at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)) }));

function timed(all: Said[]) {
  const texts = all.filter(({ text }) => mayReferToAnotherDay(text));
  const withPeriod = texts.filter(({ text, at }) => periodReferredTo(text, at)).length;
  const samples: number[] = [];
  const cpu = process.cpuUsage();
  for (let r = 0; r < rounds; r++) {
    for (const { text, at } of texts) {
      const start = performance.now();
      periodReferredTo(text, at);
      samples.push(performance.now() - start);
    }
  }
  const { user, system } = process.cpuUsage(cpu);
  const { p50, p95, mean } = summarize(samples);
  const cpuMs = round((user + system) / 1000 / samples.length);
  return { texts: texts.length, of: all.length, withPeriod, msPerText: { p50: round(p50), p95: round(p95), mean: round(mean), cpu: cpuMs }, together: together(all, texts.length) };
}

/** The scheduler's slice (PROJECTION_SLICE_EVENTS' default): the turns one projection asks periods for. */
const SLICE = 128;

function together(all: Said[], timeWordTexts: number) {
  const alone = all.map(({ text, at }) => periodReferredTo(text, at));
  const slices = () => Array.from({ length: Math.ceil(all.length / SLICE) }, (_, i) => periodsReferredTo(all.slice(i * SLICE, (i + 1) * SLICE))).flat();
  const same = JSON.stringify(slices()) === JSON.stringify(alone);
  const cpu = process.cpuUsage();
  for (let r = 0; r < rounds; r++) slices();
  const { user, system } = process.cpuUsage(cpu);
  return { cpuMsPerText: round((user + system) / 1000 / rounds / timeWordTexts), sameAsAlone: same };
}

console.log(JSON.stringify({ rounds, locomo: timed(locomo), bench: timed(bench) }, null, 2));
