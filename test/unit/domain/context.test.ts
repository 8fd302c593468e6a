import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildContext, type ContextInput } from '../../../shared/domain/context.js';
import { MemoryError } from '../../../shared/domain/errors.js';
import { countTokens } from '../../../shared/domain/tokens.js';
import { turn, turns } from '../../support/builders.js';

const base: ContextInput = { profile: null, recentSessions: [], summary: '', threads: [], nActiveTurns: 5, countTokens };

describe('buildContext', () => {
  it('given a fresh session, shows every turn verbatim under Active Conversation', () => {
    const built = buildContext({ ...base, threads: [{ coversThroughSeq: 0, turns: turns(1, 3) }] });
    expect(built.text).toBe('### Active Conversation\nuser: turn 1\nassistant: turn 2\nuser: turn 3');
    expect(built.tokens).toBe(countTokens(built.text));
  });

  it('given a summary covering seq 20 of 23 turns, shows the summary and the last 5 turns', () => {
    const built = buildContext({ ...base, summary: 'They planned a trip.', threads: [{ coversThroughSeq: 20, turns: turns(19, 23) }] });
    expect(built.sections.turns.map((t) => t.seq)).toEqual([19, 20, 21, 22, 23]);
    expect(built.text).toContain('### Conversation Summary\nThey planned a trip.');
  });

  it('renders the init block in the design format', () => {
    const built = buildContext({
      ...base,
      profile: 'Client profile: 45, married.',
      recentSessions: [{ sessionId: 'a', endedAt: '2024-12-04T12:00:00Z', summary: 'Discussed 401k rollover.' }],
      threads: [{ coversThroughSeq: 0, turns: turns(1, 1) }],
    });
    expect(built.text).toBe(
      '<session_initialization>\n### Key Insights\nClient profile: 45, married.\n### Recent Session Summaries\n' +
        '- At 12:00 PM, Dec 04, 2024: Discussed 401k rollover.\n</session_initialization>\n\n### Active Conversation\nuser: turn 1',
    );
  });

  it('given a tight budget, drops the oldest session summaries, then the profile, never a turn', () => {
    const input = {
      ...base,
      profile: 'A long profile. '.repeat(20),
      recentSessions: [
        { sessionId: 'old', endedAt: '2024-12-01T00:00:00Z', summary: 'old session '.repeat(10) },
        { sessionId: 'new', endedAt: '2024-12-02T00:00:00Z', summary: 'new session' },
      ],
      threads: [{ coversThroughSeq: 0, turns: turns(1, 3) }],
    };
    const full = buildContext(input);
    const withoutOld = buildContext({ ...input, maxTokens: full.tokens - 1 });
    expect(withoutOld.sections.recentSessions.map((s) => s.sessionId)).toEqual(['new']);
    const bare = buildContext({ ...input, maxTokens: buildContext({ ...input, profile: null, recentSessions: [] }).tokens });
    expect(bare.sections.profile).toBeNull();
    expect(bare.sections.turns).toHaveLength(3);
  });

  it('given a budget smaller than the turns it must show, fails with context_budget_exceeded and the tokens needed', () => {
    const run = () => buildContext({ ...base, threads: [{ coversThroughSeq: 0, turns: turns(1, 5) }], maxTokens: 10 });
    expect(run).toThrow(MemoryError);
    try {
      run();
    } catch (error) {
      expect(error).toMatchObject({ code: 'context_budget_exceeded', details: { maxTokens: 10 } });
      expect((error as MemoryError).details.requiredTokens).toBeGreaterThan(10);
    }
  });

  it('keeps tool calls and the named speaker in the verbatim line', () => {
    const t = turn(1, 'Checking.', { role: 'assistant', name: 'planner', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }] });
    expect(buildContext({ ...base, threads: [{ coversThroughSeq: 0, turns: [t] }] }).text).toContain('assistant (planner): Checking. [tool calls: lookup({"q":1})]');
  });

  it('property: every turn is covered by the summary or verbatim, at least N are verbatim, and the budget holds', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }), // turns in the session
        fc.integer({ min: 0, max: 60 }), // summary coverage (seq)
        fc.integer({ min: 1, max: 12 }), // N
        fc.option(fc.integer({ min: 20, max: 2_000 }), { nil: undefined }), // maxTokens
        fc.boolean(),
        (count, coverage, n, maxTokens, withInit) => {
          const covered = Math.min(coverage, count);
          const all = turns(1, count);
          // What the use case reads: everything after the coverage plus the last N turns.
          const input: ContextInput = {
            ...base,
            profile: withInit ? 'Profile text for the user.' : null,
            recentSessions: withInit ? [{ sessionId: 'p', endedAt: '2025-01-01T00:00:00Z', summary: 'Earlier.' }] : [],
            summary: covered > 0 ? `Summary through ${covered}.` : '',
            threads: [{ coversThroughSeq: covered, turns: all.filter((t) => t.metadata.seq > covered || t.metadata.seq > count - n) }],
            nActiveTurns: n,
            ...(maxTokens !== undefined && { maxTokens }),
          };
          let built;
          try {
            built = buildContext(input);
          } catch (error) {
            expect(error).toMatchObject({ code: 'context_budget_exceeded' });
            expect((error as MemoryError).details.requiredTokens).toBeGreaterThan(maxTokens!);
            return;
          }
          const verbatim = new Set(built.sections.turns.map((t) => t.seq));
          for (const t of all) expect(t.metadata.seq <= covered || verbatim.has(t.metadata.seq)).toBe(true);
          expect(verbatim.size).toBeGreaterThanOrEqual(Math.min(n, count));
          for (const t of built.sections.turns) expect(built.text).toContain(t.content);
          if (maxTokens !== undefined) expect(built.tokens).toBeLessThanOrEqual(maxTokens);
          expect(built.tokens).toBe(countTokens(built.text));
        },
      ),
      { numRuns: 300 },
    );
  });
});
