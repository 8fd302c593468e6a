import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { CHAT_TASKS, type ChatTaskInput, type ChatTaskName, type ChatTaskOutput, type ModelTier } from '../../application/model-tasks.js';
import type { ChatMessage, ChatModel, ToolCallRequest, ToolDefinition } from '../../application/ports.js';
import { renderTaskPrompt } from '../../application/prompts.js';
import { MemoryError } from '../../domain/errors.js';
import { InvalidModelOutput, withOneRetryOnInvalidOutput, type CallContext, type ModelEndpoint, type Tokens } from './endpoint.js';
import { responseSchema, withEnumAt, type ResponseSchema } from './json-schema.js';

/**
 * ChatModel on chat completions (Azure OpenAI or any OpenAI-compatible endpoint). Structured tasks use the
 * `json_schema` response format and are validated with the task's zod schema; an invalid answer is asked for once
 * more, then is an `upstream_unavailable` error — never a guess, never partial data.
 */
export class OpenAIChatModel implements ChatModel {
  readonly model: string;
  private readonly schemas = new Map<ChatTaskName, ResponseSchema>();

  constructor(
    private readonly endpoint: ModelEndpoint,
    /** `azure-openai` or `openai`: the prefix of the model ids recorded with usage. */
    private readonly provider: string,
    /** Deployment (Azure) or model (OpenAI) per tier. */
    private readonly names: Record<ModelTier, string>,
  ) {
    this.model = `${provider}:${names.chat}+${names.mini}`;
  }

  async run<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<ChatTaskOutput<K>> {
    const spec = CHAT_TASKS[task];
    const checked = spec.input.safeParse(input);
    if (!checked.success) {
      throw new MemoryError('internal', `Invalid input for the model task ${task}`, { issues: checked.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) });
    }
    const valid = checked.data as ChatTaskInput<K>;
    const prompt = renderTaskPrompt(task, valid);
    const { schema, strict } = this.responseSchemaFor(task, valid);
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: prompt.system },
      { role: 'user', content: prompt.user },
    ];
    return this.complete(task, spec.tier, { messages, response_format: { type: 'json_schema', json_schema: { name: task, strict, schema } } }, (completion) =>
      parseStructured(task, valid, completion),
    );
  }

  async converse(request: { operation: string; tier: ModelTier; messages: readonly ChatMessage[]; tools: readonly ToolDefinition[] }): Promise<{
    content: string | null;
    toolCalls: ToolCallRequest[];
  }> {
    const tools: ChatCompletionTool[] = request.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
    const known = new Set(request.tools.map((t) => t.name));
    return this.complete(request.operation, request.tier, { messages: request.messages.map(toOpenAIMessage), ...(tools.length > 0 && { tools }) }, (completion) =>
      parseTurn(completion, known),
    );
  }

  /** One chat completion on the tier's deployment, metered and retried once if its output does not parse. */
  private complete<T>(operation: string, tier: ModelTier, body: Omit<ChatCompletionCreateParamsNonStreaming, 'model'>, parse: (completion: ChatCompletion) => T): Promise<T> {
    const deployment = this.names[tier];
    const context: CallContext = { operation, model: `${this.provider}:${deployment}` };
    return withOneRetryOnInvalidOutput(context, () =>
      this.endpoint.call(context, () => this.endpoint.client.chat.completions.create({ ...body, model: deployment }), chatTokens, parse),
    );
  }

  /** The output's JSON schema; for insights, categories are limited to the configured ones. */
  private responseSchemaFor<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): ResponseSchema {
    let base = this.schemas.get(task);
    if (!base) this.schemas.set(task, (base = responseSchema(CHAT_TASKS[task].output)));
    if (task !== 'sessionInsights') return base;
    const { categories } = input as ChatTaskInput<'sessionInsights'>;
    return { ...base, schema: withEnumAt(base.schema, ['insights', 'items', 'category'], categories) };
  }
}

const chatTokens = (completion: ChatCompletion): Tokens => ({
  inputTokens: completion.usage?.prompt_tokens ?? 0,
  outputTokens: completion.usage?.completion_tokens ?? 0,
});

function answerOf(completion: ChatCompletion) {
  const choice = completion.choices[0];
  if (!choice) throw new InvalidModelOutput('the response has no choices');
  if (choice.message.refusal) throw new InvalidModelOutput('the model refused');
  if (choice.finish_reason === 'length') throw new InvalidModelOutput('the output was cut off at the token limit');
  if (choice.finish_reason === 'content_filter') throw new InvalidModelOutput('the output was filtered');
  return choice.message;
}

function parseStructured<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>, completion: ChatCompletion): ChatTaskOutput<K> {
  const content = answerOf(completion).content;
  if (!content) throw new InvalidModelOutput('the output is empty');
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch {
    throw new InvalidModelOutput('the output is not JSON');
  }
  const parsed = CHAT_TASKS[task].output.safeParse(json);
  if (!parsed.success) {
    throw new InvalidModelOutput('the output does not match the schema', parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
  }
  const output = parsed.data as ChatTaskOutput<K>;
  const issues = consistencyIssues(task, input, output);
  if (issues.length > 0) throw new InvalidModelOutput('the output does not fit its input', issues);
  return output;
}

/** What a schema cannot say: insights only in the configured categories, superseded ids only from the input. */
function consistencyIssues<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>, output: ChatTaskOutput<K>): { path: string; message: string }[] {
  if (task === 'sessionInsights') {
    const { categories } = input as ChatTaskInput<'sessionInsights'>;
    return (output as ChatTaskOutput<'sessionInsights'>).insights.flatMap((insight, i) =>
      categories.includes(insight.category) ? [] : [{ path: `insights.${i}.category`, message: 'not one of the configured categories' }],
    );
  }
  if (task === 'longTermProfile') {
    const ids = new Set((input as ChatTaskInput<'longTermProfile'>).insights.map((i) => i.id));
    return (output as ChatTaskOutput<'longTermProfile'>).supersededInsightIds.flatMap((id, i) =>
      ids.has(id) ? [] : [{ path: `supersededInsightIds.${i}`, message: 'not an id of the given insights' }],
    );
  }
  return [];
}

function parseTurn(completion: ChatCompletion, known: ReadonlySet<string>): { content: string | null; toolCalls: ToolCallRequest[] } {
  const message = answerOf(completion);
  const toolCalls = (message.tool_calls ?? []).map((call, i): ToolCallRequest => {
    if (call.type !== 'function') throw new InvalidModelOutput(`tool call ${i} is not a function call`);
    if (!known.has(call.function.name)) throw new InvalidModelOutput(`tool call ${i} names a tool that was not offered`);
    let args: unknown;
    try {
      // Some models send "" for a function without parameters.
      args = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
    } catch {
      throw new InvalidModelOutput(`the arguments of tool call ${i} are not JSON`);
    }
    return { id: call.id, name: call.function.name, arguments: args };
  });
  return { content: message.content ?? null, toolCalls };
}

function toOpenAIMessage(message: ChatMessage): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.content };
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls?.length && {
          tool_calls: message.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments ?? {}) } })),
        }),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}
