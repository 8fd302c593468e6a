import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { PostgresForgetStore } from '../../shared/adapters/postgres/forget.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeForgetStoreContract } from './forget-store-contract.js';

describeForgetStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  const stores = postgresStores(db);
  return { stores, artifacts: new PostgresArtifactStore(db), forgets: new PostgresForgetStore(db), close: () => stores.close() };
});

const cosmos = useCosmosFake();
describeForgetStoreContract('cosmos (wire fake)', async () => {
  const database = await cosmos();
  const stores = cosmosStores(database, { atomicBatches: false, ownsClient: true });
  return { stores, artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), forgets: new CosmosForgetStore(database), close: () => stores.close() };
});
