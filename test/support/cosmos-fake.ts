import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Database } from '@azure/cosmos';
import { createHttpsServer } from '@vercel/cosmosdb-server';
import { afterAll } from 'vitest';
import { ensureContainers, openCosmos } from '../../shared/adapters/cosmos/client.js';

/**
 * The Cosmos DB wire fake for a test file: one in-process server, started on first use and closed after the file;
 * every call opens a fresh database with all containers of `containerDefinitions` (the fake accepts their policies).
 */
export function useCosmosFake(dimensions = 3): () => Promise<Database> {
  let server: ReturnType<typeof createHttpsServer> | undefined;
  let endpoint: Promise<string> | undefined;
  let databases = 0;
  afterAll(async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server!.close(() => resolve()));
  });
  const start = () =>
    (endpoint ??= new Promise((resolve, reject) => {
      server = createHttpsServer({ keepAlive: true });
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(`https://127.0.0.1:${(server!.address() as AddressInfo).port}/`));
    }));
  return async () => {
    const { database } = await openCosmos({
      endpoint: await start(),
      key: 'fake-key',
      databaseName: `agent_memory_${++databases}`,
      clientOptions: { agent: new https.Agent({ rejectUnauthorized: false, keepAlive: true }), connectionPolicy: { enableEndpointDiscovery: false } },
    });
    await ensureContainers(database, dimensions);
    return database;
  };
}
