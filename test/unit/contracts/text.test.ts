import { describe, expect, it } from 'vitest';
import { AppendTurnsBody } from '../../../shared/contracts/turns.js';
import { FactSearchBody } from '../../../shared/contracts/facts.js';
import { Instant, Text } from '../../../shared/contracts/text.js';

describe('storable text', () => {
  it('refuses NUL and lone surrogates, keeps paired ones', () => {
    expect(Text.safeParse('😀 fine').success).toBe(true);
    for (const bad of ['a\u0000', '\uD83D', '\uDE00', 'x\uD83Dy', '\uDE00\uD83D']) expect(Text.safeParse(bad).success).toBe(false);
  });

  it('applies to every string of a turn, tool calls included', () => {
    const turn = (over: object) => AppendTurnsBody.safeParse({ turns: [{ role: 'assistant', content: 'ok', ...over }] }).success;
    expect(turn({})).toBe(true);
    expect(turn({ content: 'a\u0000' })).toBe(false);
    expect(turn({ name: 'a\u0000' })).toBe(false);
    expect(turn({ toolCallId: 'a\u0000' })).toBe(false);
    expect(turn({ toolCalls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '\uD800' } }] })).toBe(false);
  });
});

describe('instants', () => {
  it('lie between the years 1000 and 9999', () => {
    expect(Instant.safeParse('2024-05-01T10:00:00+02:00').success).toBe(true);
    expect(Instant.safeParse('1000-01-01T00:00:00Z').success).toBe(true);
    expect(Instant.safeParse('0000-01-01T00:00:00Z').success).toBe(false);
    expect(Instant.safeParse('0999-12-31T23:59:59Z').success).toBe(false);
    expect(FactSearchBody.safeParse({ query: 'x', from: '0000-01-01T00:00:00Z' }).success).toBe(false);
    expect(AppendTurnsBody.safeParse({ turns: [{ role: 'user', content: 'x', timestamp: '0000-01-01T00:00:00Z' }] }).success).toBe(false);
  });
});
