import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeArtifactStoreContract } from './artifact-store-contract.js';

describeArtifactStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { store: new PostgresArtifactStore(db), close: () => db.close() };
});

const openFakeDatabase = useCosmosFake();

describeArtifactStoreContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { store: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), close: async () => database.client.dispose() };
});
