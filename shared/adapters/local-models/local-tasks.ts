/**
 * The offline chat model's rules, one per structured task (see LocalChatModel for what they do and do not do). Kept
 * apart from the model class so the offline-model thread loads only these (and compromise) — not the metering, the
 * tokenizer or the task schemas.
 */
import type { ChatTaskInput, ChatTaskName, ChatTaskOutput } from '../../application/model-tasks.js';
import { MemoryError } from '../../domain/errors.js';
import { extractInsights } from './insights.js';
import { analyse, entities, topics } from './nlp.js';
import { synthesiseProfile } from './profile.js';
import { extendCumulative, extractiveSummary } from './summarise.js';
import { parseTranscript } from './text.js';
import { cutText } from '../../domain/text.js';

/** Bounds of the offline answers (the zod schemas in model-tasks.ts are the hard limits). */
export const LOCAL_LIMITS = {
  windowSummaryChars: 320,
  windowTopics: 5,
  windowEntities: 24,
  cumulativeSummaryChars: 1_600,
  sessionSummaryChars: 700,
  sessionKeyTopics: 8,
  insights: 30,
} as const;

type Solver<K extends ChatTaskName> = (input: ChatTaskInput<K>) => ChatTaskOutput<K>;


const solvers: { [K in ChatTaskName]: Solver<K> } = {
  windowMetadata: ({ conversation, previousSummary }) => {
    const turns = parseTranscript(conversation);
    const spoken = turns.filter((t) => t.role === 'user' || t.role === 'assistant');
    const text = (spoken.length > 0 ? spoken : turns).map((t) => t.content).join('\n');
    const summary = extractiveSummary(turns, LOCAL_LIMITS.windowSummaryChars);
    const analysis = analyse(text);
    return {
      summary,
      topics: topics(analysis, LOCAL_LIMITS.windowTopics),
      entities: entities(analysis, LOCAL_LIMITS.windowEntities),
      cumulativeSummary: extendCumulative(previousSummary, summary, LOCAL_LIMITS.cumulativeSummaryChars),
    };
  },
  sessionSummary: ({ conversation }) => {
    const turns = parseTranscript(conversation);
    const spoken = turns.filter((t) => t.role === 'user' || t.role === 'assistant');
    return {
      summary: extractiveSummary(turns, LOCAL_LIMITS.sessionSummaryChars),
      keyTopics: topics(analyse((spoken.length > 0 ? spoken : turns).map((t) => t.content).join('\n')), LOCAL_LIMITS.sessionKeyTopics),
    };
  },
  sessionInsights: ({ conversation, categories }) => {
    const insights = extractInsights(parseTranscript(conversation), categories, LOCAL_LIMITS.insights);
    return { reflectionFlag: insights.length > 0 ? 'insight' : 'no-insight', insights };
  },
  longTermProfile: (input) => synthesiseProfile(input),
  compactArtifact: ({ goal, excerpt, pluginDescription }) => {
    // Goal-aware without a model: the plugin's description plus the first excerpt line sharing a word with the goal.
    const words = new Set(goal.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []);
    const line = excerpt.split('\n').find((l) => (l.toLowerCase().match(/[\p{L}\p{N}]{4,}/gu) ?? []).some((w) => words.has(w)));
    const relevant = line ? `; relevant: ${cutText(line.replace(/\s+/g, ' ').trim(), 120)}` : '';
    return { description: cutText(`${pluginDescription}${relevant}`, 400) };
  },
};

/** Runs one task's rules on an input its schema accepted (synchronous CPU work: compromise NLP, pattern rules). */
export function solveLocalTask<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): ChatTaskOutput<K> {
  if (!Object.hasOwn(solvers, task)) throw new MemoryError('internal', `The offline model has no task ${String(task)}`, { task: String(task) });
  return (solvers[task] as Solver<K>)(input);
}
