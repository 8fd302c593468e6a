import { WindowMetadata } from '../../contracts/interactions.js';
import type { ChatModel, ChatTasks } from '../../application/ports.js';
import { bound, contentWords, sentences } from './text.js';

const SUMMARY_CHARS = 320;
const CUMULATIVE_CHARS = 1_600;

/**
 * The offline stand-in for an LLM: deterministic, extractive, no network. It is not a language model — summaries
 * are chosen sentences and topics are frequent content words — but it answers every task the pipelines ask for
 * in the same validated shapes, so the whole service runs with no model endpoint.
 */
export class ExtractiveChatModel implements ChatModel {
  readonly model = 'local-extractive-v1';

  async run<K extends keyof ChatTasks>(task: K, input: ChatTasks[K]['input']): Promise<ChatTasks[K]['output']> {
    switch (task) {
      case 'windowMetadata':
        return windowMetadata(input);
      default:
        throw new Error(`The offline model has no task ${String(task)}`);
    }
  }
}

function windowMetadata({ conversation, previousSummary }: ChatTasks['windowMetadata']['input']): WindowMetadata {
  const lines = conversation.split('\n').map((line) => line.replace(/^[a-z]+( \([^)]*\))?( \[for [^\]]*\])?: /, ''));
  const topics = topTerms(lines.join(' '), 5);
  // The most informative sentence of each speaker turn, in order, until the budget is used.
  const picked = lines
    .map((line) => best(sentences(line), topics))
    .filter((s): s is string => Boolean(s))
    .sort((a, b) => score(b, topics) - score(a, topics))
    .slice(0, 3);
  const ordered = lines.flatMap((l) => picked.filter((p) => l.includes(p)).slice(0, 1));
  const summary = bound(unique(ordered).join(' ') || bound(lines.join(' '), SUMMARY_CHARS), SUMMARY_CHARS);
  const cumulative = previousSummary ? `${previousSummary} ${summary}` : summary;
  return WindowMetadata.parse({
    summary,
    topics,
    entities: entities(lines.join('\n')),
    // Keep the newest part when the running summary outgrows its budget.
    cumulativeSummary: cumulative.length > CUMULATIVE_CHARS ? `…${cumulative.slice(cumulative.length - CUMULATIVE_CHARS + 1).replace(/^\S*\s/, '')}` : cumulative,
  });
}

function topTerms(text: string, n: number): string[] {
  const counts = new Map<string, number>();
  for (const w of contentWords(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, n)
    .map(([w]) => w);
}

const score = (sentence: string, topics: readonly string[]) => {
  const ws = contentWords(sentence);
  return ws.filter((w) => topics.includes(w)).length * 2 + Math.min(ws.length, 12) / 12;
};

const best = (candidates: readonly string[], topics: readonly string[]) =>
  [...candidates].sort((a, b) => score(b, topics) - score(a, topics))[0];

/** Capitalised words not opening a sentence, numbers with units or currency: a cheap proper-noun/amount detector. */
function entities(text: string): string[] {
  const found: string[] = [];
  for (const s of sentences(text)) {
    const tokens = s.split(/\s+/);
    tokens.forEach((token, i) => {
      const clean = token.replace(/^[^\w$]+|[^\w%]+$/g, '');
      if (i > 0 && /^[A-Z][a-zA-Z]+$/.test(clean) && clean.length > 1) found.push(clean);
      else if (/^\$?\d[\d,.]*(%|k|K|m|M)?$/.test(clean) && /[$%kKmM]/.test(clean)) found.push(clean);
    });
  }
  return unique(found).slice(0, 24);
}

const unique = <T>(items: readonly T[]): T[] => [...new Set(items)];
