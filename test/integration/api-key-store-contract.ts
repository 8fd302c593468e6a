import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, verifyApiKey, type ApiKeyStore } from '../../shared/application/auth.js';
import { MemoryError } from '../../shared/domain/errors.js';

const at = new Date('2026-01-05T10:00:00.000Z');

/** What every API key store must do; run against PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeApiKeyStoreContract(name: string, open: () => Promise<{ store: ApiKeyStore; close: () => Promise<void> }>) {
  describe(`API key store contract: ${name}`, () => {
    let store: ApiKeyStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    }, 60_000);
    afterAll(() => close?.());

    it('keeps only the hash, and the key verifies to its user and agent', async () => {
      const { key, record } = await createApiKey(store, { userId: 'alice', agentId: 'planner', label: 'laptop' }, at);
      const stored = await store.get(record.keyId);
      expect(stored).toEqual({ keyId: record.keyId, hash: record.hash, userId: 'alice', agentId: 'planner', label: 'laptop', createdAt: at.toISOString() });
      expect(JSON.stringify(stored)).not.toContain(key.slice(-43));
      expect(await verifyApiKey(store, key)).toEqual({ via: 'apikey', subject: `key:${record.keyId}`, allUsers: false, userId: 'alice', agentId: 'planner' });
    });

    it('a service key (no user) verifies to all users', async () => {
      const { key, record } = await createApiKey(store, {}, at);
      expect(await verifyApiKey(store, key)).toEqual({ via: 'apikey', subject: `key:${record.keyId}`, allUsers: true });
    });

    it('refuses a key whose secret differs, an unknown key and a malformed one', async () => {
      const { key } = await createApiKey(store, { userId: 'bob' }, at);
      const last = key.at(-1) === 'A' ? 'B' : 'A';
      expect(await verifyApiKey(store, key.slice(0, -1) + last)).toBeNull();
      expect(await verifyApiKey(store, `amk_000000000000_${'x'.repeat(43)}`)).toBeNull();
      expect(await verifyApiKey(store, 'not-a-key')).toBeNull();
    });

    it('revokes: the key stops working, the record stays for audit, revoking twice keeps the first time', async () => {
      const { key, record } = await createApiKey(store, { userId: 'carol' }, at);
      const later = new Date(at.getTime() + 60_000);
      expect(await store.revoke(record.keyId, later)).toBe(true);
      expect(await store.revoke(record.keyId, new Date(later.getTime() + 60_000))).toBe(true);
      expect(await verifyApiKey(store, key)).toBeNull();
      expect((await store.get(record.keyId))?.revokedAt).toBe(later.toISOString());
      expect(await store.revoke('ffffffffffff', later)).toBe(false);
    });

    it('refuses a second key under a taken keyId, and lists every key', async () => {
      const { record } = await createApiKey(store, { userId: 'dave' }, at);
      await expect(store.create({ ...record, hash: '0'.repeat(64) })).rejects.toSatisfy((e: unknown) => e instanceof MemoryError && e.code === 'conflict');
      const listed = await store.list();
      expect(listed.map((k) => k.keyId)).toContain(record.keyId);
      expect(listed.find((k) => k.keyId === record.keyId)?.hash).toBe(record.hash);
    });
  });
}
