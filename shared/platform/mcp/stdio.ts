#!/usr/bin/env node
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createRuntime, useRuntime } from '../composition.js';
import { settings } from '../config.js';
import { withLocalBlobStorage } from '../local-host/azurite.js';
import { createMcpServer } from './server.js';

// `npm run mcp`: the MCP server over stdio on the configured store (PGlite by default). stdout carries the protocol,
// so every diagnostic goes to stderr. Blob Storage: ARTIFACTS_BLOB_* when set, else an embedded Azurite.
// Do not point it at the PGlite folder of a running local host (PGlite is single-process): use the host's /mcp instead.
// No authentication: stdio serves only the process that started it, which already holds the store's credentials, so
// it acts for every user (README, Authentication and authorization). Over HTTP (/mcp) callers authenticate.
const { settings: config, azurite } = await withLocalBlobStorage(settings());
const runtime = await createRuntime(config);
useRuntime(runtime);
const server = createMcpServer(runtime, { via: 'stdio', subject: 'stdio', allUsers: true });
await server.connect(new StdioServerTransport());
console.error(`agent-memory MCP server on stdio (storage: ${runtime.backend})`);

const shutdown = () => {
  server.close().then(
    () =>
      runtime
        .close()
        .then(() => azurite?.stop())
        .then(() => process.exit(0)),
    () => process.exit(1),
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
process.stdin.once('end', shutdown);
