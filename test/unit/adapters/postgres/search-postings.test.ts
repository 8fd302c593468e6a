import { describe, expect, it } from 'vitest';
import { Lexicon, Postings } from '../../../../shared/adapters/postgres/search-postings.js';

const lexemes = Array.from({ length: 5_000 }, (_, i) => `w${i.toString(36)}${i % 7 === 0 ? 'é' : ''}`);

describe("a snapshot's lexicon", () => {
  it("given lexemes read in place from UTF-8 bytes, numbers each once in the order first seen, past its tables' first sizes", () => {
    const lexicon = new Lexicon();
    const bytes = Buffer.from(lexemes.join(' '));
    let at = 0;
    for (const [i, lexeme] of lexemes.entries()) {
      const end = at + Buffer.byteLength(lexeme);
      expect(lexicon.intern(bytes, at, end)).toBe(i);
      at = end + 1;
    }
    expect(lexicon.size).toBe(lexemes.length);
    expect(lexicon.intern(Buffer.from(`x ${lexemes[42]!} y`), 2, 2 + Buffer.byteLength(lexemes[42]!))).toBe(42);
    for (const [i, lexeme] of lexemes.entries()) expect(lexicon.find(lexeme)).toBe(i);
    expect(lexicon.find('missing')).toBe(-1);
    expect(lexicon.find('w')).toBe(-1); // a prefix of held lexemes
  });

  it('given a trim after a build, holds less and goes on numbering new lexemes', () => {
    const lexicon = new Lexicon();
    for (const lexeme of lexemes) lexicon.intern(Buffer.from(lexeme), 0, Buffer.byteLength(lexeme));
    const held = lexicon.byteLength;
    lexicon.trim();
    expect(lexicon.byteLength).toBeLessThan(held);
    expect(lexicon.intern(Buffer.from('new'), 0, 3)).toBe(lexemes.length);
    expect(lexicon.find(lexemes[4_999]!)).toBe(4_999);
    expect(lexicon.find('new')).toBe(lexemes.length);
  });
});

describe("a snapshot's postings", () => {
  /** Pushes `codes` codes spread over `lists` lexemes and records them as expected. */
  const push = (postings: Postings, expected: number[][], codes: number, lists: number, first: number) => {
    for (let code = first; code < first + codes; code++) {
      const lexeme = (code * 7919) % lists;
      postings.push(lexeme, code);
      (expected[lexeme] ??= []).push(code);
    }
  };
  const lists = (postings: Postings, count: number) =>
    Array.from({ length: count }, (_, lexeme) => {
      const codes: number[] = [];
      postings.forEach(lexeme, (code) => codes.push(code));
      expect(postings.count(lexeme)).toBe(codes.length);
      return codes;
    });

  it('given codes pushed before and after the build lays them out, reads each list in the order pushed', () => {
    const lexicon = new Lexicon();
    for (let i = 0; i < 600; i++) lexicon.intern(Buffer.from(`l${i}`), 0, `l${i}`.length);
    const postings = new Postings(lexicon);
    const expected: number[][] = [];
    push(postings, expected, 3_000, 500, 0);
    expect(lists(postings, 600)).toEqual(Array.from({ length: 600 }, (_, i) => expected[i] ?? []));
    postings.layOut();
    expect(lists(postings, 600)).toEqual(Array.from({ length: 600 }, (_, i) => expected[i] ?? []));
    // Past the laid-out lexemes, and enough codes that the log is folded in on the way (a 32-bit code included).
    push(postings, expected, 40_000, 600, 3_000);
    postings.push(599, 2 ** 32 - 1);
    expected[599]!.push(2 ** 32 - 1);
    expect(lists(postings, 600)).toEqual(expected);
    expect(postings.count(600)).toBe(0);
  });

  it('given a laid-out build, holds 4 bytes a code and a lexeme', () => {
    const lexicon = new Lexicon();
    for (let i = 0; i < 1_000; i++) lexicon.intern(Buffer.from(`l${i}`), 0, `l${i}`.length);
    const postings = new Postings(lexicon);
    push(postings, [], 10_000, 1_000, 0);
    postings.layOut();
    // The log's two arrays stay at their least (64 numbers each).
    expect(postings.byteLength).toBe(4 * 10_000 + 4 * 1_001 + 2 * 4 * 64);
  });
});
