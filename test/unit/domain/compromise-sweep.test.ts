import nlp from 'compromise';
import { describe, expect, it } from 'vitest';

// compromise's own sweep, taken before time-expressions.ts replaces it in this file's module graph (imported below).
type Methods = { one: { bulkMatch: (...args: unknown[]) => { match: string; pointer: number[] }[]; cacheDoc: unknown; buildNet: (matches: unknown, world: unknown) => object } };
const { one } = nlp.methods() as unknown as Methods;
const original = one.bulkMatch;
const { sweptByPresentHooks } = await import('../../../shared/domain/time-expressions.js');

const TEXTS = [
  'I went to Paris last week, and my partner Maria works part time.',
  "We bought a house in 2019; it's near the lake, isn't it?",
  'Could you compare index funds with the workplace pension scheme?',
  'She has been painting sunsets since she was 12 — mostly watercolours.',
  'The kids loved the camping trip!!! Next time we will bring the dog.',
  'Dr. Smith said the results would be ready on Monday, 3 March.',
  'Caroline attended an LGBTQ support group yesterday and found it really powerful.',
  'Running, swimming and hiking keep me sane; what about you?',
];

describe('sweptByPresentHooks', () => {
  it('hands the sweep only the hooks the document has, in the net order, and returns what it returns', () => {
    const seen: string[][] = [];
    const sweep = (_document: unknown[][], net: { hooks: Record<string, unknown[]> }) => {
      seen.push(Object.keys(net.hooks));
      return [net.hooks];
    };
    const net = { hooks: { '#Noun': ['n'], walk: ['w'], '2': ['two'], '#Verb': ['v'], absent: ['x'] }, always: ['a'] };
    const cacheDoc = (document: unknown[][]) => document.map((terms) => new Set(terms as string[]));
    const swept = sweptByPresentHooks(sweep, cacheDoc);
    expect(swept([['walk', '#Verb'], ['#Noun', '2', 'other']], net, {})).toEqual([{ '2': ['two'], '#Noun': ['n'], walk: ['w'], '#Verb': ['v'] }]);
    expect(seen).toEqual([['2', '#Noun', 'walk', '#Verb']]);
    expect(net.hooks).toHaveProperty('absent'); // the net itself is left as it was
  });

  it("finds exactly what compromise's own sweep finds with the tagger's rules", () => {
    expect((original as { name: string }).name).toBe('sweep');
    // A copy: building a net rewrites the rules it is given, and the tagger builds its own from the model's.
    const world = nlp.world() as { model: { two: { matches: unknown } } };
    const net = one.buildNet(structuredClone(world.model.two.matches), world);
    const swept = sweptByPresentHooks(original as never, one.cacheDoc as never);
    let found = 0;
    for (const text of TEXTS) {
      const { docs } = nlp(text) as unknown as { docs: unknown[][] };
      const matches = (sweep: (...args: unknown[]) => unknown[]) =>
        (sweep(docs, net, nlp.methods(), {}) as { match: string; pointer: number[] }[]).map(({ match, pointer }) => `${match} @ ${pointer.join(',')}`);
      const expected = matches(original);
      expect(matches(swept as never), text).toEqual(expected);
      found += expected.length;
    }
    expect(found).toBeGreaterThan(TEXTS.length);
  });
});
