import { describe, expect, it } from 'vitest';
import { AppendTurnsBody } from '../../../shared/contracts/turns.js';
import { FactSearchBody } from '../../../shared/contracts/facts.js';
import { Instant, Text } from '../../../shared/contracts/text.js';
import { ListMemoriesQuery } from '../../../shared/contracts/artifacts.js';

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

describe('time ranges', () => {
  it('refuses a fact search or a memory list whose from is after its to, and takes a range of one instant or an open one', () => {
    const range = (from: string, to: string) => ({ from, to });
    for (const schema of [FactSearchBody, ListMemoriesQuery]) {
      const base = schema === FactSearchBody ? { query: 'q' } : {};
      const inverted = schema.safeParse({ ...base, ...range('2026-02-01T00:00:00Z', '2026-01-01T00:00:00+01:00') });
      expect(inverted.success).toBe(false);
      expect(inverted.error?.issues).toMatchObject([{ path: ['to'], message: 'from must not be after to' }]);
      // Offsets count: 01:00+01:00 is midnight UTC.
      expect(schema.safeParse({ ...base, ...range('2026-01-01T00:00:00Z', '2026-01-01T01:00:00+01:00') }).success).toBe(true);
      expect(schema.safeParse({ ...base, from: '2026-02-01T00:00:00Z' }).success).toBe(true);
      expect(schema.safeParse({ ...base, to: '2026-02-01T00:00:00Z' }).success).toBe(true);
    }
  });
});
