import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createHttpsServer } from '@vercel/cosmosdb-server';
import { afterAll } from 'vitest';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { ensureContainers, openCosmos } from '../../shared/adapters/cosmos/client.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { describeArtifactStoreContract } from './artifact-store-contract.js';

describeArtifactStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { store: new PostgresArtifactStore(db), close: () => db.close() };
});

let server: ReturnType<typeof createHttpsServer> | undefined;
afterAll(async () => {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server!.close(() => resolve()));
});

describeArtifactStoreContract('cosmos (wire fake)', async () => {
  server = createHttpsServer({ keepAlive: true });
  const endpoint = await new Promise<string>((resolve, reject) => {
    server!.once('error', reject);
    server!.listen(0, '127.0.0.1', () => resolve(`https://127.0.0.1:${(server!.address() as AddressInfo).port}/`));
  });
  const { database } = await openCosmos({
    endpoint,
    key: 'fake-key',
    databaseName: 'agent_memory_artifacts',
    clientOptions: { agent: new https.Agent({ rejectUnauthorized: false, keepAlive: true }), connectionPolicy: { enableEndpointDiscovery: false } },
  });
  await ensureContainers(database, 3);
  return { store: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), close: async () => database.client.dispose() };
});
