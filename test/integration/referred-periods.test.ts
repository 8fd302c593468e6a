import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyEvents } from '../../shared/application/project-session.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import type { EventDraft } from '../../shared/contracts/events.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { memoryRuntime } from '../support/runtime.js';

const said = (turnId: string, content: string, timestamp: string): EventDraft => ({ type: 'TurnAppended', data: { turnId, role: 'user', content, timestamp } });

describe('the period a turn refers to', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  }, 60_000);
  afterAll(() => runtime?.close());

  it("given turns with relative dates, when projected, then each is indexed with the period it means, read from the turn's own time", async () => {
    const key = { userId: 'u-referred', sessionId: 's1' };
    // Recorded long after they were said (an import): the clock must not be the anchor.
    await runtime.events.append(
      key,
      [said('t1', 'We adopted a kitten yesterday!', '2019-02-13T18:00:00Z'), said('t2', 'The kitten sleeps on the piano all day.', '2019-02-13T18:01:00Z')],
      new Date('2026-01-05T10:00:00Z'),
    );
    await applyEvents(runtime, key);

    const hits = await runtime.search.turns({ userId: key.userId, text: 'kitten', limit: 10, filters: {} }, 'fulltext');
    const bySeq = new Map(hits.map((h) => [h.seq, h]));
    expect(bySeq.get(1)?.refers).toEqual({ from: '2019-02-12T00:00:00.000Z', to: '2019-02-12T23:59:59.999Z' });
    expect(bySeq.get(2)).toBeDefined();
    expect(bySeq.get(2)?.refers).toBeUndefined();
    // And matched as words: a question naming the month without its year finds it.
    expect((await runtime.search.turns({ userId: key.userId, text: 'in February', limit: 10, filters: {} }, 'fulltext')).map((h) => h.seq)).toEqual([1]);
  });

  it('given a query naming a day, then a turn said later that refers to that day scores as if said on it', async () => {
    const key = { userId: 'u-referred-query', sessionId: 's1' };
    await runtime.events.append(
      key,
      [said('t1', 'I baked bread, then baked a cake.', '2020-06-01T10:00:00Z'), said('t2', 'I baked bread two days ago, the best one yet.', '2020-06-10T10:00:00Z')],
      new Date('2026-01-05T10:00:00Z'),
    );
    await applyEvents(runtime, key);

    // t1 matches "bake" twice, t2 once; t2 refers to 8 June.
    const { facts } = await searchFacts(runtime, key.userId, { query: 'What did I bake on 8 June 2020?', mode: 'search', topK: 2, sources: ['turns'], retrievers: ['fulltext'] });
    expect(facts.map((f) => f.turnIds)).toEqual([['t2'], ['t1']]);
    const { facts: unnamed } = await searchFacts(runtime, key.userId, { query: 'What did I bake?', mode: 'search', topK: 2, sources: ['turns'], retrievers: ['fulltext'] });
    expect(unnamed.map((f) => f.turnIds)).toEqual([['t1'], ['t2']]);
  });
});
