import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosSlotStore } from '../../shared/adapters/cosmos/slots.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresSlotStore } from '../../shared/adapters/postgres/slots.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeSlotStoreContract } from './slot-store-contract.js';

describeSlotStoreContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { store: new PostgresSlotStore(db), close: () => db.close() };
});

const openFakeDatabase = useCosmosFake();

describeSlotStoreContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { store: new CosmosSlotStore(database.container(COSMOS_CONTAINERS.slots.name)), close: async () => database.client.dispose() };
});
