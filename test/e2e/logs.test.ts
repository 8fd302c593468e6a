import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { startLocalHost as StartLocalHost } from '../../shared/platform/local-host/host.js';

// Logs carry ids and counts, never memory text: every route (and MCP) is driven with text carrying a marker, through
// the projection, a session end and a reflection, with the log level at trace; the marker never reaches a log line
// (console, and the InvocationContext logs the local host writes to it).

type Host = Awaited<ReturnType<typeof StartLocalHost>>;
const MARKER = 'ZQXMARKER7731';
const dataDir = mkdtempSync(join(tmpdir(), 'memory-logs-'));
const logged: string[] = [];
let host: Host;

beforeAll(async () => {
  for (const method of ['log', 'info', 'warn', 'error', 'debug', 'trace'] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void logged.push(format(...args)));
  }
  for (const stream of [process.stdout, process.stderr]) {
    const write = stream.write.bind(stream);
    vi.spyOn(stream, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
      logged.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof stream.write);
  }
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  process.env.LOG_LEVEL = 'trace'; // read when the local host's invocation module loads: import it after
  const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
  host = await startLocalHost({ port: 0, timers: false, durable: { delayScale: 0 } }); // the forget's grace fires at once
});
afterAll(async () => {
  await host?.stop();
  vi.restoreAllMocks();
  rmSync(dataDir, { recursive: true, force: true });
});

const api = (path: string, init?: RequestInit) => fetch(`${host.url}/${path}`, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } });
const post = (path: string, body: unknown) => api(path, { method: 'POST', body: JSON.stringify(body) });
const json = async <T>(response: Response | Promise<Response>) => (await (await response).json()) as T;

async function operationDone(operationId: string) {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(100)) {
    const op = await json<{ status: string }>(api(`v1/operations/${encodeURIComponent(operationId)}`));
    if (!['pending', 'running'].includes(op.status)) return op;
  }
  throw new Error(`operation ${operationId} did not finish`);
}

describe('logs hold no memory text', () => {
  it('every route and MCP tool driven with marked text: the marker never appears in the logs', async () => {
    const u = 'log-user';
    const text = (what: string) => `My ${what} is ${MARKER} and I love sailing near ${MARKER}.`;
    const driven = new Set<string>();
    const drive = async (name: string, response: Promise<Response>) => {
      driven.add(name);
      const r = await response;
      expect(r.status, name).toBeLessThan(500);
      return r;
    };

    await drive('http-health-get', api('health'));
    const turns = Array.from({ length: 12 }, (_, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: text(`turn ${i}`),
      name: `n${i}`,
      ...(i === 3 && { toolCalls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: JSON.stringify({ q: MARKER }) } }] }),
    }));
    await drive('http-turns-append', post(`v1/users/${u}/sessions/s1/turns`, { turns }));
    // Refused input quoting the marker: the problem may say what is wrong, the log may not say what was sent.
    await drive('http-turns-append', post(`v1/users/${u}/sessions/s1/turns`, { turns: [{ role: 'user', content: `${MARKER}\u0000` }] }));
    await drive('http-turns-append', post(`v1/users/${u}/sessions/s1/turns`, { turns: [{ role: MARKER, content: MARKER }] }));
    const stored = await json<{ key: string }>(drive('http-memories-create', post(`v1/users/${u}/memories`, { content: text('note'), description: text('description'), goal: text('goal'), source: MARKER, tags: ['t1'], sessionId: 's1' })));
    await drive('http-memories-list', api(`v1/users/${u}/memories?type=${MARKER}&source=${MARKER}`));
    await drive('http-memory-get', api(`v1/users/${u}/memories/${stored.key}?transform=filtered&pattern=${MARKER}`));
    await drive('http-memory-get', api(`v1/users/${u}/memories/${stored.key}?transform=filtered&pattern=(${MARKER}`));
    await drive('http-facts-search', post(`v1/users/${u}/facts/search`, { query: `where is ${MARKER}` }));
    await drive('http-facts-search', post(`v1/users/${u}/facts/search`, { query: `what about ${MARKER}`, mode: 'agent' }));
    await drive('http-insights-list', api(`v1/users/${u}/insights?category=${MARKER}`));
    await drive('http-profile-get', api(`v1/users/${u}/profile`));
    const snapshot = await json<{ snapshotId: string }>(drive('http-snapshots-create', post(`v1/users/${u}/snapshots`, { keys: [stored.key] })));
    await drive('http-snapshot-restore', post(`v1/users/${u}/snapshots/${snapshot.snapshotId}/restore`, { agentId: 'agent-2' }));

    for (const deadline = Date.now() + 60_000; ; await sleep(50)) {
      const status = await json<{ pending: number; lastSeq: number }>(drive('http-session-get', api(`v1/users/${u}/sessions/s1`)));
      if (status.pending === 0 && status.lastSeq > 0) break;
      if (Date.now() > deadline) throw new Error('the projection did not settle');
    }
    await drive('http-context-get', api(`v1/users/${u}/sessions/s1/context`));
    await drive('http-session-events-list', api(`v1/users/${u}/sessions/s1/events`));
    await drive('http-session-messages', api(`v1/users/${u}/sessions/s1/messages`));
    await drive('http-session-messages', api(`v1/users/${u}/sessions/s1/messages?format=raw&agentId=${MARKER}`));
    await drive('http-session-handoffs-create', post(`v1/users/${u}/sessions/s1/handoffs`, { fromAgentId: 'a1', toAgentId: 'a2', note: text('handoff note'), memoryKeys: [stored.key] }));
    const put = (query: string, value: unknown, headers: Record<string, string> = {}) => api(`v1/users/${u}/slots/notes?${query}`, { method: 'PUT', body: JSON.stringify({ value }), headers });
    await drive('http-slot-put', put('scope=private&agentId=a1', { text: text('private slot') }));
    await drive('http-slot-put', put('scope=session&sessionId=s1', text('session slot'), { 'if-match': '"7"' }));
    await drive('http-slot-get', api(`v1/users/${u}/slots/notes?scope=private&agentId=a1`));
    await drive('http-slots-list', api(`v1/users/${u}/slots?sessionId=s1&agentId=a1`));
    await drive('http-session-handoffs-create', post(`v1/users/${u}/sessions/s1/handoffs`, { fromAgentId: 'a1', toAgentId: 'a2', memoryKeys: ['slot:notes'] }));
    await drive('http-context-get', api(`v1/users/${u}/sessions/s1/context?agentId=a2`));
    await drive('http-slot-delete', api(`v1/users/${u}/slots/notes?scope=private&agentId=a1`, { method: 'DELETE' }));
    const ended = await json<{ operationId: string }>(drive('http-session-end', api(`v1/users/${u}/sessions/s1/end`, { method: 'POST' })));
    driven.add('http-operation-get');
    await operationDone(ended.operationId);
    const reflection = await json<{ operationId: string }>(drive('http-reflection-start', api(`v1/users/${u}/reflection`, { method: 'POST' })));
    await operationDone(reflection.operationId);
    await drive('http-memory-delete', api(`v1/users/${u}/memories/${stored.key}`, { method: 'DELETE' }));

    const client = new Client({ name: 'logs-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(host.url.replace(/\/api$/, '/mcp'))));
    const kept = await client.callTool({ name: 'store_memory', arguments: { userId: u, content: text('mcp note') } });
    const key = (JSON.parse((kept.content as { text: string }[])[0]!.text) as { key: string }).key;
    await client.callTool({ name: 'retrieve_memory', arguments: { userId: u, key, transform: 'filtered', pattern: MARKER } });
    await client.callTool({ name: 'search_memory', arguments: { userId: u, query: MARKER } });
    await client.callTool({ name: 'get_context', arguments: { userId: u, sessionId: 's1' } });
    await client.callTool({ name: 'handoff', arguments: { userId: u, sessionId: 's1', fromAgentId: 'a2', toAgentId: 'a1', note: text('mcp handoff') } });
    await client.callTool({ name: 'slot_set', arguments: { userId: u, name: 'plan', value: { step: text('mcp slot') }, expectedVersion: 0 } });
    await client.callTool({ name: 'slot_set', arguments: { userId: u, name: 'plan', value: text('stale'), expectedVersion: 5 } });
    await client.callTool({ name: 'slot_get', arguments: { userId: u, name: 'plan' } });
    await client.close();
    // The same tools through the MCP function's own route (/api/mcp, as in Azure); /mcp above is its local alias.
    driven.add('http-mcp');
    const azure = new Client({ name: 'logs-test-azure', version: '1.0.0' });
    await azure.connect(new StreamableHTTPClientTransport(new URL(`${host.url}/mcp`)));
    await azure.callTool({ name: 'append_turns', arguments: { userId: u, sessionId: 's2', turns: [{ role: 'user', content: text('mcp turn') }] } });
    await azure.callTool({ name: 'search_facts', arguments: { userId: u, query: `where is ${MARKER}` } });
    await azure.callTool({ name: 'search_facts', arguments: { userId: u, query: `what about ${MARKER}`, mode: 'agent' } });
    await azure.callTool({ name: 'get_session', arguments: { userId: u, sessionId: 's2' } });
    const mcpSnapshot = await azure.callTool({ name: 'create_snapshot', arguments: { userId: u, keys: [key] } });
    const mcpSnapshotId = (JSON.parse((mcpSnapshot.content as { text: string }[])[0]!.text) as { snapshotId: string }).snapshotId;
    await azure.callTool({ name: 'restore_snapshot', arguments: { userId: u, snapshotId: mcpSnapshotId, agentId: 'agent-3' } });
    await azure.callTool({ name: 'delete_memory', arguments: { userId: u, key } });
    const mcpEnded = await azure.callTool({ name: 'end_session', arguments: { userId: u, sessionId: 's2' } });
    await operationDone((JSON.parse((mcpEnded.content as { text: string }[])[0]!.text) as { operationId: string }).operationId);
    await azure.callTool({ name: 'append_turns', arguments: { userId: u, sessionId: 's2', turns: [{ role: MARKER, content: `${MARKER}\u0000` }] } });
    await azure.close();
    // The API reference: public, the same for everyone.
    await drive('http-openapi-get', api('openapi.json'));
    await drive('http-docs-get', api('docs'));
    await drive('http-docs-asset-get', api('docs/init.js'));
    await drive('http-docs-asset-get', api(`docs/${MARKER}.js`));

    // Forget last: a session, then the user (the purge report carries ids and counts only).
    const forgotSession = await json<{ operationId: string }>(drive('http-session-forget', api(`v1/users/${u}/sessions/s1`, { method: 'DELETE' })));
    expect((await operationDone(forgotSession.operationId)).status).toBe('completed');
    const forgotUser = await json<{ operationId: string }>(drive('http-user-forget', api(`v1/users/${u}`, { method: 'DELETE' })));
    expect((await operationDone(forgotUser.operationId)).status).toBe('completed');

    // Every HTTP route the app declares was driven (a new route must be added here).
    const routes = host.functions.filter((f) => f.trigger.kind === 'http').map((f) => f.name);
    expect(routes.filter((r) => !driven.has(r))).toEqual([]);
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.filter((line) => line.includes(MARKER))).toEqual([]);
  }, 180_000);
});
