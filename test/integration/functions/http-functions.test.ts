import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as sessionHandler } from '../../../functions/http-session-get.js';
import { handler as healthHandler } from '../../../functions/http-health-get.js';
import { handler as projectHandler } from '../../../functions/cosmos-events-project.js';
import { handler as projectionQueueHandler } from '../../../functions/timer-projection-queue.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

let runtime: Runtime;
beforeAll(async () => {
  runtime = await memoryRuntime();
});
afterAll(() => runtime.close());

let n = 0;
const fresh = () => ({ userId: `user-${++n}`, sessionId: 'sess-1' });
const turnsPath = (k: { userId: string; sessionId: string }) => `v1/users/${k.userId}/sessions/${k.sessionId}/turns`;

async function append(key: { userId: string; sessionId: string }, body: unknown, headers?: Record<string, string>) {
  return appendHandler(request('POST', turnsPath(key), { params: key, body: body as object, ...(headers && { headers }) }), context('http-turns-append'));
}

/** The feed's handler on the whole feed, then the projection queue's timer (the windows it left queued), as the local host runs them. */
async function projectAll() {
  const { events } = await runtime.changeFeed!.readFeed(null, 100_000);
  await projectHandler(events, context('cosmos-events-project'));
  await projectionQueueHandler({} as never, context('timer-projection-queue'));
}

describe('http-turns-append', () => {
  it('accepts turns with 202, gapless seqs, and returns the client turn ids', async () => {
    const key = fresh();
    const res = await append(key, { turns: [{ role: 'user', content: 'hello', turnId: 'a' }, { role: 'assistant', content: 'hi there' }] });
    expect(res.status).toBe(202);
    const accepted = json(res).accepted as { turnId: string; seq: number }[];
    expect(accepted[0]).toEqual({ turnId: 'a', seq: 1 });
    expect(accepted[1]!.seq).toBe(2);
    expect(accepted[1]!.turnId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('returns the same seq for a retried turnId and records it once', async () => {
    const key = fresh();
    await append(key, { turns: [{ role: 'user', content: 'one', turnId: 'x1' }] });
    const retry = await append(key, { turns: [{ role: 'user', content: 'one', turnId: 'x1' }, { role: 'user', content: 'two', turnId: 'x2' }] });
    expect(json(retry).accepted).toEqual([
      { turnId: 'x1', seq: 1 },
      { turnId: 'x2', seq: 2 },
    ]);
    expect(await runtime.events.lastSeq(key)).toBe(2);
  });

  const bad: [string, unknown, string][] = [
    ['an unknown role', { turns: [{ role: 'wizard', content: 'x' }] }, 'body.turns.0.role'],
    ['empty content', { turns: [{ role: 'user', content: '   ' }] }, 'body.turns.0.content'],
    ['non-string content', { turns: [{ role: 'user', content: 42 }] }, 'body.turns.0.content'],
    ['a bad turnId', { turns: [{ role: 'user', content: 'x', turnId: 'has space' }] }, 'body.turns.0.turnId'],
    ['a bad agentId', { turns: [{ role: 'user', content: 'x', agentId: 'a'.repeat(129) }] }, 'body.turns.0.agentId'],
    ['no turns', { turns: [] }, 'body.turns'],
    ['an unknown field', { turns: [{ role: 'user', content: 'x', colour: 'red' }] }, 'body.turns.0'],
    ['duplicate turnIds in one request', { turns: [{ role: 'user', content: 'x', turnId: 'd' }, { role: 'user', content: 'y', turnId: 'd' }] }, 'body.turns'],
    ['a bad timestamp', { turns: [{ role: 'user', content: 'x', timestamp: 'yesterday' }] }, 'body.turns.0.timestamp'],
  ];
  it.each(bad)('rejects %s with 400 validation_failed and writes nothing', async (_name, body, path) => {
    const key = fresh();
    const res = await append(key, body);
    expect(res.status).toBe(400);
    expect(res.headers).toMatchObject({ 'content-type': 'application/problem+json' });
    expect(json(res)).toMatchObject({ code: 'validation_failed', status: 400 });
    expect((json(res).errors as { path: string }[]).map((e) => e.path)).toContain(path);
    expect(await runtime.events.lastSeq(key)).toBe(0);
  });

  it('rejects malformed JSON with 400', async () => {
    const key = fresh();
    const res = await append(key, '{"turns": [');
    expect(res.status).toBe(400);
    expect(json(res)).toMatchObject({ code: 'validation_failed', detail: 'The body is not valid JSON' });
  });

  it('rejects ids outside [A-Za-z0-9._:-]{1,128} in the path', async () => {
    for (const userId of ['has space', 'x'.repeat(129), 'slash/inside', '']) {
      const key = { userId, sessionId: 's' };
      const res = await append(key, { turns: [{ role: 'user', content: 'x' }] });
      expect(res.status).toBe(400);
      expect((json(res).errors as { path: string }[])[0]!.path).toBe('path.userId');
    }
  });

  it('rejects a body over MAX_REQUEST_BYTES with 413 and writes nothing', async () => {
    const key = fresh();
    const content = 'x'.repeat(runtime.settings.MAX_REQUEST_BYTES);
    const res = await append(key, { turns: [{ role: 'user', content }] });
    expect(res.status).toBe(413);
    expect(json(res)).toMatchObject({ code: 'payload_too_large', maxBytes: runtime.settings.MAX_REQUEST_BYTES });
    const declared = await append(key, { turns: [{ role: 'user', content: 'small' }] }, { 'content-length': String(10 * runtime.settings.MAX_REQUEST_BYTES) });
    expect(declared.status).toBe(413);
    expect(await runtime.events.lastSeq(key)).toBe(0);
  });
});

describe('cosmos-events-project (change-feed handler)', () => {
  it('turns every full window into one interaction and advances the summary, and a redelivered batch changes nothing', async () => {
    const key = fresh();
    const turns = Array.from({ length: 23 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Message ${i + 1} about the Lisbon trip budget of $${1000 + i}.`, turnId: `t${i + 1}` }));
    await append(key, { turns });
    await projectAll();
    const afterFirst = await runtime.interactions.listBySession(key);
    expect(afterFirst.map((i) => i.seqRange)).toEqual([
      [1, 10],
      [11, 20],
    ]);
    expect(afterFirst[0]!.turnIds).toEqual(turns.slice(0, 10).map((t) => t.turnId));
    expect(afterFirst[0]!.contentVector).toHaveLength(runtime.embedder.dimensions);
    expect(afterFirst[0]!.topics.length).toBeGreaterThan(0);
    const session = await runtime.sessions.get(key);
    // 23 turns, then what the projection decided: two windows and the init block.
    expect(session!.doc).toMatchObject({ chunkedThroughSeq: 20, projectedThroughSeq: 26, turnCount: 23 });
    const lifecycle = async () => (await runtime.events.read(key, 23)).map((e) => e.type);
    expect(await lifecycle()).toEqual(['InteractionSummarised', 'InteractionSummarised', 'SessionInitFixed']);
    expect(session!.doc.cumulativeSummary.length).toBeGreaterThan(0);

    await projectAll(); // the whole feed again: at-least-once delivery
    expect(await runtime.interactions.listBySession(key)).toEqual(afterFirst);
    expect((await runtime.sessions.get(key))!.doc).toEqual(session!.doc);
    expect(await lifecycle()).toHaveLength(3);
  });

  it('rejects a document that is not an event, so the batch is retried instead of silently lost', async () => {
    await expect(projectHandler([{ id: 'x', type: 'Nonsense' }], context('cosmos-events-project'))).rejects.toThrow();
  });
});

describe('http-session-get and http-context-get', () => {
  it('answer 404 problem+json for an unknown session', async () => {
    const key = fresh();
    const status = await sessionHandler(request('GET', `v1/users/${key.userId}/sessions/none`, { params: { ...key, sessionId: 'none' } }), context('http-session-get'));
    expect(status.status).toBe(404);
    expect(json(status).code).toBe('not_found');
    const ctx = await contextHandler(request('GET', `v1/users/${key.userId}/sessions/none/context`, { params: { ...key, sessionId: 'none' } }), context('http-context-get'));
    expect(ctx.status).toBe(404);
  });

  it('report pending events before projection and serve every turn in the context meanwhile', async () => {
    const key = fresh();
    await append(key, { turns: Array.from({ length: 12 }, (_, i) => ({ role: 'user', content: `note ${i + 1}` })) });
    const before = json(await sessionHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}`, { params: key }), context('http-session-get')));
    expect(before).toMatchObject({ lastSeq: 12, projectedThroughSeq: 0, pending: 12, chunkedThroughSeq: 0 });
    const unprojected = json(await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context`, { params: key }), context('http-context-get')));
    expect((unprojected.sections as { turns: unknown[] }).turns).toHaveLength(12);

    await projectAll();
    const after = json(await sessionHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}`, { params: key }), context('http-session-get')));
    expect(after).toMatchObject({ lastSeq: 14, projectedThroughSeq: 14, pending: 0, chunkedThroughSeq: 10, turnCount: 12 });
    const projected = json(await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context?maxTokens=4000`, { params: key }), context('http-context-get')));
    expect((projected.sections as { turns: { seq: number }[] }).turns.map((t) => t.seq)).toEqual([8, 9, 10, 11, 12]);
    expect(projected.summaryCoversThroughSeq).toBe(10);
  });

  it('answers 422 with the tokens needed when maxTokens cannot hold the unsummarised turns', async () => {
    const key = fresh();
    await append(key, { turns: [{ role: 'user', content: 'A long message with many words in it. '.repeat(20) }] });
    const path = `v1/users/${key.userId}/sessions/${key.sessionId}/context`;
    const res = await contextHandler(request('GET', `${path}?maxTokens=64`, { params: key }), context('http-context-get'));
    expect(res.status).toBe(422);
    expect(json(res)).toMatchObject({ code: 'context_budget_exceeded', maxTokens: 64 });
    expect(json(res).requiredTokens).toBeGreaterThan(64);
    const roomy = await contextHandler(request('GET', `${path}?maxTokens=1000`, { params: key }), context('http-context-get'));
    expect(roomy.status).toBe(200);
    expect(json(roomy).tokens).toBe(json(res).requiredTokens);
    const belowMinimum = await contextHandler(request('GET', `${path}?maxTokens=10`, { params: key }), context('http-context-get'));
    expect((json(belowMinimum).errors as { path: string }[])[0]!.path).toBe('query.maxTokens');
  });
});

describe('http-health-get', () => {
  it('reports the backends in use', async () => {
    const res = await healthHandler(request('GET', 'health'), context('http-health-get'));
    expect(json(res)).toMatchObject({ status: 'ok', storage: 'pglite', models: { dimensions: runtime.embedder.dimensions } });
  });
});
