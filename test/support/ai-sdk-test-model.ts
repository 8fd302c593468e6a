import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4Content, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';

/**
 * A minimal AI SDK language model (specification v4) over an OpenAI-compatible chat completions endpoint, through the
 * `openai` SDK: enough for the memory middleware's tests against the scripted test server (no `@ai-sdk/openai` is
 * installed). Streaming is simulated from one completion.
 */
export function chatCompletionsModel(baseURL: string, modelId = 'test-model'): LanguageModelV4 {
  const openai = new OpenAI({ baseURL, apiKey: 'test-key', maxRetries: 0 });

  async function doGenerate(options: LanguageModelV4CallOptions) {
    const tools: ChatCompletionTool[] = (options.tools ?? []).flatMap((t) =>
      t.type === 'function' ? [{ type: 'function' as const, function: { name: t.name, ...(t.description && { description: t.description }), parameters: t.inputSchema as Record<string, unknown> } }] : [],
    );
    const completion = await openai.chat.completions.create({ model: modelId, messages: toMessages(options.prompt), ...(tools.length > 0 && { tools }) });
    const message = completion.choices[0]!.message;
    const content: LanguageModelV4Content[] = [
      ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
      ...(message.tool_calls ?? []).flatMap((c) => (c.type === 'function' ? [{ type: 'tool-call' as const, toolCallId: c.id, toolName: c.function.name, input: c.function.arguments }] : [])),
    ];
    const finish = completion.choices[0]!.finish_reason;
    return {
      content,
      finishReason: { unified: finish === 'tool_calls' ? ('tool-calls' as const) : ('stop' as const), raw: finish },
      usage: {
        inputTokens: { total: completion.usage?.prompt_tokens, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: completion.usage?.completion_tokens, text: undefined, reasoning: undefined },
      },
      warnings: [],
    };
  }

  return {
    specificationVersion: 'v4',
    provider: 'test-openai',
    modelId,
    supportedUrls: {},
    doGenerate,
    async doStream(options) {
      const result = await doGenerate(options);
      const parts: LanguageModelV4StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      for (const [i, c] of result.content.entries()) {
        if (c.type === 'text') parts.push({ type: 'text-start', id: `t${i}` }, { type: 'text-delta', id: `t${i}`, delta: c.text }, { type: 'text-end', id: `t${i}` });
        else if (c.type === 'tool-call') parts.push(c);
      }
      parts.push({ type: 'finish', finishReason: result.finishReason, usage: result.usage });
      return { stream: new ReadableStream({ start: (controller) => (parts.forEach((p) => controller.enqueue(p)), controller.close()) }) };
    },
  };
}

function toMessages(prompt: LanguageModelV4CallOptions['prompt']): ChatCompletionMessageParam[] {
  return prompt.flatMap((m): ChatCompletionMessageParam[] => {
    switch (m.role) {
      case 'system':
        return [{ role: 'system', content: m.content }];
      case 'user':
        return [{ role: 'user', content: m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n') }];
      case 'assistant': {
        const text = m.content.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
        const calls = m.content.flatMap((p) => (p.type === 'tool-call' ? [{ id: p.toolCallId, type: 'function' as const, function: { name: p.toolName, arguments: typeof p.input === 'string' ? p.input : JSON.stringify(p.input) } }] : []));
        return [{ role: 'assistant', content: text || null, ...(calls.length > 0 && { tool_calls: calls }) }];
      }
      case 'tool':
        return m.content.flatMap((p) =>
          p.type === 'tool-result' ? [{ role: 'tool' as const, tool_call_id: p.toolCallId, content: p.output.type === 'text' ? p.output.value : JSON.stringify('value' in p.output ? p.output.value : p.output) }] : [],
        );
    }
  });
}
