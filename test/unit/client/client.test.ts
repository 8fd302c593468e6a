import { describe, expect, it } from 'vitest';
import { MemoryClient, MemoryServiceError, parseRetryAfter } from '../../../shared/client/index.js';

/** One scripted answer: a status with a JSON body and headers, or a thrown network error. */
type Scripted = { status: number; body?: unknown; headers?: Record<string, string> } | { networkError: string };

interface Recorded {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that answers from a script, in order, and records every request. */
function scriptedFetch(...script: Scripted[]) {
  const requests: Recorded[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = Object.fromEntries(Object.entries((init?.headers ?? {}) as Record<string, string>).map(([k, v]) => [k.toLowerCase(), v]));
    requests.push({ method: init?.method ?? 'GET', url: String(input), headers, body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined });
    const next = script.shift();
    if (!next) throw new Error('unscripted request');
    if ('networkError' in next) throw new TypeError(next.networkError);
    const problem = next.status >= 400 && next.body !== undefined;
    return new Response(next.body === undefined ? null : JSON.stringify(next.body), {
      status: next.status,
      headers: { 'content-type': problem ? 'application/problem+json' : 'application/json', ...next.headers },
    });
  };
  return { fetch: fetch as typeof globalThis.fetch, requests };
}

const problem = (status: number, code: string, detail?: string) => ({ type: `https://errors/${code}`, title: code, status, code, ...(detail && { detail }) });
const NOW = Date.parse('2026-01-01T00:00:00Z');

function client(script: Scripted[], options: { maxAttempts?: number; auth?: () => Promise<{ bearer: string } | { apiKey: string }> } = {}) {
  const { fetch, requests } = scriptedFetch(...script);
  const delays: number[] = [];
  const memory = new MemoryClient({
    baseUrl: 'http://memory.test/api/',
    fetch,
    sleep: async (ms) => void delays.push(ms),
    now: () => NOW,
    retry: { maxAttempts: options.maxAttempts ?? 4 },
    ...(options.auth && { auth: options.auth }),
  });
  return { memory, requests, delays };
}

describe('MemoryClient retries', () => {
  it('waits what retry-after says on 429 and 503, in seconds or as an HTTP date', async () => {
    const { memory, requests, delays } = client([
      { status: 429, body: problem(429, 'upstream_unavailable'), headers: { 'retry-after': '3' } },
      { status: 503, body: problem(503, 'upstream_unavailable'), headers: { 'retry-after': new Date(NOW + 7_000).toUTCString() } },
      { status: 200, body: { status: 'ok' } },
    ]);
    expect(await memory.health()).toEqual({ status: 'ok' });
    expect(delays).toEqual([3_000, 7_000]);
    expect(requests.map((r) => r.url)).toEqual(Array(3).fill('http://memory.test/api/health'));
  });

  it('gives a turn without a turnId one id before the first attempt and sends the same ids on every retry', async () => {
    const accepted = { accepted: [{ turnId: 'x', seq: 1 }] };
    const { memory, requests, delays } = client([{ networkError: 'socket hang up' }, { status: 503, headers: { 'retry-after': '0' } }, { status: 202, body: accepted }]);
    await memory.appendTurns('alice', 's1', [
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'second', turnId: 'mine' },
    ]);
    expect(requests).toHaveLength(3);
    const sent = requests.map((r) => (r.body as { turns: { turnId: string }[] }).turns.map((t) => t.turnId));
    expect(sent[0]![0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[0]![1]).toBe('mine');
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[2]).toEqual(sent[0]);
    expect(delays).toHaveLength(2);
    expect(delays[1]).toBe(0);
    expect(requests[0]!.url).toBe('http://memory.test/api/v1/users/alice/sessions/s1/turns');
  });

  it('two appends of turns without ids get different ids (the id is per turn, not per content)', async () => {
    const ok = { status: 202, body: { accepted: [] } };
    const { memory, requests } = client([ok, ok]);
    await memory.appendTurns('u', 's', [{ role: 'user', content: 'same' }]);
    await memory.appendTurns('u', 's', [{ role: 'user', content: 'same' }]);
    const ids = requests.map((r) => (r.body as { turns: { turnId: string }[] }).turns[0]!.turnId);
    expect(new Set(ids).size).toBe(2);
  });

  it('splits more than 100 turns into ordered batches and joins what they accepted', async () => {
    const turns = Array.from({ length: 150 }, (_, i) => ({ role: 'user' as const, content: `t${i}`, turnId: `t${i}` }));
    const accepted = (from: number, to: number) => ({ status: 202, body: { accepted: turns.slice(from, to).map((t, i) => ({ turnId: t.turnId, seq: from + i + 1 })) } });
    const { memory, requests } = client([accepted(0, 100), accepted(100, 150)]);
    const result = await memory.appendTurns('u', 's', turns);
    expect(requests.map((r) => (r.body as { turns: unknown[] }).turns.length)).toEqual([100, 50]);
    expect(result.accepted.map((a) => a.seq)).toEqual(Array.from({ length: 150 }, (_, i) => i + 1));
  });

  it('stops after maxAttempts and throws the last problem', async () => {
    const busy = { status: 503, body: problem(503, 'upstream_unavailable', 'the model is busy') };
    const { memory, requests, delays } = client([busy, busy, busy], { maxAttempts: 3 });
    const error = await memory.getSession('u', 's').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemoryServiceError);
    expect(error).toMatchObject({ code: 'upstream_unavailable', status: 503, detail: 'the model is busy' });
    expect(requests).toHaveLength(3);
    expect(delays).toHaveLength(2);
  });

  it('backs off exponentially (with jitter, within bounds) when no retry-after is given', async () => {
    const busy = { status: 429 };
    const { memory, delays } = client([busy, busy, busy, { status: 200, body: {} }]);
    await memory.getProfile('u');
    expect(delays).toHaveLength(3);
    delays.forEach((d, i) => {
      expect(d).toBeGreaterThanOrEqual((250 * 2 ** i) / 2);
      expect(d).toBeLessThanOrEqual(250 * 2 ** i);
    });
  });

  it('does not retry a network error on a request that is not idempotent', async () => {
    const { memory, requests } = client([{ networkError: 'ECONNRESET' }, { status: 201, body: {} }]);
    const error = await memory.createSnapshot('u', { keys: ['k'] }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'MemoryServiceError', code: 'network_error', status: 0 });
    expect(requests).toHaveLength(1);
  });

  it('retries a 429 even on a request that is not idempotent (the service did not process it)', async () => {
    const { memory, requests } = client([{ status: 429, headers: { 'retry-after': '1' } }, { status: 201, body: { snapshotId: 'snap-1', keys: ['k'], createdAt: '2026-01-01T00:00:00.000Z' } }]);
    expect((await memory.createSnapshot('u', { keys: ['k'] })).snapshotId).toBe('snap-1');
    expect(requests).toHaveLength(2);
  });
});

describe('MemoryClient errors and requests', () => {
  it('throws one error class carrying the problem: code, status, detail and the body', async () => {
    const body = { ...problem(409, 'session_ended', 'Session s1 has ended'), instance: '/x' };
    const { memory, requests } = client([{ status: 409, body }]);
    const error = (await memory.appendTurns('u', 's1', [{ role: 'user', content: 'late' }]).catch((e: unknown) => e)) as MemoryServiceError;
    expect(error).toBeInstanceOf(MemoryServiceError);
    expect(error).toBeInstanceOf(Error);
    expect([error.code, error.status, error.detail]).toEqual(['session_ended', 409, 'Session s1 has ended']);
    expect(error.problem).toEqual(body);
    expect(requests).toHaveLength(1);
  });

  it('an answer that is not problem+json still becomes a MemoryServiceError with a code for its status', async () => {
    const { memory } = client([{ status: 502 }], { maxAttempts: 1 });
    await expect(memory.health()).rejects.toMatchObject({ code: 'upstream_unavailable', status: 502, problem: undefined });
  });

  it('asks the auth callback before every attempt and sends bearer tokens and API keys as Authorization: Bearer', async () => {
    const tokens = [{ bearer: 'token-1' }, { apiKey: 'amk_0123456789ab_secret' }];
    let calls = 0;
    const { memory, requests } = client([{ status: 503, headers: { 'retry-after': '0' } }, { status: 200, body: { insights: [] } }], { auth: async () => tokens[calls++]! });
    await memory.listInsights('alice', { status: 'processed' });
    expect(calls).toBe(2);
    expect(requests.map((r) => r.headers.authorization)).toEqual(['Bearer token-1', 'Bearer amk_0123456789ab_secret']);
    expect(requests[0]!.url).toBe('http://memory.test/api/v1/users/alice/insights?status=processed');
  });

  it('encodes path segments and query values; lists memories by cursor until the last page', async () => {
    const item = (key: string) => ({ key });
    const { memory, requests } = client([
      { status: 200, body: { items: [item('a'), item('b')], nextCursor: 'c1' } },
      { status: 200, body: { items: [item('c')], nextCursor: null } },
      { status: 200, body: { operationId: 'session-end:u:s' } },
    ]);
    const keys: string[] = [];
    for await (const m of memory.memories('u', { tags: ['x', 'y'], limit: 2 })) keys.push(m.key);
    expect(keys).toEqual(['a', 'b', 'c']);
    expect(requests.map((r) => r.url)).toEqual(['http://memory.test/api/v1/users/u/memories?limit=2&tags=x%2Cy', 'http://memory.test/api/v1/users/u/memories?limit=2&cursor=c1&tags=x%2Cy']);
    await memory.getOperation('session-end:u:s');
    expect(requests[2]!.url).toBe('http://memory.test/api/v1/operations/session-end%3Au%3As');
  });

  it('waitForOperation polls until the operation settles and returns a failed one without throwing', async () => {
    const op = (status: string) => ({ status: 200, body: { operationId: 'op', name: 'orch-forget', status, createdAt: '', updatedAt: '' } });
    const { memory, delays } = client([op('pending'), op('running'), op('failed')]);
    expect((await memory.waitForOperation('op', { intervalMs: 10 })).status).toBe('failed');
    expect(delays).toEqual([10, 10]);
  });

  it('parses retry-after: seconds, an HTTP date, nothing', () => {
    expect(parseRetryAfter('2', NOW)).toBe(2000);
    expect(parseRetryAfter(new Date(NOW + 1500).toUTCString(), NOW)).toBe(1000); // HTTP dates have whole seconds
    expect(parseRetryAfter(new Date(NOW - 5000).toUTCString(), NOW)).toBe(0);
    expect(parseRetryAfter(null, NOW)).toBeUndefined();
    expect(parseRetryAfter('soon', NOW)).toBeUndefined();
  });
});
