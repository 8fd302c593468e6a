import { CHAT_TASKS, type ChatTaskInput, type ChatTaskName, type ChatTaskOutput, type ModelTier } from '../../application/model-tasks.js';
import type { ChatMessage, ChatModel, Meter, ToolCallRequest, ToolDefinition } from '../../application/ports.js';
import { MemoryError } from '../../domain/errors.js';
import { countTokens } from '../../domain/tokens.js';
import { solveLocalTask } from './local-tasks.js';
import { planTurn, type SentenceRanker } from './retrieval-planner.js';

/**
 * Where the rules run: given a task and its already validated input, the unvalidated answer. In process by default;
 * `createLocalModels` runs them on the offline-model thread (model-thread.ts), off the event loop that serves requests.
 */
export type LocalTaskRunner = <K extends ChatTaskName>(task: K, input: ChatTaskInput<K>) => Promise<unknown>;

/**
 * The offline fallback for the chat model (`MODEL_PROVIDER=local`): deterministic rules, no network, and **not a
 * language model**. It answers the same structured tasks in the same validated shapes, so the whole service runs with
 * no model endpoint, but what it produces is extractive and rule-based:
 * - `windowMetadata` / `sessionSummary`: summaries are sentences quoted from the conversation, chosen by word
 *   frequency and bounded in length; topics and entities come from compromise's pre-tagger and a few patterns;
 *   the cumulative summary is the previous one plus the interaction's, oldest sentences dropped when it grows too long.
 * - `sessionInsights`: keyword and pattern rules per configured category over the user's own statements (unknown
 *   categories match by the words of their name), restated in the third person where a simple rewrite is safe.
 * - `longTermProfile`: insights grouped by category; a newer statement replaces an older one only for a short list of
 *   facts it can recognise (ages, retirement age, marital status, risk tolerance, contact channel, …).
 * - `converse`: a fixed retrieval plan — call every offered tool with the question, then quote the best-matching
 *   result sentences (or say nothing relevant was found). With a ranker, the sentence encoder scores the matches.
 * It cannot paraphrase, infer, resolve references or understand negation beyond a few patterns.
 */
export class LocalChatModel implements ChatModel {
  readonly model = 'local-extractive-v2';

  constructor(
    private readonly meter: Meter,
    private readonly ranker?: SentenceRanker,
    /** Where the task rules run (default: in process, synchronously). Inputs and outputs are validated here either way. */
    private readonly runner?: LocalTaskRunner,
  ) {}

  async run<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<ChatTaskOutput<K>> {
    const started = performance.now();
    const inputText = JSON.stringify(input ?? null);
    let output: ChatTaskOutput<K> | undefined;
    try {
      const spec = Object.hasOwn(CHAT_TASKS, task) ? CHAT_TASKS[task] : undefined;
      if (!spec) throw new MemoryError('internal', `The offline model has no task ${String(task)}`, { task: String(task) });
      const checked = spec.input.safeParse(input);
      if (!checked.success) throw new MemoryError('internal', `Invalid input for the model task ${task}`, { issues: issuesOf(checked.error) });
      const valid = checked.data as ChatTaskInput<K>;
      const answer = this.runner ? await this.runner(task, valid) : solveLocalTask(task, valid);
      const parsed = spec.output.safeParse(answer);
      if (!parsed.success) throw new MemoryError('internal', `The offline model produced an invalid ${task} output`, { issues: issuesOf(parsed.error) });
      output = parsed.data as ChatTaskOutput<K>;
      return output;
    } finally {
      this.meter.record({
        operation: String(task),
        model: this.model,
        inputTokens: countTokens(inputText),
        outputTokens: output === undefined ? 0 : countTokens(JSON.stringify(output)),
        latencyMs: performance.now() - started,
        ok: output !== undefined,
      });
    }
  }

  async converse(request: { operation: string; tier: ModelTier; messages: readonly ChatMessage[]; tools: readonly ToolDefinition[] }): Promise<{
    content: string | null;
    toolCalls: ToolCallRequest[];
  }> {
    const started = performance.now();
    let turn: { content: string | null; toolCalls: ToolCallRequest[] } | undefined;
    try {
      turn = await planTurn(request.messages, request.tools, this.ranker);
      return turn;
    } finally {
      this.meter.record({
        operation: request.operation,
        model: this.model,
        inputTokens: countTokens(request.messages.map((m) => m.content ?? '').join('\n') + JSON.stringify(request.tools)),
        outputTokens: turn ? countTokens((turn.content ?? '') + (turn.toolCalls.length > 0 ? JSON.stringify(turn.toolCalls) : '')) : 0,
        latencyMs: performance.now() - started,
        ok: turn !== undefined,
      });
    }
  }
}

const issuesOf = (error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }) =>
  error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
