import type { Container } from '@azure/cosmos';
import { conflict } from '../../domain/errors.js';
import type { ApiKeyRecord, ApiKeyStore } from '../../application/auth.js';
import { statusOf } from './containers.js';

type Doc = ApiKeyRecord & { id: string };

const toRecord = ({ keyId, hash, userId, agentId, label, createdAt, revokedAt }: Doc): ApiKeyRecord => ({
  keyId,
  hash,
  ...(userId !== undefined && { userId }),
  ...(agentId !== undefined && { agentId }),
  ...(label !== undefined && { label }),
  createdAt,
  ...(revokedAt !== undefined && { revokedAt }),
});

/** API keys in the `apiKeys` container: one item per key, id = partition key = keyId, so a lookup is a point read. */
export class CosmosApiKeyStore implements ApiKeyStore {
  constructor(private readonly container: Container) {}

  async create(record: ApiKeyRecord): Promise<void> {
    try {
      await this.container.items.create<Doc>({ ...record, id: record.keyId });
    } catch (error) {
      if (statusOf(error) === 409) throw conflict(`API key ${record.keyId} exists`);
      throw error;
    }
  }

  async get(keyId: string): Promise<ApiKeyRecord | null> {
    try {
      const { resource } = await this.container.item(keyId, keyId).read<Doc>();
      return resource ? toRecord(resource) : null;
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  async revoke(keyId: string, at: Date): Promise<boolean> {
    const { resource, etag } = await this.container
      .item(keyId, keyId)
      .read<Doc>()
      .catch((error: unknown) => {
        if (statusOf(error) === 404) return { resource: undefined, etag: undefined };
        throw error;
      });
    if (!resource) return false;
    if (resource.revokedAt !== undefined) return true;
    await this.container.item(keyId, keyId).replace<Doc>({ ...resource, revokedAt: at.toISOString() }, etag ? { accessCondition: { type: 'IfMatch', condition: etag } } : {});
    return true;
  }

  async list(): Promise<ApiKeyRecord[]> {
    const { resources } = await this.container.items.query<Doc>('SELECT * FROM c ORDER BY c.createdAt DESC').fetchAll();
    return resources.map(toRecord);
  }
}
