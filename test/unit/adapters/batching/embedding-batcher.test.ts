import { describe, expect, it } from 'vitest';
import { EmbeddingBatcher } from '../../../../shared/adapters/batching/embedding-batcher.js';
import { RecentVectors } from '../../../../shared/adapters/batching/recent-vectors.js';
import type { Embedder } from '../../../../shared/application/ports.js';
import { MemoryError } from '../../../../shared/domain/errors.js';

/** An embedder whose vector for a text is [length, first char code]; records every call's input; `gate` holds calls. */
class RecordingEmbedder implements Embedder {
  readonly model = 'recording';
  readonly dimensions = 2;
  readonly calls: string[][] = [];
  private gates: (() => void)[] = [];
  held = false;
  failWhen: (texts: readonly string[]) => Error | undefined = () => undefined;

  async embed(texts: readonly string[]): Promise<number[][]> {
    this.calls.push([...texts]);
    if (this.held) await new Promise<void>((resolve) => this.gates.push(resolve));
    const error = this.failWhen(texts);
    if (error) throw error;
    return texts.map((t) => [t.length, t.charCodeAt(0)]);
  }

  release(): void {
    this.held = false;
    this.gates.splice(0).forEach((open) => open());
  }
}

const vectorOf = (t: string) => [t.length, t.charCodeAt(0)];
const texts = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${'x'.repeat(i)}`);

describe('EmbeddingBatcher', () => {
  it('given calls made together, when they are embedded, then they share one call and each gets its own vectors in order', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 2 });
    const [a, b, c] = await Promise.all([batcher.embed(texts('a', 3)), batcher.embed(texts('b', 1)), batcher.embed(texts('c', 4))]);
    expect(inner.calls).toHaveLength(1);
    expect(inner.calls[0]).toEqual([...texts('a', 3), ...texts('b', 1), ...texts('c', 4)]);
    expect(a).toEqual(texts('a', 3).map(vectorOf));
    expect(b).toEqual(texts('b', 1).map(vectorOf));
    expect(c).toEqual(texts('c', 4).map(vectorOf));
  });

  it('given more texts than the maximum, when embedded, then calls carry at most maxTexts and a caller split over calls gets all its vectors', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 4, concurrency: 8 });
    const [a, b] = await Promise.all([batcher.embed(texts('a', 6)), batcher.embed(texts('b', 5))]);
    expect(inner.calls.map((c) => c.length)).toEqual([4, 4, 3]);
    expect(inner.calls.flat()).toEqual([...texts('a', 6), ...texts('b', 5)]);
    expect(a).toEqual(texts('a', 6).map(vectorOf));
    expect(b).toEqual(texts('b', 5).map(vectorOf));
  });

  it('given every slot busy, when more callers arrive, then they wait and go out together in the next call', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 1 });
    inner.held = true;
    const first = batcher.embed(['first']);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(inner.calls).toEqual([['first']]);
    const later = [batcher.embed(['b1', 'b2']), batcher.embed(['c1'])];
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(inner.calls).toHaveLength(1); // waiting for the slot
    inner.release();
    expect(await first).toEqual([vectorOf('first')]);
    expect(await Promise.all(later)).toEqual([[vectorOf('b1'), vectorOf('b2')], [vectorOf('c1')]]);
    expect(inner.calls).toEqual([['first'], ['b1', 'b2', 'c1']]);
  });

  it('given an idle batcher, when one caller embeds, then its call goes out without waiting for a timer', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 1 });
    const done = batcher.embed(['alone']);
    await new Promise((resolve) => setImmediate(resolve)); // one turn of the event loop, no timer phase needed
    expect(inner.calls).toEqual([['alone']]);
    expect(await done).toEqual([vectorOf('alone')]);
  });

  it('given a call that fails because of one caller\'s text, when shared, then only that caller gets the error', async () => {
    const inner = new RecordingEmbedder();
    inner.failWhen = (t) => (t.includes('poison') ? new MemoryError('upstream_unavailable', 'HTTP 400', { status: 400 }) : undefined);
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 1 });
    const [good, bad] = await Promise.allSettled([batcher.embed(['fine', 'also fine']), batcher.embed(['poison'])]);
    expect(good).toEqual({ status: 'fulfilled', value: [vectorOf('fine'), vectorOf('also fine')] });
    expect(bad.status).toBe('rejected');
    expect((bad as PromiseRejectedResult).reason).toMatchObject({ code: 'upstream_unavailable', details: { status: 400 } });
    expect(inner.calls).toEqual([['fine', 'also fine', 'poison'], ['fine', 'also fine'], ['poison']]);
  });

  it('given an endpoint that is down, when a shared call fails, then every caller gets that error and nothing is repeated', async () => {
    const inner = new RecordingEmbedder();
    const down = new MemoryError('upstream_unavailable', 'HTTP 503', { status: 503 });
    inner.failWhen = () => down;
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 1 });
    const outcomes = await Promise.allSettled([batcher.embed(['a']), batcher.embed(['b'])]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: down },
      { status: 'rejected', reason: down },
    ]);
    expect(inner.calls).toHaveLength(1);
  });

  it('given a caller split over two calls of which one fails, then it is rejected once and later callers still succeed', async () => {
    const inner = new RecordingEmbedder();
    inner.failWhen = (t) => (t.includes('a-bad') ? new Error('boom') : undefined);
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 2, concurrency: 4 });
    const split = batcher.embed(['a1', 'a2', 'a-bad']);
    await expect(split).rejects.toThrow('boom');
    expect(await batcher.embed(['next'])).toEqual([vectorOf('next')]);
  });

  it('given no texts, then no call is made', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 4, concurrency: 1 });
    expect(await batcher.embed([])).toEqual([]);
    expect(inner.calls).toEqual([]);
    expect(batcher.model).toBe('recording');
    expect(batcher.dimensions).toBe(2);
  });
});

describe('EmbeddingBatcher under load', () => {
  it('given a large caller and a one-text caller waiting, when a slot frees, then the small one goes first and the large one fills the rest', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 4, concurrency: 1 });
    inner.held = true;
    const busy = batcher.embed(['busy']);
    await new Promise((resolve) => setImmediate(resolve));
    const large = batcher.embed(texts('L', 6));
    const query = batcher.embed(['query']);
    await new Promise((resolve) => setImmediate(resolve));
    inner.release();
    await Promise.all([busy, large, query]);
    expect(inner.calls).toEqual([['busy'], ['query', ...texts('L', 3)], texts('L', 6).slice(3)]);
    expect(await query).toEqual([vectorOf('query')]);
    expect(await large).toEqual(texts('L', 6).map(vectorOf));
  });
});

describe('EmbeddingBatcher memory of recent texts', () => {
  it('given texts embedded before or repeated by a caller, then each reaches the embedder once, and callers get copies', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 2 });
    const [first] = await batcher.embed(['a turn']);
    first![0] = 42;
    const [again, other, twice] = await batcher.embed(['a turn', 'another turn', 'another turn']);
    expect(inner.calls).toEqual([['a turn'], ['another turn']]);
    expect(again).toEqual(vectorOf('a turn'));
    expect(twice).toEqual(other);
    twice![0] = 42;
    expect(other).toEqual(vectorOf('another turn'));
  });

  it('tells which texts it would answer from memory, until they are pushed out', async () => {
    const batcher = new EmbeddingBatcher(new RecordingEmbedder(), { maxTexts: 256, concurrency: 1, recent: { numbers: 4, chars: 1_000 } });
    await batcher.embed(['a', 'b']);
    expect([batcher.remembers('a'), batcher.remembers('b'), batcher.remembers('c')]).toEqual([true, true, false]);
    await batcher.embed(['c']);
    expect([batcher.remembers('a'), batcher.remembers('c')]).toEqual([false, true]);
  });

  it('given a failed call, then nothing is remembered and the next call embeds the texts again', async () => {
    const inner = new RecordingEmbedder();
    const batcher = new EmbeddingBatcher(inner, { maxTexts: 256, concurrency: 1 });
    inner.failWhen = () => new Error('no');
    await expect(batcher.embed(['x'])).rejects.toThrow('no');
    expect(batcher.remembers('x')).toBe(false);
    inner.failWhen = () => undefined;
    expect(await batcher.embed(['x'])).toEqual([vectorOf('x')]);
    expect(inner.calls).toEqual([['x'], ['x']]);
  });
});

describe('RecentVectors', () => {
  it('drops the least recent past the numbers or the characters it may hold, and a read makes a text the most recent', () => {
    const recent = new RecentVectors({ numbers: 6, chars: 10 });
    recent.set('a', [1, 2]);
    recent.set('b', [3, 4]);
    recent.set('c', [5, 6]);
    expect(recent.get('a')).toEqual([1, 2]);
    recent.set('d', [7, 8]);
    expect([recent.get('b'), recent.get('a'), recent.size]).toEqual([undefined, [1, 2], 3]);
    recent.set('long text', [9, 10]);
    // 'long text' (9 characters) leaves room for one more character: only the most recent other text stays ('a').
    expect([recent.get('c'), recent.get('d'), recent.get('a'), recent.get('long text')]).toEqual([undefined, undefined, [1, 2], [9, 10]]);
  });

  it('holds float32s: what it gives back is the vector rounded to float32, as a new array each time', () => {
    const recent = new RecentVectors({ numbers: 10, chars: 10 });
    recent.set('x', [0.1, 1 / 3]);
    const [a, b] = [recent.get('x')!, recent.get('x')!];
    expect(a).toEqual([Math.fround(0.1), Math.fround(1 / 3)]);
    expect(a).not.toBe(b);
  });
});
