import type { HttpResponseInit } from '@azure/functions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as healthHandler } from '../../../functions/http-health-get.js';
import { handler as mcpHandler } from '../../../functions/http-mcp.js';
import { handler as sbHandler } from '../../../functions/sb-turns-append.js';
import { handler as appendHandler } from '../../../functions/http-turns-append.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { MemoryBudget, RETRY_AFTER_SECONDS } from '../../../shared/platform/memory-budget.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// The memory budget through the handlers: a governor over an injected reading (never the process's own RSS) stands in
// for the runtime's, and each test moves the reading across the marks.

const MB = 2 ** 20;
let runtime: Runtime;
let rss = 0;
let governor: MemoryBudget;
beforeAll(async () => {
  runtime = await memoryRuntime();
});
beforeEach(() => {
  governor = new MemoryBudget({ budgetBytes: 1000 * MB, readRss: () => rss });
  runtime.admission = governor;
  read(100);
});
afterAll(() => runtime.close());

const read = (mb: number) => ((rss = mb * MB), governor.sample());
const header = (res: HttpResponseInit, name: string) => new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get(name);
const append = (key: { userId: string; sessionId: string }, turnId: string) =>
  appendHandler(request('POST', `v1/users/${key.userId}/sessions/${key.sessionId}/turns`, { params: key, body: { turns: [{ role: 'user', content: 'hello', turnId }] } }), context('http-turns-append'));

describe('memory budget', () => {
  it('over the hard mark an HTTP append is 503 overloaded with Retry-After and writes nothing; under it again it is taken', async () => {
    const key = { userId: 'budget-http', sessionId: 's1' };
    expect((await append(key, 't1')).status).toBe(202);
    expect(read(950)).toBe('overloaded');
    const refused = await append(key, 't2');
    expect(refused.status).toBe(503);
    expect(header(refused, 'content-type')).toBe('application/problem+json');
    expect(header(refused, 'retry-after')).toBe(String(RETRY_AFTER_SECONDS));
    expect(json(refused)).toMatchObject({ code: 'overloaded', status: 503, retryAfter: RETRY_AFTER_SECONDS });
    expect((await runtime.events.read(key, 0)).map((e) => e.type === 'TurnAppended' && e.data.turnId)).toEqual(['t1']);
    // Reads are answered meanwhile, and /health says why appends are refused.
    const ctx = await contextHandler(request('GET', `v1/users/${key.userId}/sessions/${key.sessionId}/context`, { params: key }), context('http-context-get'));
    expect(ctx.status).toBe(200);
    expect(json(await healthHandler(request('GET', 'health'), context('http-health-get'))).memoryBudget).toEqual({ state: 'overloaded', budgetMb: 1000, rssMb: 950 });
    // The client retries the same turn once the reading is back under the midpoint of the marks.
    expect(read(700)).toBe('ok');
    const retried = await append(key, 't2');
    expect(retried.status).toBe(202);
    expect((json(retried) as { accepted: { turnId: string; seq: number }[] }).accepted).toEqual([{ turnId: 't2', seq: 2 }]);
  });

  it('over the hard mark an MCP append_turns is 503 overloaded with Retry-After; other tools are answered', async () => {
    const key = { userId: 'budget-mcp', sessionId: 's1' };
    const rpc = (name: string, args: object) =>
      mcpHandler(
        request('POST', 'mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, headers: { accept: 'application/json, text/event-stream' } }),
        context('http-mcp'),
      );
    read(950);
    const refused = await rpc('append_turns', { ...key, turns: [{ role: 'user', content: 'hello', turnId: 'm1' }] });
    expect(refused.status).toBe(503);
    expect(header(refused, 'retry-after')).toBe(String(RETRY_AFTER_SECONDS));
    expect(json(refused).code).toBe('overloaded');
    expect(await runtime.events.lastSeq(key)).toBe(0);
    expect((await rpc('search_facts', { userId: key.userId, query: 'hello' })).status).toBe(200);
    read(100);
    const taken = await rpc('append_turns', { ...key, turns: [{ role: 'user', content: 'hello', turnId: 'm1' }] });
    expect(taken.status).toBe(200);
    expect(await runtime.events.lastSeq(key)).toBe(1);
  });

  it('a Service Bus append waits while over the hard mark and is recorded once appends are taken again', async () => {
    const key = { userId: 'budget-sb', sessionId: 's1' };
    read(950);
    const handled = sbHandler({ type: 'append', ...key, turns: [{ role: 'user', content: 'queued' }] }, context('sb-turns-append', { messageId: 'q-1' }));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await runtime.events.lastSeq(key)).toBe(0);
    read(100);
    await handled;
    expect((await runtime.events.read(key, 0)).map((e) => e.type === 'TurnAppended' && e.data.turnId)).toEqual(['q-1.0']);
  });

  it('a Service Bus append still refused after its wait throws overloaded having written nothing, so the message is delivered again', async () => {
    const key = { userId: 'budget-sb', sessionId: 's2' };
    read(950);
    const handled = sbHandler({ type: 'append', ...key, turns: [{ role: 'user', content: 'queued' }] }, context('sb-turns-append', { messageId: 'q-2' }));
    governor.stop(); // the wait ends refused, as it does when it runs out
    await expect(handled).rejects.toMatchObject({ code: 'overloaded' });
    expect(await runtime.events.lastSeq(key)).toBe(0);
  });
});
