import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalHost } from '../../shared/platform/local-host/host.js';
import { completionOrder, rawRequest } from './support.js';

// Issue 15's hostile requests against the local host over real HTTP: each is refused with problem+json (never a 500 or a
// hang), and the heavy ones do not hold up a /health request sent meanwhile (asserted as an order of events).

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-hostile-'));
let host: Host;

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  process.env.BODY_TIMEOUT_MS = '300';
  host = await startLocalHost({ port: 0, timers: false });
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const api = (path: string, init?: RequestInit) => fetch(`${host.url}/${path}`, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } });
const post = (path: string, body: unknown) => api(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });

async function expectProblem(response: Response, status: number, code?: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  const body = (await response.json()) as { code: string; status: number };
  expect(body.status).toBe(status);
  if (code) expect(body.code).toBe(code);
}

async function settled(userId: string, sessionId: string) {
  for (const deadline = Date.now() + 40_000; Date.now() < deadline; ) {
    const status = (await (await api(`v1/users/${userId}/sessions/${sessionId}`)).json()) as { pending: number; lastSeq: number };
    if (status.pending === 0 && status.lastSeq > 0) return status;
    await sleep(25);
  }
  throw new Error(`session ${sessionId} did not settle`);
}

/** Two idle keep-alive connections, so neither request of an order test waits for a TCP handshake the other skips. */
const warmConnections = () => Promise.all([api('health'), api('health')]).then((r) => Promise.all(r.map((x) => x.text())));

const NUL = 'a\u0000b';
const turnsPath = 'v1/users/hostile/sessions/s1/turns';
const turn = (over: Record<string, unknown>) => ({ turns: [{ role: 'user', content: 'hello', ...over }] });

describe('NUL and lone surrogates are refused with 400 validation_failed', () => {
  const cases: [string, string, unknown][] = [
    ['turn content', turnsPath, turn({ content: NUL })],
    ['turn name', turnsPath, turn({ name: NUL })],
    ['turn toolCallId', turnsPath, turn({ role: 'tool', toolCallId: NUL })],
    ['tool-call arguments', turnsPath, turn({ role: 'assistant', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: NUL } }] })],
    ['tool-call name', turnsPath, turn({ role: 'assistant', toolCalls: [{ id: 'c1', type: 'function', function: { name: NUL, arguments: '{}' } }] })],
    ['memory content', 'v1/users/hostile/memories', { content: NUL }],
    ['memory type', 'v1/users/hostile/memories', { content: 'x', type: NUL }],
    ['memory source', 'v1/users/hostile/memories', { content: 'x', source: NUL }],
    ['memory description', 'v1/users/hostile/memories', { content: 'x', description: NUL }],
    ['search query', 'v1/users/hostile/facts/search', { query: NUL }],
    ['turn content (lone high surrogate)', turnsPath, turn({ content: 'x\uD83D' })],
    ['turn content (lone low surrogate)', turnsPath, turn({ content: '\uDE00y' })],
  ];
  for (const [name, path, body] of cases) {
    it(`a NUL or lone surrogate in the ${name}`, async () => {
      await expectProblem(await post(path, body), 400, 'validation_failed');
    });
  }

  for (const query of ['insights?category=a%00b', 'memories?type=a%00b', 'memories?source=a%00b', 'memories?type=%ED%A0%80']) {
    it(`in ?${query.split('?')[1]}`, async () => {
      const response = await api(`v1/users/hostile/${query}`);
      // %ED%A0%80 is not UTF-8 (an encoded surrogate): it decodes to U+FFFD and is then a valid, unmatched type.
      if (query.includes('%ED')) expect(response.status).toBe(200);
      else await expectProblem(response, 400, 'validation_failed');
    });
  }
});

describe('sizes, depth and values the stores cannot hold', () => {
  it('"content": "😀" × 2000 in one turn is accepted and projected, and its context reads', async () => {
    expect((await post('v1/users/emoji/sessions/s1/turns', turn({ content: '😀'.repeat(2000), turnId: 't1' }))).status).toBe(202);
    await settled('emoji', 's1');
    expect((await api('v1/users/emoji/sessions/s1/context')).status).toBe(200);
  });

  it('a memory whose JSON content nests 5,000 levels deep is 400 before it is parsed', async () => {
    const deep = `{"content":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    await expectProblem(await post('v1/users/hostile/memories', deep), 400, 'validation_failed');
  });

  it('a search from 0000-01-01T00:00:00Z is 400 (dates lie between the years 1000 and 9999)', async () => {
    await expectProblem(await post('v1/users/hostile/facts/search', { query: 'x', from: '0000-01-01T00:00:00Z' }), 400, 'validation_failed');
  });

  it('the poison turn timestamp 0000-01-01T00:00:00Z is refused at the edge', async () => {
    await expectProblem(await post(turnsPath, turn({ timestamp: '0000-01-01T00:00:00Z' })), 400, 'validation_failed');
  });

  it('a malformed cursor on GET /memories is 400', async () => {
    for (const cursor of ['%00', 'not a cursor', Buffer.from('2024-01-01T\u0000|k').toString('base64url'), 'x'.repeat(600)]) {
      await expectProblem(await api(`v1/users/hostile/memories?cursor=${cursor}`), 400, 'validation_failed');
    }
  });

  it('a 900k-character tool-call argument is offloaded, and a /health request sent meanwhile completes first', async () => {
    const args = 'x'.repeat(900_000);
    const body = { turns: [{ role: 'assistant', content: 'calling', turnId: 'big', toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: args } }] }] };
    await warmConnections();
    const appendOrder = await completionOrder({
      heavy: async () => expect((await post('v1/users/big/sessions/s1/turns', body)).status).toBe(202),
      health: async () => expect((await api('health')).status).toBe(200),
    });
    expect(appendOrder).toEqual(['health', 'heavy']);
    await settled('big', 's1');
    // The first context read tokenized the argument (quadratic: 288 s for 900k); now it shows the placeholder.
    const context = (await (await api('v1/users/big/sessions/s1/context')).json()) as { text: string };
    expect(context.text).toContain('[MemoryRef:');
    expect(context.text.length).toBeLessThan(10_000);
    const list = (await (await api('v1/users/big/memories?type=tool_call_arguments')).json()) as { items: { key: string; bytes: number }[] };
    expect(list.items).toHaveLength(1);
    expect(list.items[0]!.bytes).toBe(900_000);
  });

  it('ReDoS: transform=filtered&pattern=(a+)+$ runs in linear time, and a /health request sent meanwhile completes first', async () => {
    // Four lines on which a backtracking engine takes 2^40 steps, after enough text to keep the memory in Blob Storage.
    const content = [...Array.from({ length: 4_000 }, (_, i) => `line ${i} of padding text`), ...Array.from({ length: 4 }, () => `${'a'.repeat(40)}!`)].join('\n');
    expect((await post('v1/users/redos/memories', { content, key: 'redos' })).status).toBe(201);
    await warmConnections();
    const order = await completionOrder({
      heavy: async () => {
        const response = await api('v1/users/redos/memories/redos?transform=filtered&pattern=(a%2B)%2B%24');
        expect(response.status).toBe(200);
        expect(((await response.json()) as { lines: { kept: number } }).lines.kept).toBe(0);
      },
      health: async () => expect((await api('health')).status).toBe(200),
    });
    expect(order).toEqual(['health', 'heavy']);
  });

  it('ReDoS through MCP retrieve_memory: the same pattern matches in linear time, and a /health request sent meanwhile completes first', async () => {
    const client = new Client({ name: 'hostile-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(host.url.replace(/\/api$/, '/mcp'))));
    await warmConnections();
    const order = await completionOrder({
      heavy: async () => {
        const result = (await client.callTool({ name: 'retrieve_memory', arguments: { userId: 'redos', key: 'redos', transform: 'filtered', pattern: '(a+)+$' } })) as CallToolResult;
        expect(result.isError ?? false).toBe(false);
        expect(JSON.parse((result.content[1] as { text: string }).text)).toMatchObject({ lines: { kept: 0 } });
      },
      health: async () => expect((await api('health')).status).toBe(200),
    });
    await client.close();
    expect(order).toEqual(['health', 'heavy']);
  });

  it('an invalid RE2 pattern (a backreference) is 400', async () => {
    await expectProblem(await api('v1/users/redos/memories/redos?transform=filtered&pattern=(a)%5C1'), 400, 'validation_failed');
  });
});

describe('the local host refuses what it cannot safely serve', () => {
  for (const host of ['[', 'a b', '@']) {
    it(`a bad Host header (${host}) is 400 problem+json`, async () => {
      const response = await rawRequest(hostPort(), `GET /api/health HTTP/1.1\nHost: ${host}\nConnection: close`);
      expect(response?.status).toBe(400);
      expect(response?.headers['content-type']).toBe('application/problem+json');
    });
  }

  it('another host name (DNS rebinding) or port is 421 problem+json; its own names are served', async () => {
    for (const name of [`evil.example:${hostPort()}`, 'localhost:1']) {
      const response = await rawRequest(hostPort(), `GET /api/health HTTP/1.1\nHost: ${name}\nConnection: close`);
      expect(response?.status).toBe(421);
      expect(response?.headers['content-type']).toBe('application/problem+json');
    }
    for (const name of ['localhost', '127.0.0.1', '[::1]']) {
      expect((await rawRequest(hostPort(), `GET /api/health HTTP/1.1\nHost: ${name}:${hostPort()}\nConnection: close`))?.status).toBe(200);
    }
  });

  it('a Content-Length larger than the body times out quickly with 408 problem+json', async () => {
    const response = await rawRequest(hostPort(), `POST /api/${turnsPath} HTTP/1.1\nHost: localhost:${hostPort()}\nContent-Type: application/json\nContent-Length: 1000`, '{"turns":');
    expect(response?.status).toBe(408);
    expect(response?.headers['content-type']).toBe('application/problem+json');
  });

  it('a declared Content-Length over the limit is 413 before the body is read', async () => {
    const response = await rawRequest(hostPort(), `POST /api/${turnsPath} HTTP/1.1\nHost: localhost:${hostPort()}\nContent-Type: application/json\nContent-Length: 30000000`);
    expect(response?.status).toBe(413);
    expect(response?.headers['content-type']).toBe('application/problem+json');
  });

  it('a chunked body is cut off at the limit with 413', async () => {
    const chunk = 'x'.repeat(256 * 1024);
    const chunked = `${Array.from({ length: 8 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`).join('')}0\r\n\r\n`;
    const response = await rawRequest(hostPort(), `POST /api/${turnsPath} HTTP/1.1\nHost: localhost:${hostPort()}\nContent-Type: application/json\nTransfer-Encoding: chunked`, chunked);
    expect(response?.status).toBe(413);
  });

  it('writes take JSON only: text/plain and forms are 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      await expectProblem(await api(turnsPath, { method: 'POST', body: JSON.stringify(turn({})), headers: { 'content-type': type } }), 415, 'unsupported_media_type');
    }
    expect((await api(turnsPath, { method: 'POST', body: JSON.stringify(turn({})), headers: { 'content-type': 'application/json; charset=utf-8' } })).status).toBe(202);
    const mcp = await fetch(host.url.replace(/\/api$/, '/mcp'), { method: 'POST', body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}', headers: { 'content-type': 'text/plain' } });
    await expectProblem(mcp, 415, 'unsupported_media_type');
  });

  it('HEAD and unknown methods are answered with problem+json', async () => {
    const head = await api('health', { method: 'HEAD' });
    expect(head.status).toBe(405);
    expect(head.headers.get('content-type')).toBe('application/problem+json');
    await expectProblem(await api('health', { method: 'PROPFIND' }), 405, 'method_not_allowed');
    const unknown = await rawRequest(hostPort(), `BREW /api/health HTTP/1.1\nHost: localhost:${hostPort()}\nConnection: close`);
    expect(unknown?.status).toBe(400);
    expect(unknown?.headers['content-type']).toBe('application/problem+json');
  });

  it('a body on a route that takes none is 400', async () => {
    await expectProblem(await api('v1/users/hostile/sessions/s1/end', { method: 'POST', body: '{"x":1}' }), 400, 'validation_failed');
    await expectProblem(await api('v1/users/hostile/memories/k', { method: 'DELETE', body: '{}' }), 400, 'validation_failed');
  });
});

const hostPort = () => host.port;
