import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../shared/application/auth.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';
import { MCP_TOOLS } from '../support/mcp-tools.js';

// The local host with AUTH_MODE=apikey, over real HTTP: the REST routes and /mcp both want a key.

describe('local host with API keys (AUTH_MODE=apikey)', () => {
  let host: Awaited<ReturnType<typeof startLocalHost>>;
  let dataDir: string;
  let aliceKey: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ams-auth-'));
    process.env.MEMORY_DATA_DIR = join(dataDir, 'pglite');
    process.env.AUTH_MODE = 'apikey';
    host = await startLocalHost({ port: 0, timers: false });
    aliceKey = (await createApiKey(host.runtime.apiKeys, { userId: 'alice' }, new Date())).key;
  }, 120_000);
  afterAll(async () => {
    await host?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('answers 401 problem+json with WWW-Authenticate without a key, 403 on another user, 200 with its own', async () => {
    const none = await fetch(`${host.url}/v1/users/alice/insights`);
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toBe('application/problem+json');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await none.json()) as { code: string }).code).toBe('unauthorized');
    const headers = { authorization: `Bearer ${aliceKey}` };
    expect((await fetch(`${host.url}/v1/users/bob/insights`, { headers })).status).toBe(403);
    expect((await fetch(`${host.url}/v1/users/alice/insights`, { headers })).status).toBe(200);
    expect((await fetch(`${host.url}/health`)).status).toBe(200);
  });

  it('/mcp refuses a request without a key (401) before any MCP handling', async () => {
    const res = await fetch(host.url.replace(/\/api$/, '/mcp'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('/mcp tools act only on the key\'s user', async () => {
    const client = new Client({ name: 'auth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(host.url.replace(/\/api$/, '/mcp')), { requestInit: { headers: { authorization: `Bearer ${aliceKey}` } } }));
    try {
      const own = (await client.callTool({ name: 'store_memory', arguments: { userId: 'alice', content: 'a note' } })) as CallToolResult;
      expect(own.isError).toBeFalsy();
      for (const [name, args] of [
        ['store_memory', { userId: 'bob', content: 'an intrusion' }],
        ['search_memory', { userId: 'bob', query: 'note' }],
        ['retrieve_memory', { userId: 'bob', key: 'k1' }],
        ['get_context', { userId: 'bob', sessionId: 's1' }],
      ] as const) {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        expect(result.isError, name).toBe(true);
        expect((result.content[0] as { text: string }).text, name).toMatch(/^forbidden:/);
      }
    } finally {
      await client.close();
    }
  });

  it('/api/mcp (the Azure MCP function) wants a key like the REST routes: 401 without, every tool with alice\'s key, forbidden on bob', async () => {
    const url = `${host.url}/mcp`;
    const none = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(none.status).toBe(401);
    expect(none.headers.get('content-type')).toBe('application/problem+json');
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await fetch(url, { headers: { authorization: 'Bearer amk_000000000000_nope' } })).status).toBe(401);

    const client = new Client({ name: 'azure-mcp-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${aliceKey}` } } }));
    try {
      expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
      const appended = (await client.callTool({ name: 'append_turns', arguments: { userId: 'alice', sessionId: 'mcp-s1', turns: [{ role: 'user', content: 'hello over MCP' }] } })) as CallToolResult;
      expect(appended.isError).toBeFalsy();
      const intrusion = (await client.callTool({ name: 'append_turns', arguments: { userId: 'bob', sessionId: 's1', turns: [{ role: 'user', content: 'an intrusion' }] } })) as CallToolResult;
      expect((intrusion.content[0] as { text: string }).text).toMatch(/^forbidden:/);
    } finally {
      await client.close();
    }
  });

  it('the API reference is public: /api/openapi.json and /api/docs answer without a key', async () => {
    expect((await fetch(`${host.url}/openapi.json`)).status).toBe(200);
    expect((await fetch(`${host.url}/docs`)).status).toBe(200);
    expect((await fetch(`${host.url}/docs/swagger-ui-bundle.js`)).status).toBe(200);
  });
});
