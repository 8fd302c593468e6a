import { describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../../../shared/adapters/cosmos/containers.js';
import { float32Component, float32Vector, withFloat32Vectors } from '../../../../shared/adapters/cosmos/vectors.js';
import { rng } from '../../../support/random.js';

/** What the OpenAI adapter returns: float32s (base64-decoded) as JavaScript numbers. */
const float32s = (n: number, seed: number) => {
  const next = rng(seed);
  return Array.from({ length: n }, () => Math.fround((next() * 2 - 1) * 10 ** -Math.floor(next() * 8)));
};

describe('vectors as Cosmos DB stores them (float32)', () => {
  it('every component of a written vector parses back to the same float32, for float32 and double inputs alike', () => {
    const inputs = [...float32s(20_000, 7), ...Array.from({ length: 20_000 }, (_, i) => Math.sin(i * 12.9898) * 43_758.5453 * 10 ** -(i % 12))];
    inputs.push(0, -0, 1, -1, 3.4028234663852886e38, 1.401298464324817e-45, 1.1754943508222875e-38, 0.1, 1 / 3);
    const parsed = JSON.parse(JSON.stringify(float32Vector(inputs))) as number[];
    expect(parsed).toHaveLength(inputs.length);
    const mismatches = inputs.filter((x, i) => Math.fround(parsed[i]!) !== Math.fround(x));
    expect(mismatches).toEqual([]);
  });

  it('writes at most 9 significant digits, and a value that is short already stays as it is', () => {
    const digits = (x: number) => x.toExponential().split('e')[0]!.replace(/[-.]/g, '').length;
    expect(Math.max(...float32Vector(float32s(5_000, 11)).map(digits))).toBeLessThanOrEqual(9);
    expect(float32Vector([0.1, -0.2, 0.3, 1, 0])).toEqual([0.1, -0.2, 0.3, 1, 0]);
    expect(float32Component(Math.fround(0.1))).toBe(0.1);
  });

  it('a 1536-d embedding is about a third smaller as JSON', () => {
    const vector = float32s(1536, 3);
    expect(JSON.stringify(float32Vector(vector)).length).toBeLessThan(0.75 * JSON.stringify(vector).length);
  });

  it("rounds each vector path the container declares, and nothing else; a document without vectors is returned as is", () => {
    const [a, b] = [float32s(4, 1), float32s(4, 2)];
    const doc = { id: 'w1', contentVector: a, summaryVector: b, seqRange: [1 / 3, 2], score: 1 / 3 };
    const written = withFloat32Vectors(doc, COSMOS_CONTAINERS.interactions);
    expect(written).toEqual({ ...doc, contentVector: float32Vector(a), summaryVector: float32Vector(b) });
    expect(doc.contentVector).toBe(a); // the caller's document is not changed
    const session = { id: 's1', summary: 'x' };
    expect(withFloat32Vectors(session, COSMOS_CONTAINERS.sessions)).toBe(session);
    expect(withFloat32Vectors({ insightVector: a }, COSMOS_CONTAINERS.insights).insightVector).toEqual(float32Vector(a));
  });
});
