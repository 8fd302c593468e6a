import { describe, expect, it } from 'vitest';
import { Collection } from '../../../../shared/adapters/postgres/search-snapshot.js';
import { Lexicon } from '../../../../shared/adapters/postgres/search-postings.js';
import type { SearchQuery } from '../../../../shared/application/search-ports.js';
import { BM25 } from '../../../../shared/domain/ranking.js';

/** A tsvector's binary form (tsvectorsend) with each lexeme at `tf` positions. */
const tsv = (terms: Record<string, number>) =>
  Buffer.concat([
    int32(Object.keys(terms).length),
    ...Object.entries(terms).flatMap(([lexeme, tf]) => [Buffer.from(`${lexeme}\0`), uint16(tf), ...Array.from({ length: tf }, (_, i) => uint16(Math.min(i + 1, 16_383)))]),
  ]);
const int32 = (n: number) => Buffer.from(Int32Array.of(n).buffer).reverse();
const uint16 = (n: number) => Buffer.from(Uint16Array.of(n).buffer).reverse();

const query = (limit: number, filters: SearchQuery['filters'] = {}): SearchQuery => ({ userId: 'u', text: '', limit, filters });

describe("a snapshot's collection of rows", () => {
  it('given 1,000 rows (a frequency past the packed limit), ranks by BM25 as computed directly', () => {
    const rows = Array.from({ length: 1_000 }, (_, i) => {
      const terms: Record<string, number> = { common: 1 + (i % 3) };
      if (i % 7 === 0) terms.seventh = 1 + (i % 5);
      if (i === 500) terms.rare = 1;
      // One row says a word 5,000 times: more than the 4,095 a packed posting holds.
      if (i === 999) terms.seventh = 5_000;
      return { terms, length: Object.values(terms).reduce((a, b) => a + b, 0) + 10 };
    });
    const collection = new Collection(1);
    const keys = (rows: number[]) => rows.map((row) => collection.key(row));
    rows.forEach((r, i) => expect(collection.add(`s${i % 4}`, i + 1, i % 2 ? ['a'] : [], i * 60_000, 'm', [], tsv(r.terms), r.length)).toBe(true));
    expect(collection.add('s0', 1, [], 0, 'm', [], null, 0)).toBe(false); // held already: a rewrite

    const n = rows.length;
    const avgdl = rows.reduce((a, r) => a + r.length, 0) / n;
    const expected = (lexemes: string[], accept: (i: number) => boolean, limit: number) =>
      rows
        .map((r, i) => {
          let score = 0;
          for (const l of lexemes) {
            const tf = r.terms[l];
            if (!tf) continue;
            const df = rows.filter((x) => x.terms[l]).length;
            score += (Math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf * (BM25.k1 + 1)) / (tf + BM25.k1 * (1 - BM25.b + (BM25.b * r.length) / avgdl));
          }
          return { i, score };
        })
        .filter((e) => e.score > 0 && accept(e.i))
        .sort((a, b) => b.score - a.score || b.i - a.i) // ties: the later row
        .slice(0, limit)
        .map((e) => ({ sessionId: `s${e.i % 4}`, ref: e.i + 1 }));

    expect(keys(collection.bm25(query(1_000), ['common']))).toEqual(expected(['common'], () => true, 1_000));
    expect(keys(collection.bm25(query(20), ['seventh', 'rare', 'missing']))).toEqual(expected(['seventh', 'rare'], () => true, 20));
    expect(keys(collection.bm25(query(20), ['seventh']))[0]).toEqual({ sessionId: 's3', ref: 1_000 });
    // Filters: session, agent, time.
    expect(keys(collection.bm25(query(50, { sessionId: 's2', agentId: 'a' }), ['common']))).toEqual([]);
    expect(keys(collection.bm25(query(50, { sessionId: 's1', agentId: 'a' }), ['common', 'seventh']))).toEqual(expected(['common', 'seventh'], (i) => i % 4 === 1, 50));
    const from = new Date(100 * 60_000).toISOString();
    const to = new Date(200 * 60_000).toISOString();
    expect(keys(collection.bm25(query(500, { from, to }), ['common']))).toEqual(expected(['common'], (i) => i >= 100 && i <= 200, 500));
    // Laying out the postings after the build (trim) holds less and changes nothing, and rows added afterwards are
    // found, after the laid-out ones.
    const held = collection.arrayBytes;
    collection.trim();
    expect(collection.arrayBytes).toBeLessThan(held);
    expect(keys(collection.bm25(query(1_000), ['common']))).toEqual(expected(['common'], () => true, 1_000));
    expect(collection.add('s9', 1, [], 0, 'm', [], tsv({ rare: 1 }), 11)).toBe(true);
    expect(keys(collection.bm25(query(5), ['rare'])).map((k) => k.sessionId).sort()).toEqual(['s0', 's9']);
    for (let seq = 2; seq <= 600; seq++) collection.add('s9', seq, [], 0, 'm', [], tsv({ common: 1 }), 11);
    expect(collection.bm25(query(2_000), ['common'])).toHaveLength(1_599);
  });

  it('given two collections numbering their lexemes in one lexicon, ranks each by its own postings only', () => {
    const lexicon = new Lexicon();
    const turns = new Collection(1, lexicon);
    const windows = new Collection(2, lexicon);
    turns.add('s', 1, [], 0, 'm', [], tsv({ lake: 2, paint: 1 }), 3);
    windows.add('s', 'w1', [], 0, 'm', [], tsv({ paint: 1, boat: 1 }), 2);
    windows.add('s', 'w2', [], 60_000, 'm', [], tsv({ boat: 3 }), 3);
    expect(lexicon.size).toBe(3); // paint, held by both, numbered once
    expect(turns.bm25(query(5), ['boat', 'paint']).map((row) => turns.key(row).ref)).toEqual([1]);
    expect(windows.bm25(query(5), ['lake'])).toEqual([]);
    expect(windows.bm25(query(5), ['boat']).map((row) => windows.key(row).ref)).toEqual(['w2', 'w1']);
  });
});
