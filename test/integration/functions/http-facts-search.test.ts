import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as searchHandler } from '../../../functions/http-facts-search.js';
import { handler as projectHandler } from '../../../functions/cosmos-events-project.js';
import { handler as storeMemoryHandler } from '../../../functions/http-memories-create.js';
import type { Fact } from '../../../shared/contracts/facts.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

let runtime: Runtime;
const userId = 'searcher';

const statements = [
  ['work', 'user', 'I work as a nurse at the city hospital, mostly night shifts.', '2025-03-02T10:00:00Z'],
  ['work', 'assistant', 'Night shifts are hard; do you get enough sleep?', '2025-03-02T10:00:05Z'],
  ['pets', 'user', 'We just adopted a golden retriever puppy named Max!', '2025-05-10T09:00:00Z'],
  ['pets', 'assistant', 'Congratulations! Puppies are a lot of work.', '2025-05-10T09:00:05Z'],
  ['money', 'user', 'My mortgage rate resets next year and I am nervous about it.', '2025-06-01T08:00:00Z'],
  ['money', 'assistant', 'We can look at fixing the rate before it resets.', '2025-06-01T08:00:05Z'],
  ['travel', 'user', 'In July I am flying to Lisbon for a conference on oncology.', '2025-06-15T12:00:00Z'],
  ['travel', 'assistant', 'Lisbon in July is lovely, bring sunscreen.', '2025-06-15T12:00:05Z'],
  ['code', 'user', 'My Python script crashes with a KeyError when the CSV has empty rows.', '2025-07-01T12:00:00Z'],
  ['code', 'assistant', 'Use row.get() or skip empty rows before indexing.', '2025-07-01T12:00:05Z'],
] as const;

beforeAll(async () => {
  runtime = await memoryRuntime();
  for (const [sessionId, role, content, timestamp] of statements) {
    const params = { userId, sessionId };
    await appendHandler(request('POST', `v1/users/${userId}/sessions/${sessionId}/turns`, { params, body: { turns: [{ role, content, timestamp, turnId: `${sessionId}-${role}`, agentId: sessionId === 'code' ? 'coder' : 'companion' }] } }), context('http-turns-append'));
  }
  await projectHandler((await runtime.changeFeed!.readFeed(null, 1000)).events, context('cosmos-events-project'));
});
afterAll(() => runtime.close());

async function search(body: object, user = userId) {
  const res = await searchHandler(request('POST', `v1/users/${user}/facts/search`, { params: { userId: user }, body }), context('http-facts-search'));
  return { status: res.status, body: json(res) as { facts: Fact[]; answer?: string; code?: string; tokens: number } };
}

describe('http-facts-search', () => {
  it('finds a fact stated in other words: a question about a dog finds the golden retriever puppy in the top 3', async () => {
    const { body } = await search({ query: 'Does the user have a dog?', topK: 3 });
    expect(body.facts.map((f) => f.turnIds[0])).toContain('pets-user');
  });

  it('gives every fact provenance: session, client turn ids, seq range and the time of the turns', async () => {
    const { body } = await search({ query: 'mortgage rate reset', topK: 3, sources: ['turns'] });
    const fact = body.facts.find((f) => f.turnIds[0] === 'money-user');
    expect(fact).toMatchObject({ id: 'turn:money:1', source: 'turns', sessionId: 'money', seqRange: [1, 1], timestamp: '2025-06-01T08:00:00.000Z', agentId: 'companion' });
    expect(fact!.text).toBe('user: My mortgage rate resets next year and I am nervous about it.');
    expect(body.facts[0]!.score).toBe(1);
  });

  it('filters by session, agent and time range', async () => {
    expect((await search({ query: 'Lisbon', sessionId: 'work' })).body.facts.every((f) => f.sessionId === 'work')).toBe(true);
    expect((await search({ query: 'crash', agentId: 'coder' })).body.facts.every((f) => f.agentId === 'coder')).toBe(true);
    const inMay = (await search({ query: 'puppy nurse mortgage', from: '2025-05-01T00:00:00Z', to: '2025-05-31T23:59:59Z', topK: 10 })).body.facts;
    expect(inMay.length).toBeGreaterThan(0);
    expect(inMay.every((f) => f.timestamp.startsWith('2025-05'))).toBe(true);
  });

  it('honours topK, minScore and maxTokens', async () => {
    expect((await search({ query: 'night shifts at the hospital', topK: 2 })).body.facts).toHaveLength(2);
    const strict = (await search({ query: 'night shifts at the hospital', topK: 10, minScore: 0.99 })).body.facts;
    expect(strict.every((f) => f.score >= 0.99)).toBe(true);
    const budget = await search({ query: 'night shifts at the hospital', topK: 10, maxTokens: 20 });
    expect(budget.body.tokens).toBeLessThanOrEqual(20);
  });

  it('never returns another user’s facts', async () => {
    expect((await search({ query: 'golden retriever puppy' }, 'someone-else')).body.facts).toEqual([]);
  });

  it('ranks with one retriever alone when asked (for evaluation)', async () => {
    const bm25 = (await search({ query: 'KeyError CSV', retrievers: ['fulltext'], sources: ['turns'], topK: 1 })).body.facts;
    expect(bm25[0]!.turnIds).toEqual(['code-user']);
    const vector = (await search({ query: 'my program throws an exception', retrievers: ['vector'], sources: ['turns'], topK: 3 })).body.facts;
    expect(vector.length).toBe(3);
  });

  it('answers in agent mode from the facts its tools found', async () => {
    const { body } = await search({ query: 'Where is the user travelling in July?', mode: 'agent' });
    expect(body.answer).toMatch(/Lisbon/);
    expect(body.facts.some((f) => f.turnIds.includes('travel-user'))).toBe(true);
  });

  it('searches detail memory too: an artifact comes back with its key to fetch the full content', async () => {
    const body = { key: 'q3-report', type: 'database_result', description: 'Quarterly revenue report for the bakery chain', content: { quarter: 'Q3', revenue: 125000 }, sessionId: 'money' };
    const stored = await storeMemoryHandler(request('POST', `v1/users/${userId}/memories`, { params: { userId }, body }), context('http-memories-create'));
    expect(stored.status).toBe(201);
    const { body: result } = await search({ query: 'quarterly revenue of the bakery', topK: 3 });
    expect(result.facts[0]).toMatchObject({ id: 'artifact:q3-report', source: 'artifacts', memoryKey: 'q3-report', sessionId: 'money', turnIds: [] });
    expect((await search({ query: 'quarterly revenue of the bakery', sources: ['turns'] })).body.facts.every((f) => f.source === 'turns')).toBe(true);
    expect((await search({ query: 'quarterly revenue of the bakery', sources: ['artifacts'], sessionId: 'work' })).body.facts).toEqual([]);
  });

  it('ranks the turns of the one participant a query names above the same words said by another', async () => {
    const user = 'two-speakers';
    const turns = [
      { role: 'assistant', name: 'Ben', content: 'I went hiking in the Alps.', turnId: 'ben-1', timestamp: '2025-08-01T10:00:00Z' },
      { role: 'user', name: 'Anna', content: 'Ben, I went hiking last summer too: hiking is the best!', turnId: 'anna-1', timestamp: '2025-08-01T10:00:05Z' },
    ];
    await appendHandler(request('POST', `v1/users/${user}/sessions/alps/turns`, { params: { userId: user, sessionId: 'alps' }, body: { turns } }), context('http-turns-append'));
    await projectHandler((await runtime.changeFeed!.readFeed(null, 1000)).events, context('cosmos-events-project'));
    const ask = async (query: string) => (await search({ query, sources: ['turns'], topK: 2 }, user)).body.facts.map((f) => f.turnIds[0]);
    // On words alone Anna's turn leads (it says "Ben", "hiking" twice and "last summer"); naming Ben puts his first.
    expect(await ask('Where did Ben go hiking last summer?')).toEqual(['ben-1', 'anna-1']);
    expect(await ask('Where did Anna go hiking last summer?')).toEqual(['anna-1', 'ben-1']);
  });

  it('searches without the names of the participants: a turn that only addresses someone does not win on their name', async () => {
    const user = 'vocatives';
    const append = (sessionId: string, turns: object[]) =>
      appendHandler(request('POST', `v1/users/${user}/sessions/${sessionId}/turns`, { params: { userId: user, sessionId }, body: { turns } }), context('http-turns-append'));
    const say = (name: string, content: string, turnId: string) => ({ role: name === 'Anna' ? 'user' : 'assistant', name, content, turnId, timestamp: '2025-08-02T10:00:00Z' });
    await append('s1', [say('Ben', 'Pottery is my favourite hobby.', 'ben-hobby'), say('Anna', 'Ben, oh Ben! Tell me more, Ben, your day sounds fun.', 'anna-to-ben')]);
    await append('s2', [say('Anna', 'Chess is my hobby.', 'anna-chess'), say('Anna', 'The weather is cold.', 'anna-weather'), say('Anna', 'I cooked soup.', 'anna-soup')]);
    await projectHandler((await runtime.changeFeed!.readFeed(null, 1000)).events, context('cosmos-events-project'));
    expect((await runtime.search.speakers(user)).sort()).toEqual(['Anna', 'Ben']);
    // On words, "Ben" four times would put Anna's turn to Ben first (it also follows Ben's hobby); without the names, the
    // two turns that state a hobby lead.
    const facts = (await search({ query: 'Which hobbies do Anna and Ben have?', sources: ['turns'], retrievers: ['fulltext'], topK: 2 }, user)).body.facts;
    expect(facts.map((f) => f.turnIds[0]).sort()).toEqual(['anna-chess', 'ben-hobby']);
  });

  it('ranks facts from a period the query names first', async () => {
    const { body } = await search({ query: 'What did the user tell me in May 2025?', sources: ['turns'], topK: 3 });
    expect(body.facts[0]!.turnIds).toEqual(['pets-user']);
  });

  it('rejects a bad request with 400', async () => {
    expect((await search({ query: '' })).status).toBe(400);
    expect((await search({ query: 'x', topK: 0 })).status).toBe(400);
    expect((await search({ query: 'x', sources: ['nowhere'] })).status).toBe(400);
    const inverted = await search({ query: 'x', from: '2025-06-01T00:00:00Z', to: '2025-05-01T00:00:00Z' });
    expect(inverted).toMatchObject({ status: 400, body: { code: 'validation_failed' } });
    expect(JSON.stringify(inverted.body)).toContain('from must not be after to');
  });
});
