import type { HttpResponseInit } from '@azure/functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as mcpHandler } from '../../../functions/http-mcp.js';
import type { OrchestrationClient } from '../../../shared/application/operation-ports.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../../shared/platform/durable.js';
import { MCP_TOOLS } from '../../support/mcp-tools.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';

// The Azure MCP function (functions/http-mcp.ts) driven through @azure/functions' own request types, as the Functions
// host calls it: streamable HTTP, stateless, JSON answers.

let runtime: Runtime;
const started: string[] = [];
const orchestrations: OrchestrationClient = {
  start: async (_name, instanceId) => (started.push(instanceId), { instanceId, started: true }),
  purge: async () => 0,
  status: async () => null,
};
beforeAll(async () => {
  runtime = await memoryRuntime();
  useLocalOrchestrationClient(orchestrations);
});
afterAll(async () => {
  useLocalOrchestrationClient(undefined);
  await runtime.close();
});

const ACCEPT = { accept: 'application/json, text/event-stream' };
let id = 0;
const rpc = (method: string, params: object = {}, headers: Record<string, string> = ACCEPT) =>
  mcpHandler(request('POST', 'mcp', { body: { jsonrpc: '2.0', id: ++id, method, params }, headers }), context('http-mcp'));
const result = (res: HttpResponseInit) => (JSON.parse(String(res.body)) as { result: { tools?: { name: string }[]; content?: { text: string }[]; isError?: boolean } }).result;
const header = (res: HttpResponseInit, name: string) => new Headers(res.headers as ConstructorParameters<typeof Headers>[0]).get(name);

describe('http-mcp: MCP over streamable HTTP as an Azure Function', () => {
  it('initialize, then tools/list lists every tool', async () => {
    const init = await rpc('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } });
    expect(init.status).toBe(200);
    expect(header(init, 'content-type')).toMatch(/^application\/json/);
    expect(header(init, 'mcp-session-id')).toBeNull(); // stateless
    const list = await rpc('tools/list');
    expect(list.status).toBe(200);
    expect(result(list).tools!.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
  });

  it('tools/call runs the use cases: append_turns, then end_session through the function\'s orchestration client', async () => {
    const key = { userId: 'fn-mcp', sessionId: 's1' };
    const appended = result(await rpc('tools/call', { name: 'append_turns', arguments: { ...key, turns: [{ role: 'user', content: 'hello', turnId: 't1' }] } }));
    expect(JSON.parse(appended.content![0]!.text)).toEqual({ accepted: [{ turnId: 't1', seq: 1 }] });
    const ended = result(await rpc('tools/call', { name: 'end_session', arguments: key }));
    expect(JSON.parse(ended.content![0]!.text)).toEqual({ operationId: 'session-end:fn-mcp:s1' });
    expect(started).toContain('session-end:fn-mcp:s1');
    const refused = result(await rpc('tools/call', { name: 'get_session', arguments: { userId: 'fn-mcp', sessionId: 'nope' } }));
    expect(refused.isError).toBe(true);
    expect(refused.content![0]!.text).toMatch(/^not_found:/);
  });

  it('a notification is 202 without a body', async () => {
    const res = await mcpHandler(request('POST', 'mcp', { body: { jsonrpc: '2.0', method: 'notifications/initialized' }, headers: ACCEPT }), context('http-mcp'));
    expect(res.status).toBe(202);
    expect(res.body).toBeUndefined();
  });

  it('refusals are problem+json: GET and DELETE 405 (stateless), a wrong Accept 406, bad JSON-RPC 400, a non-JSON body 415', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await mcpHandler(request(method, 'mcp', { headers: ACCEPT }), context('http-mcp'));
      expect(res.status, method).toBe(405);
      expect(json(res).code).toBe('method_not_allowed');
      expect(header(res, 'allow')).toBe('POST');
    }
    const notAccepted = await rpc('tools/list', {}, { accept: 'text/html' });
    expect(notAccepted.status).toBe(406);
    expect(json(notAccepted).code).toBe('not_acceptable');
    expect(header(notAccepted, 'content-type')).toBe('application/problem+json');
    const invalid = await mcpHandler(request('POST', 'mcp', { body: { hello: 'world' }, headers: ACCEPT }), context('http-mcp'));
    expect(invalid.status).toBe(400);
    expect(json(invalid).code).toBe('validation_failed');
    const text = await mcpHandler(request('POST', 'mcp', { body: 'x', headers: { ...ACCEPT, 'content-type': 'text/plain' } }), context('http-mcp'));
    expect(text.status).toBe(415);
  });
});
