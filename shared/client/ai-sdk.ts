// Zero-code memory for the Vercel AI SDK (`ai` v7): a language-model middleware.
//   const model = wrapLanguageModel({ model: openai('gpt-4o'), middleware: memoryMiddleware({ client, userId, sessionId }) });
// `ai` is an optional peer dependency, imported for its types only.
import type { LanguageModelMiddleware } from 'ai';
import type { TurnInput } from './client.js';
import { guarded, memoryBlock, readContext, searchFactsFor, type MemoryHookOptions } from './memory-block.js';

type TransformArgs = Parameters<NonNullable<LanguageModelMiddleware['transformParams']>>[0];
type CallOptions = TransformArgs['params'];
type Prompt = CallOptions['prompt'];
type Message = Prompt[number];
type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer P> ? P : never;
type ToolResultOutput = Extract<Extract<Message, { role: 'tool' }>['content'][number], { type: 'tool-result' }>['output'];

export type MemoryMiddlewareOptions = MemoryHookOptions;

/**
 * Memory around every model call, with no other code:
 * - before the call, the new input (the prompt's messages after its last assistant message: the user's message, or
 *   the tool results of the previous step) is appended as turns — first, so a new session exists and its context
 *   carries the user's long-term memory — and the memory block (profile, recent sessions, summary, handoff, and
 *   optionally the top facts for the last user message) is put in as a system message after the caller's own;
 * - after the call, the model's answer is appended: its text, and its tool calls with their structure (an answer of
 *   only tool calls is stored with `content: null`).
 * When the prompt carries the conversation itself (it has assistant messages), the block leaves the verbatim turns
 * out; when it sends only the new message, the block includes them, so the service holds the history.
 */
export function memoryMiddleware(options: MemoryMiddlewareOptions): LanguageModelMiddleware {
  const append = async (turns: TurnInput[]) => {
    if (turns.length === 0) return undefined;
    return guarded(options, 'write', () => options.client.appendTurns(options.userId, options.sessionId, turns), undefined);
  };

  return {
    specificationVersion: 'v4',
    async transformParams({ params }) {
      const { prompt } = params;
      const lastAssistant = prompt.findLastIndex((m) => m.role === 'assistant');
      const appended = await append(prompt.slice(lastAssistant + 1).flatMap((m) => inputTurns(m, options.agentId)));
      const firstNewSeq = appended && appended.accepted.length > 0 ? Math.min(...appended.accepted.map((a) => a.seq)) : undefined;
      const lastUser = [...prompt].reverse().find((m) => m.role === 'user');
      const [context, facts] = await guarded(options, 'read', () => Promise.all([readContext(options), searchFactsFor(options, lastUser && textOf(lastUser))]), [null, []]);
      const block = memoryBlock(context, facts, lastAssistant >= 0 ? 'none' : (firstNewSeq ?? 'all'));
      if (block === null) return params;
      const leadingSystem = prompt.findIndex((m) => m.role !== 'system');
      const at = leadingSystem === -1 ? prompt.length : leadingSystem;
      return { ...params, prompt: [...prompt.slice(0, at), { role: 'system', content: block }, ...prompt.slice(at)] };
    },
    async wrapGenerate({ doGenerate }) {
      const result = await doGenerate();
      await append(answerTurns(result.content, options.agentId));
      return result;
    },
    async wrapStream({ doStream }) {
      const { stream, ...rest } = await doStream();
      const content: GenerateResult['content'] = [];
      let failed = false;
      const recorder = new TransformStream<StreamPart, StreamPart>({
        transform(part, controller) {
          if (part.type === 'text-delta') content.push({ type: 'text', text: part.delta });
          else if (part.type === 'tool-call') content.push(part);
          else if (part.type === 'error') failed = true;
          controller.enqueue(part);
        },
        async flush() {
          // A stream that ended in an error stored nothing of the answer; the caller retries the call.
          if (!failed) await append(answerTurns(content, options.agentId));
        },
      });
      return { ...rest, stream: stream.pipeThrough(recorder) };
    },
  };
}

const textOf = (m: Message): string =>
  typeof m.content === 'string' ? m.content : m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');

/** A prompt message the caller sent as turns: user text, assistant text and tool calls, tool results (never system text). */
function inputTurns(m: Message, agentId: string | undefined): TurnInput[] {
  const agent = agentId === undefined ? {} : { agentId };
  switch (m.role) {
    case 'system':
      return [];
    case 'user': {
      const content = textOf(m);
      return content.trim() ? [{ role: 'user', content, ...agent }] : [];
    }
    case 'assistant': {
      const toolCalls = m.content.flatMap((p) =>
        p.type === 'tool-call' && !p.providerExecuted ? [{ id: p.toolCallId, type: 'function' as const, function: { name: p.toolName, arguments: JSON.stringify(p.input ?? {}) } }] : [],
      );
      return assistantTurn(textOf(m), toolCalls, agentId);
    }
    case 'tool':
      return m.content.flatMap((p) =>
        p.type === 'tool-result' ? [{ role: 'tool' as const, content: toolOutputText(p.output), toolCallId: p.toolCallId, name: p.toolName, ...agent }] : [],
      );
  }
}

/** The model's answer as one assistant turn: its text, its tool calls (`content: null` when it only calls tools). */
function answerTurns(content: GenerateResult['content'], agentId: string | undefined): TurnInput[] {
  const text = content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
  const toolCalls = content.flatMap((p) =>
    p.type === 'tool-call' && !p.providerExecuted ? [{ id: p.toolCallId, type: 'function' as const, function: { name: p.toolName, arguments: p.input } }] : [],
  );
  return assistantTurn(text, toolCalls, agentId);
}

function assistantTurn(text: string, toolCalls: NonNullable<TurnInput['toolCalls']>, agentId: string | undefined): TurnInput[] {
  if (!text.trim() && toolCalls.length === 0) return [];
  return [{ role: 'assistant', content: text.trim() ? text : null, ...(toolCalls.length > 0 && { toolCalls }), ...(agentId !== undefined && { agentId }) }];
}

function toolOutputText(output: ToolResultOutput): string {
  const text = (() => {
    switch (output.type) {
      case 'text':
      case 'error-text':
        return output.value;
      case 'json':
      case 'error-json':
        return JSON.stringify(output.value);
      case 'execution-denied':
        return `(execution denied${output.reason ? `: ${output.reason}` : ''})`;
      case 'content':
        return output.value.map((p) => (p.type === 'text' ? p.text : p.type === 'file' ? `[${p.mediaType}]` : '')).join('\n');
      default:
        return JSON.stringify(output);
    }
  })();
  // The service stores no empty turn; an empty tool output is still an answer to its call.
  return text.trim() ? text : '(empty)';
}
