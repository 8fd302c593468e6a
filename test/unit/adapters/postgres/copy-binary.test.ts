import { describe, expect, it } from 'vitest';
import { CopyRows, forEachLexeme } from '../../../../shared/adapters/postgres/copy-binary.js';

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
const int16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};
const int64 = (n: bigint) => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(n);
  return b;
};
const float8 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(n);
  return b;
};
/** Binary COPY data: the header (with `extension` bytes of header extension), the rows (a field null for NULL), the trailer. */
const copy = (rows: (Buffer | null)[][], extension = Buffer.alloc(0)) =>
  Buffer.concat([
    SIGNATURE,
    int32(0),
    int32(extension.length),
    extension,
    ...rows.flatMap((fields) => [int16(fields.length), ...fields.flatMap((f) => (f === null ? [int32(-1)] : [int32(f.length), f]))]),
    int16(-1),
  ]);
/** A tsvector as tsvectorsend writes it: per lexeme its UTF-8 bytes and a NUL, then its positions. */
const tsvector = (lexemes: [string, number[]][]) =>
  Buffer.concat([int32(lexemes.length), ...lexemes.flatMap(([lexeme, positions]) => [Buffer.from(`${lexeme}\0`, 'utf8'), int16(positions.length), ...positions.map(int16)])]);

describe("PostgreSQL's binary COPY format", () => {
  it('given rows with every decoded type and NULLs, reads each field back', () => {
    const at = Date.UTC(2026, 0, 1, 12, 30, 15, 250);
    const micros = (BigInt(at) - BigInt(Date.UTC(2000, 0, 1))) * 1000n + 999n; // sub-millisecond digits: cut, as a Date holds
    const before2000 = (BigInt(Date.UTC(1999, 11, 31, 23, 59, 59, 1)) - BigInt(Date.UTC(2000, 0, 1))) * 1000n - 500n;
    const data = copy(
      [
        [Buffer.from('café ☕', 'utf8'), int32(-42), int64(2n ** 40n + 3n), float8(0.25), int64(micros), Buffer.concat([Buffer.from([1]), Buffer.from('{"a":[1,2]}')]), Buffer.from([9, 8])],
        [null, null, null, null, int64(before2000), null, Buffer.alloc(0)],
      ],
      Buffer.from('ext'),
    );
    const rows = new CopyRows(data);
    expect(rows.count()).toBe(2);
    expect(rows.next()).toBe(true);
    expect(rows.text(0)).toBe('café ☕');
    expect(rows.int4(1)).toBe(-42);
    expect(rows.int8(2)).toBe(2 ** 40 + 3);
    expect(rows.binary(3)!.readDoubleBE(0)).toBe(0.25);
    expect(rows.timestamptz(4)).toBe(at);
    expect(rows.jsonb(5)).toEqual({ a: [1, 2] });
    expect([...rows.binary(6)!]).toEqual([9, 8]);

    expect(rows.next()).toBe(true);
    expect([rows.text(0), rows.int4(1), rows.int8(2), rows.binary(3), rows.jsonb(5)]).toEqual([null, null, null, null, null]);
    expect(rows.timestamptz(4)).toBe(Date.UTC(1999, 11, 31, 23, 59, 59, 0)); // the millisecond below
    expect(rows.binary(6)!.length).toBe(0); // empty, not NULL
    expect(() => rows.text(7)).toThrow(/no field 7/);
    expect(rows.next()).toBe(false);
    expect(rows.count()).toBe(2);
  });

  it("given rows, reads the last row's int8 field without moving, and null without rows", () => {
    const rows = new CopyRows(copy([[Buffer.from('a'), int64(7n)], [null, int64(2n ** 41n)], [Buffer.from('longer'), null]]));
    expect(rows.lastInt8(1)).toBeNull(); // NULL in the last row
    const revs = new CopyRows(copy([[Buffer.from('a'), int64(7n)], [null, int64(2n ** 41n)]]));
    expect(revs.lastInt8(1)).toBe(2 ** 41);
    expect(() => revs.lastInt8(2)).toThrow(/no field 2/);
    expect(revs.next()).toBe(true);
    expect(revs.int8(1)).toBe(7); // still at the first row
    expect(new CopyRows(copy([])).lastInt8(0)).toBeNull();
    expect(rows.count()).toBe(3);
  });

  it('given no rows, reads none; given other bytes or cut data, fails', () => {
    expect(new CopyRows(copy([])).next()).toBe(false);
    expect(new CopyRows(copy([])).count()).toBe(0);
    expect(() => new CopyRows(Buffer.from('id,name\n1,a\n'))).toThrow(/signature/);
    const data = copy([[Buffer.from('abc')]]);
    const cut = new CopyRows(data.subarray(0, data.length - 4));
    expect(() => cut.next()).toThrow(/ends within a row/);
    const noTrailer = new CopyRows(data.subarray(0, data.length - 2));
    expect(noTrailer.next()).toBe(true);
    expect(() => noTrailer.next()).toThrow(/trailer/);
    const withOids = Buffer.from(data);
    withOids.writeInt32BE(1 << 16, SIGNATURE.length);
    expect(() => new CopyRows(withOids)).toThrow(/OIDs/);
  });

  it("given a tsvector's binary form, calls back each lexeme with its positions' count, once without positions", () => {
    const terms: [string, number][] = [];
    forEachLexeme(
      tsvector([
        ["o'neil", [1]],
        ['back\\slash', []],
        ['café', [2, 3, 4]],
        ['東京', [5, 16_389]], // a position with a weight (A: the top bits)
        ['lake', []],
      ]),
      (bytes, start, end, tf) => terms.push([bytes.toString('utf8', start, end), tf]),
    );
    expect(terms).toEqual([
      ["o'neil", 1],
      ['back\\slash', 1],
      ['café', 3],
      ['東京', 2],
      ['lake', 1],
    ]);
    const none: string[] = [];
    forEachLexeme(tsvector([]), (bytes, start, end) => none.push(bytes.toString('utf8', start, end)));
    expect(none).toEqual([]);
    expect(() => forEachLexeme(tsvector([['lake', [1]]]).subarray(0, 7), () => undefined)).toThrow(/within a lexeme/);
  });
});
