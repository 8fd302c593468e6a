import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalHost } from '../../shared/platform/local-host/host.js';
import { MCP_TOOLS } from '../support/mcp-tools.js';

const text = (r: unknown, i = 0) => ((r as CallToolResult).content[i] as { text: string }).text;

/** Stores a large output, retrieves it in full, and finds it: through whichever transport the client has. */
async function roundTrip(client: Client, userId: string) {
  const content = JSON.stringify({ items: Array.from({ length: 5000 }, (_, i) => ({ id: i, label: `item ${i}` })) });
  const stored = JSON.parse(text(await client.callTool({ name: 'store_memory', arguments: { userId, content, source: 'catalog_api' } }))) as { key: string; storage: string };
  expect(stored.storage).toBe('blob');
  expect(text(await client.callTool({ name: 'retrieve_memory', arguments: { userId, key: stored.key } }))).toBe(content);
  const hits = JSON.parse(text(await client.callTool({ name: 'search_memory', arguments: { userId, query: 'catalog_api items' } }))) as { hits: { key: string }[] };
  expect(hits.hits.map((h) => h.key)).toContain(stored.key);
}

describe('MCP over streamable HTTP on the local host (/mcp)', () => {
  let host: Awaited<ReturnType<typeof startLocalHost>>;
  let dataDir: string;
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'ams-mcp-'));
    process.env.MEMORY_DATA_DIR = join(dataDir, 'pglite');
    host = await startLocalHost({ port: 0 });
  }, 120_000);
  afterAll(async () => {
    await host?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves the tools through the SDK client, with large contents in the embedded Azurite', async () => {
    const client = new Client({ name: 'http-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(host.url.replace(/\/api$/, '/mcp'))));
    expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(MCP_TOOLS);
    await roundTrip(client, 'mcp-http-user');
    await client.close();
  });
});

describe('MCP over stdio (npm run mcp)', () => {
  it('serves the tools to a client that spawns it', async () => {
    const transport = new StdioClientTransport({
      command: 'node_modules/.bin/tsx',
      args: ['shared/platform/mcp/stdio.ts'],
      env: { ...(process.env as Record<string, string>), MEMORY_DATA_DIR: 'memory://' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    await client.connect(transport);
    await roundTrip(client, 'mcp-stdio-user');
    await client.close();
  }, 120_000);
});
