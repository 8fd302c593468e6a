import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyEvents } from '../../shared/application/project-session.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import type { EventDraft } from '../../shared/contracts/events.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { memoryRuntime } from '../support/runtime.js';

const said = (turnId: string, content: string, timestamp: string): EventDraft => ({ type: 'TurnAppended', data: { turnId, role: 'user', content, timestamp } });

describe('a turn that asks a question', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  }, 60_000);
  afterAll(() => runtime?.close());

  it('given a turn that asks and one that tells, matched alike, when searched, then the one that tells comes first', async () => {
    const userId = 'u-asking';
    // Two sessions, so neither turn is matched with the other or inherits its score.
    const asking = { userId, sessionId: 's1' };
    const telling = { userId, sessionId: 's2' };
    await runtime.events.append(asking, [said('t1', 'Did you go hiking in the Alps?', '2024-05-01T10:00:00Z')], new Date('2024-05-01T10:00:00Z'));
    await runtime.events.append(telling, [said('t2', 'We went hiking in the Alps with the whole family last summer, all of us together.', '2024-05-02T10:00:00Z')], new Date('2024-05-02T10:00:00Z'));
    await applyEvents(runtime, asking);
    await applyEvents(runtime, telling);

    // Full text alone ranks the asking turn first (it is shorter), and its hit says that it asks.
    const hits = await runtime.search.turns({ userId, text: 'hiking Alps', limit: 10, filters: {} }, 'fulltext');
    expect(hits.map((h) => [h.sessionId, h.asks])).toEqual([
      ['s1', true],
      ['s2', undefined],
    ]);
    const { facts } = await searchFacts(runtime, userId, { query: 'Where has the user been hiking?', mode: 'search', topK: 2, sources: ['turns'], retrievers: ['fulltext'] });
    expect(facts.map((f) => f.turnIds)).toEqual([['t2'], ['t1']]);
  });
});
