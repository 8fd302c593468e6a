import { describe, expect, it } from 'vitest';
import type { ContextTurn } from '../../../shared/contracts/context.js';
import { toContextTurn } from '../../../shared/domain/context.js';
import { callsFor, storedTurn, toOpenAIMessage, unansweredResults } from '../../../shared/domain/messages.js';
import { renderTurn } from '../../../shared/domain/turns.js';
import { turn } from '../../support/builders.js';

const call = (id: string, name = 'lookup', args = '{"q":1}') => ({ id, type: 'function' as const, function: { name, arguments: args } });
const ctx = (seq: number, content: string, overrides: Parameters<typeof turn>[2] = {}): ContextTurn => toContextTurn(turn(seq, content, overrides));
const ref = { key: 'turn-abc', description: 'JSON object with 3 keys', tokens: 812, bytes: 4000 };

describe('renderTurn', () => {
  it('given an assistant turn of only tool calls, shows the calls after the speaker', () => {
    expect(renderTurn(turn(2, '', { role: 'assistant', toolCalls: [call('c1'), call('c2', 'fetch', '{}')] }))).toBe('assistant: [tool calls: lookup({"q":1}), fetch({})]');
  });

  it('given a tool result, names the call it answers', () => {
    expect(renderTurn(turn(3, '42', { role: 'tool', name: 'lookup', toolCallId: 'c1' }))).toBe('tool (lookup) [for c1]: 42');
  });
});

describe('toOpenAIMessage', () => {
  it('given an assistant turn of only tool calls, then content is null and the calls are OpenAI tool_calls', () => {
    expect(toOpenAIMessage(ctx(2, '', { role: 'assistant', toolCalls: [call('c1')] }))).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }],
    });
  });

  it('given an assistant turn with text and tool calls, then keeps both', () => {
    expect(toOpenAIMessage(ctx(2, 'Checking.', { role: 'assistant', name: 'planner', toolCalls: [call('c1')] }))).toMatchObject({ content: 'Checking.', name: 'planner', tool_calls: [{ id: 'c1' }] });
  });

  it('given a tool result, then keeps tool_call_id and name', () => {
    expect(toOpenAIMessage(ctx(3, '42', { role: 'tool', name: 'lookup', toolCallId: 'c1' }))).toEqual({ role: 'tool', content: '42', name: 'lookup', tool_call_id: 'c1' });
  });

  it('given an offloaded turn shown in full (first use), then answers with its placeholder', () => {
    const shown = { ...ctx(3, '[MemoryRef: turn-abc - JSON object with 3 keys - 812 tokens]', { role: 'tool', toolCallId: 'c1', memoryRef: ref }), content: '{"the":"full output"}' };
    expect(toOpenAIMessage(shown).content).toBe('[MemoryRef: turn-abc - JSON object with 3 keys - 812 tokens]');
    expect(storedTurn(shown)).toMatchObject({ content: '[MemoryRef: turn-abc - JSON object with 3 keys - 812 tokens]', memoryRef: ref });
  });

  it('given tool fields on roles the API does not take them on, then leaves them out', () => {
    expect(toOpenAIMessage(ctx(1, 'hi', { role: 'user', toolCalls: [call('c1')], toolCallId: 'c0' }))).toEqual({ role: 'user', content: 'hi' });
  });
});

describe('unansweredResults and callsFor', () => {
  const history = [
    ctx(1, 'what is up?', { role: 'user' }),
    ctx(2, '', { role: 'assistant', toolCalls: [call('c1'), call('c2')] }),
    ctx(3, 'one', { role: 'tool', toolCallId: 'c1' }),
    ctx(4, 'two', { role: 'tool', toolCallId: 'c2' }),
    ctx(5, 'both done', { role: 'assistant' }),
  ];

  it('given a thread that opens after the call, then the opening results are unanswered and the call is found before it', () => {
    const thread = history.slice(3);
    expect([...unansweredResults(thread)]).toEqual(['c2']);
    expect(callsFor(history.slice(0, 3), new Set(['c2'])).map((t) => t.seq)).toEqual([2, 3]);
  });

  it('given a thread holding its calls, then nothing is unanswered', () => {
    expect(unansweredResults(history).size).toBe(0);
  });

  it('given the call is not in the turns before, then nothing is put in front', () => {
    expect(callsFor(history.slice(0, 1), new Set(['c2']))).toEqual([]);
  });
});
