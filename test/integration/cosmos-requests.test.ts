import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { AppendTurnsBody } from '../../shared/contracts/turns.js';
import { newSession } from '../../shared/domain/session.js';
import { openRecordedCosmos } from '../support/cosmos-requests.js';

// The recorder behind test/bench/cosmos-ru.ts: what it reports of each request is what the cost estimate prices.
describe('Cosmos request recorder (wire fake)', () => {
  let opened: Awaited<ReturnType<typeof openRecordedCosmos>>;
  beforeAll(async () => {
    opened = await openRecordedCosmos(3);
  });
  afterAll(async () => {
    await opened.close();
  });
  const turns = (...ids: string[]) => AppendTurnsBody.parse({ turns: ids.map((turnId) => ({ role: 'user', content: `turn ${turnId}`, turnId })) });

  it('sees an append as its tombstone checks, seq and key queries and one batch, all in the user partition', async () => {
    const deps = { events: cosmosStores(opened.database).events, forgets: new CosmosForgetStore(opened.database), clock: { now: () => new Date() }, ids: { newId: () => 'unused' } };
    const key = { userId: 'append-user', sessionId: 's1' };
    await appendTurns(deps, key, turns('t1'));

    const requests = await opened.recorder.record(() => appendTurns(deps, key, turns('t2', 't3')));

    expect(requests.map((r) => [r.kind, r.container, r.scope])).toEqual([
      ['query', 'forgets', 'single-partition'],
      ['query', 'events', 'single-partition'],
      ['query', 'events', 'single-partition'],
      ['batch', 'events', 'single-partition'],
      ['query', 'forgets', 'single-partition'],
    ]);
    const [, lastSeq, keys, batch] = requests;
    expect(lastSeq!.loaded).toHaveLength(1); // TOP 1 by seq reads the last event whole
    expect(keys!.loaded).toEqual([]);
    expect(batch!.writes.map((w) => [w.doc.seq, w.before])).toEqual([
      [2, undefined],
      [3, undefined],
    ]);
  });

  it('tells a point read that finds nothing, a first write and an overwrite of the same id apart', async () => {
    const { sessions } = cosmosStores(opened.database);
    const key = { userId: 'session-user', sessionId: 's1' };
    const doc = newSession(key, new Date('2026-01-05T10:00:00Z'));

    const requests = await opened.recorder.record(async () => {
      await sessions.get(key);
      const version = await sessions.put(doc, null);
      await sessions.put({ ...doc, turnCount: 1 }, version);
    });

    expect(requests.map((r) => [r.kind, r.status, r.writes.length, r.writes[0]?.before !== undefined])).toEqual([
      ['point read', 404, 0, false],
      ['create', 201, 1, false],
      ['replace', 200, 1, true],
    ]);
  });

  it('runs a ranked query the fake cannot score as its unranked filter, and reports the query as sent', async () => {
    const { search } = cosmosStores(opened.database);
    const turn = (seq: number) => ({ userId: 'search-user', sessionId: 's1', seq, turnId: `t${seq}`, speaker: 'user', text: `user: pension ${seq}`, matchText: `pension ${seq}`, timestamp: '2026-01-05T10:00:00.000Z', embeddingModel: 'm', vector: [1, 0, seq] });
    await search.indexTurns([turn(1), turn(2)]);

    const requests = await opened.recorder.record(() => search.turns({ userId: 'search-user', text: 'pension', vector: { model: 'm', values: [1, 0, 0] }, limit: 10, filters: {} }, 'fulltext'));

    expect(requests).toHaveLength(1);
    expect(requests[0]!.query).toContain('ORDER BY RANK FullTextScore(c.content');
    expect(requests[0]!.items).toBe(2);
    expect(requests[0]!.loaded).toHaveLength(2);
  });
});
