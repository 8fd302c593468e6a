import { describe, expect, it } from 'vitest';
import { SentenceEncoderEmbedder, type SentenceEncoderOptions } from '../../../../shared/adapters/local-models/index.js';
import { lengthBatches } from '../../../../shared/adapters/local-models/sentence-encoder.js';
import type { ModelUsage } from '../../../../shared/application/ports.js';

/** A stand-in for the TensorFlow model: a 512-d vector derived from the text's length, never unit length. */
function fakeModel(dimensions = 512) {
  const batches: string[][] = [];
  let loads = 0;
  const load: NonNullable<SentenceEncoderOptions['load']> = async () => {
    loads++;
    await new Promise((resolve) => setTimeout(resolve, 10));
    return {
      embed: async (input: string[]) => {
        batches.push(input);
        // Like USE Lite: an empty text has no tokens and its row goes missing.
        return input.filter((t) => t !== '').map((t) => Array.from({ length: dimensions }, (_, i) => ((t.length + i) % 7) + 1));
      },
    };
  };
  return { load, batches, loads: () => loads };
}

describe('SentenceEncoderEmbedder (with a stand-in model)', () => {
  it('reports the model id and 512 dimensions, and loads nothing until the first embed', async () => {
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({ load: fake.load });
    expect([embedder.model, embedder.dimensions]).toEqual(['use-lite-512', 512]);
    expect(fake.loads()).toBe(0);
    expect(await embedder.embed([])).toEqual([]);
    expect(fake.loads()).toBe(0);
  });

  it('given concurrent first calls, then they share one load', async () => {
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({ load: fake.load });
    const results = await Promise.all([embedder.embed(['a']), embedder.embed(['bb']), embedder.embed(['ccc'])]);
    expect(fake.loads()).toBe(1);
    expect(results.map((r) => r.length)).toEqual([1, 1, 1]);
  });

  it('embeds texts of similar length in one batch, returns vectors in input order, unit length', async () => {
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({ load: fake.load, batchSize: 2 });
    const texts = ['one', 'three', 'fives', 'sevenxx', 'nine'];
    const vectors = await embedder.embed(texts);
    expect(fake.batches).toEqual([['one', 'nine'], ['three', 'fives'], ['sevenxx']]);
    expect(vectors).toHaveLength(5);
    for (const v of vectors) {
      expect(v).toHaveLength(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 10);
    }
    // The stand-in's vector depends on the text's length: equal for 'three'/'fives', different for 'one', so order is kept.
    expect(vectors[1]).toEqual(vectors[2]);
    expect(vectors[0]).not.toEqual(vectors[1]);
  });

  it('embeds an empty text as a space, so no row goes missing', async () => {
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({ load: fake.load });
    const vectors = await embedder.embed(['a', '', 'b']);
    expect(vectors).toHaveLength(3);
    expect(fake.batches[0]).toEqual([' ', 'a', 'b']);
  });

  it('given a failed load, then the call fails with a typed error and the next call loads again', async () => {
    let attempts = 0;
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({
      load: async () => {
        attempts++;
        if (attempts === 1) throw new Error('weights missing');
        return fake.load();
      },
    });
    await expect(embedder.embed(['x'])).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('weights missing') });
    expect(await embedder.embed(['x'])).toHaveLength(1);
    expect(attempts).toBe(2);
  });

  it('refuses vectors of the wrong size', async () => {
    const embedder = new SentenceEncoderEmbedder({ load: fakeModel(384).load });
    await expect(embedder.embed(['x'])).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('384 dimensions') });
  });

  it('records one embed usage per call, failures included', async () => {
    const usages: ModelUsage[] = [];
    const embedder = new SentenceEncoderEmbedder({ load: fakeModel().load, meter: { record: (u) => usages.push(u) }, batchSize: 1 });
    await embedder.embed(['hello world', 'second text']);
    expect(usages).toHaveLength(1);
    expect(usages[0]).toMatchObject({ operation: 'embed', model: 'use-lite-512', outputTokens: 0, ok: true });
    expect(usages[0]!.inputTokens).toBe(4);

    const failing = new SentenceEncoderEmbedder({ load: fakeModel(3).load, meter: { record: (u) => usages.push(u) } });
    await expect(failing.embed(['x'])).rejects.toThrow();
    expect(usages[1]).toMatchObject({ operation: 'embed', ok: false });
  });

  it('ranks texts by cosine similarity to a query', async () => {
    const embedder = new SentenceEncoderEmbedder({ load: fakeModel().load });
    const [same, other] = await embedder.similarities('abcd', ['wxyz', 'ab']);
    expect(same).toBeCloseTo(1, 10);
    expect(other).toBeLessThan(1);
  });

  /** A stand-in that counts the model calls running at once. */
  function countingModel() {
    const counts = { running: 0, most: 0 };
    const load: NonNullable<SentenceEncoderOptions['load']> = async () => ({
      embed: async (input: string[]) => {
        counts.running += 1;
        counts.most = Math.max(counts.most, counts.running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        counts.running -= 1;
        return input.map((t) => Array.from({ length: 512 }, (_, i) => (i === 0 ? t.length : 1)));
      },
    });
    return { load, counts };
  }

  it('given concurrency 2, then two model calls run at once and never more, and vectors keep their order', async () => {
    const { load, counts } = countingModel();
    const embedder = new SentenceEncoderEmbedder({ load, batchSize: 2, concurrency: 2 });
    const texts = Array.from({ length: 9 }, (_, i) => 'x'.repeat(i + 1));
    const [vectors] = await Promise.all([embedder.embed(texts), embedder.embed(['other', 'call'])]);
    expect(counts.most).toBe(2);
    // The first component is the text's length before normalisation: the order survives the parallel batches.
    const lengths = vectors.map((v) => v[0]! / v[1]!);
    lengths.forEach((l, i) => expect(l).toBeCloseTo(i + 1, 6));
  });

  it('given inFlight 4 over 2 threads, then four model calls run at once (one waiting in each thread), never more', async () => {
    const { load, counts } = countingModel();
    const embedder = new SentenceEncoderEmbedder({ load, batchSize: 2, concurrency: 2, inFlight: 4 });
    const calls = [embedder.embed(Array.from({ length: 12 }, (_, i) => 'x'.repeat(i + 1))), embedder.embed(['other', 'call'])];
    expect((await Promise.all(calls)).map((v) => v.length)).toEqual([12, 2]);
    expect(counts.most).toBe(4);
  });
});

describe('SentenceEncoderEmbedder on several threads', () => {
  it('given a call of few texts, then it is spread over the threads; a large call keeps full batches', async () => {
    const fake = fakeModel();
    const embedder = new SentenceEncoderEmbedder({ load: fake.load, batchSize: 8, concurrency: 2 });
    await embedder.embed(['aaaa', 'bb', 'c']);
    expect(fake.batches.map((b) => b.length)).toEqual([2, 1]);
    fake.batches.length = 0;
    await embedder.embed(Array.from({ length: 20 }, (_, i) => 'x'.repeat(100 + i)));
    expect(fake.batches.map((b) => b.length)).toEqual([8, 8, 4]);
  });
});

describe('lengthBatches', () => {
  const lengths = (texts: string[], batches: number[][]) => batches.map((b) => b.map((i) => texts[i]!.length));

  it('given a window, its summary and its ten turns, then the window is not padded with the turns', () => {
    const texts = ['w'.repeat(1400), 's'.repeat(300), ...Array.from({ length: 10 }, (_, i) => 't'.repeat(90 + 10 * i))];
    const batches = lengthBatches(texts, 6);
    // Sorted by length; a batch ends at its size or at a text over twice its shortest (at least 64 characters).
    expect(lengths(texts, batches)).toEqual([[90, 100, 110, 120, 130, 140], [150, 160, 170, 180, 300], [1400]]);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(texts.map((_, i) => i));
  });

  it('keeps short texts together whatever their lengths, up to the batch size', () => {
    const texts = ['a', 'bb', 'c'.repeat(40), 'd'.repeat(128), 'e'.repeat(129)];
    expect(lengths(texts, lengthBatches(texts, 8))).toEqual([[1, 2, 40, 128], [129]]);
    expect(lengths(texts, lengthBatches(texts, 2))).toEqual([[1, 2], [40, 128], [129]]);
  });
});
