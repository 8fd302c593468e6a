import { CosmosClient, type CosmosClientOptions, type Database } from '@azure/cosmos';
import { DefaultAzureCredential, type TokenCredential } from '@azure/identity';
import { containerDefinitions } from './containers.js';

export interface CosmosConnection {
  endpoint: string;
  databaseName: string;
  /** Account key (emulator, tests). Without it the client authenticates with Entra ID. */
  key?: string;
  /** Entra ID credential; defaults to DefaultAzureCredential (the managed identity in Azure). */
  credential?: TokenCredential;
  /** Extra client options, e.g. the TLS agent and endpoint discovery switch a local emulator or wire fake needs. */
  clientOptions?: Omit<CosmosClientOptions, 'endpoint' | 'key' | 'aadCredentials'>;
}

/** Opens a client and points at the database; creates nothing (production resources come from Bicep). */
export async function openCosmos({ endpoint, databaseName, key, credential, clientOptions }: CosmosConnection): Promise<{ client: CosmosClient; database: Database }> {
  const auth = key ? { key } : { aadCredentials: credential ?? new DefaultAzureCredential() };
  const client = new CosmosClient({ ...clientOptions, endpoint, ...auth });
  return { client, database: client.database(databaseName) };
}

/**
 * Creates the database and every container of `containerDefinitions` that is missing. For tests and a first local
 * run against the emulator; in Azure the containers come from Bicep and the app's identity cannot create them.
 * Existing containers are left as they are (their policies are not compared or updated).
 */
export async function ensureContainers(database: Database, dimensions: number): Promise<void> {
  await database.client.databases.createIfNotExists({ id: database.id });
  for (const definition of containerDefinitions(dimensions)) {
    await database.containers.createIfNotExists(definition);
  }
}
