import { CosmosApiKeyStore } from '../../shared/adapters/cosmos/api-keys.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { PostgresApiKeyStore } from '../../shared/adapters/postgres/api-keys.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeApiKeyStoreContract } from './api-key-store-contract.js';

describeApiKeyStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { store: new PostgresApiKeyStore(db), close: () => db.close() };
});

const openFakeDatabase = useCosmosFake();

describeApiKeyStoreContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { store: new CosmosApiKeyStore(database.container(COSMOS_CONTAINERS.apiKeys.name)), close: async () => database.client.dispose() };
});
