import { describe, expect, it } from 'vitest';
import { AppendTurnsBody } from '../../../shared/contracts/turns.js';

const calls = [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }];
const accepts = (turn: object) => AppendTurnsBody.safeParse({ turns: [turn] }).success;

describe('TurnInput content', () => {
  it('given an assistant turn with tool calls, then content may be null or empty', () => {
    expect(accepts({ role: 'assistant', content: null, toolCalls: calls })).toBe(true);
    expect(accepts({ role: 'assistant', content: '', toolCalls: calls })).toBe(true);
  });

  it('given any other turn, then content must have text', () => {
    expect(accepts({ role: 'assistant', content: null })).toBe(false);
    expect(accepts({ role: 'assistant', content: null, toolCalls: [] })).toBe(false);
    expect(accepts({ role: 'assistant', content: '  ', toolCalls: calls })).toBe(false);
    expect(accepts({ role: 'user', content: null, toolCalls: calls })).toBe(false);
    expect(accepts({ role: 'tool', content: '', toolCallId: 'c1' })).toBe(false);
    expect(accepts({ role: 'system', content: null })).toBe(false);
  });

  it('names the content in the error', () => {
    const result = AppendTurnsBody.safeParse({ turns: [{ role: 'user', content: null }] });
    expect(result.error?.issues.map((i) => i.path.join('.'))).toEqual(['turns.0.content']);
  });
});
