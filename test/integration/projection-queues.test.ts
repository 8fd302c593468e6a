import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosProjectionQueue } from '../../shared/adapters/cosmos/projection-queue.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { PostgresProjectionQueue } from '../../shared/adapters/postgres/projection-queue.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { describeProjectionQueueContract } from './projection-queue-contract.js';

describeProjectionQueueContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return { queue: new PostgresProjectionQueue(db), close: () => db.close() };
});

const openFakeDatabase = useCosmosFake();

describeProjectionQueueContract('cosmos (wire fake)', async () => {
  const database = await openFakeDatabase();
  return { queue: new CosmosProjectionQueue(database.container(COSMOS_CONTAINERS.projectionQueue.name)), close: async () => database.client.dispose() };
});
