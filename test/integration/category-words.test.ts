import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyEvents } from '../../shared/application/project-session.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import type { EventDraft } from '../../shared/contracts/events.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { memoryRuntime } from '../support/runtime.js';

const said = (turnId: string, content: string, timestamp: string): EventDraft => ({ type: 'TurnAppended', data: { turnId, role: 'user', content, timestamp } });

describe('category words', () => {
  const turns = [
    said('t1', 'We spent a week in Spain last summer.', '2023-05-01T10:00:00Z'),
    said('t2', 'The weather was lovely and the food even better.', '2023-05-01T10:01:00Z'),
    said('t3', 'My sister moved to a new flat near the river.', '2023-05-01T10:02:00Z'),
  ];
  const question: Parameters<typeof searchFacts>[2] = { query: 'Which countries has she visited?', mode: 'search', topK: 3, sources: ['turns'], retrievers: ['fulltext'] };
  let withCategories: Runtime;
  let without: Runtime;
  beforeAll(async () => {
    without = await memoryRuntime({ CATEGORY_LEVELS: '0' });
    withCategories = await memoryRuntime({ CATEGORY_LEVELS: '2' });
  }, 60_000);
  afterAll(async () => {
    await without?.close();
    await withCategories?.close();
  });

  it('given a turn naming a country, when a question names the category, then full text finds the turn', async () => {
    const key = { userId: 'u-categories', sessionId: 's1' };
    await withCategories.events.append(key, turns, new Date('2023-05-01T10:03:00Z'));
    await applyEvents(withCategories, key);

    const { facts } = await searchFacts(withCategories, key.userId, question);
    expect(facts[0]?.turnIds).toEqual(['t1']);
  });

  it('given the same turns without category words, then the question shares no word with them', async () => {
    const key = { userId: 'u-no-categories', sessionId: 's1' };
    await without.events.append(key, turns, new Date('2023-05-01T10:03:00Z'));
    await applyEvents(without, key);

    const { facts } = await searchFacts(without, key.userId, question);
    expect(facts).toEqual([]);
  });
});
