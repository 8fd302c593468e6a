import { BlobServiceClient, type ContainerClient } from '@azure/storage-blob';
import { DefaultAzureCredential, type TokenCredential } from '@azure/identity';
import type { BlobStore } from '../../application/artifact-ports.js';
import { MemoryError } from '../../domain/errors.js';

export interface BlobConnection {
  container: string;
  /** Azurite / development: a connection string with the account key. */
  connectionString?: string;
  /** Azure: the account's blob endpoint, reached with the managed identity (Storage Blob Data Contributor). */
  endpoint?: string;
  credential?: TokenCredential;
}

const statusOf = (error: unknown) => (typeof error === 'object' && error !== null && 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : undefined);

/** Blob Storage for large artifact contents: block blobs in one container, named by the caller. */
export class AzureBlobStore implements BlobStore {
  constructor(readonly container: ContainerClient) {}

  async put(name: string, content: Buffer): Promise<void> {
    await this.container.getBlockBlobClient(name).uploadData(content, {
      blobHTTPHeaders: { blobContentType: 'text/plain; charset=utf-8' },
      // Large contents go up in parallel blocks.
      blockSize: 4 * 1024 * 1024,
      concurrency: 4,
    });
  }

  async get(name: string): Promise<Buffer> {
    try {
      return await this.container.getBlobClient(name).downloadToBuffer();
    } catch (error) {
      if (statusOf(error) === 404) throw new MemoryError('not_found', 'The artifact content was not found in Blob Storage');
      throw error;
    }
  }

  async delete(name: string): Promise<void> {
    await this.container.getBlobClient(name).deleteIfExists();
  }

  async existing(query: { prefix: string } | { names: readonly string[] }): Promise<string[]> {
    if ('names' in query) {
      const found = await Promise.all(query.names.map(async (name) => ((await this.container.getBlobClient(name).exists()) ? [name] : [])));
      return found.flat();
    }
    const names: string[] = [];
    for await (const blob of this.container.listBlobsFlat({ prefix: query.prefix })) names.push(blob.name);
    return names;
  }
}

export function openBlobStore(connection: BlobConnection): AzureBlobStore {
  const service = connection.connectionString
    ? BlobServiceClient.fromConnectionString(connection.connectionString)
    : new BlobServiceClient(connection.endpoint ?? '', connection.credential ?? new DefaultAzureCredential());
  if (!connection.connectionString && !connection.endpoint) throw new Error('Blob Storage needs an endpoint or a connection string');
  return new AzureBlobStore(service.getContainerClient(connection.container));
}

/** Creates the container when it is missing: for Azurite and tests (in Azure, Bicep creates it). */
export async function ensureBlobContainer(store: AzureBlobStore): Promise<void> {
  await store.container.createIfNotExists();
}

/** The well-known Azurite development account (public, documented by Microsoft; not a secret). */
export const azuriteConnectionString = (blobEndpoint: string) =>
  `DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=${blobEndpoint}/devstoreaccount1;`;
