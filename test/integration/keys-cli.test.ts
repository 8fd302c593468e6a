import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresApiKeyStore } from '../../shared/adapters/postgres/api-keys.js';
import { openPglite, type Db } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { verifyApiKey } from '../../shared/application/auth.js';
import { keysCommand } from '../../shared/platform/keys.js';

describe('npm run keys', () => {
  let db: Db;
  let store: PostgresApiKeyStore;
  beforeAll(async () => {
    db = await openPglite(undefined);
    await migrate(db);
    store = new PostgresApiKeyStore(db);
  });
  afterAll(() => db?.close());

  it('creates a user key, prints it once, lists it without the key, and revokes it', async () => {
    const created = await keysCommand(store, ['create', '--user', 'alice', '--agent', 'planner', '--label', 'laptop']);
    const key = created.at(-1)!;
    const keyId = /^amk_([0-9a-f]{12})_/.exec(key)![1]!;
    expect(created[0]).toBe(`Created key ${keyId} for user alice, agent planner.`);
    expect(await verifyApiKey(store, key)).toMatchObject({ allUsers: false, userId: 'alice', agentId: 'planner' });
    const listed = await keysCommand(store, ['list']);
    expect(listed.join('\n')).toContain(`${keyId}  user alice agent planner`);
    expect(listed.join('\n')).not.toContain(key.slice(-43));
    expect(await keysCommand(store, ['revoke', keyId])).toEqual([`Revoked key ${keyId}.`]);
    expect(await verifyApiKey(store, key)).toBeNull();
    expect((await keysCommand(store, ['list'])).join('\n')).toContain('REVOKED');
  });

  it('creates a service key with --all-users', async () => {
    const key = (await keysCommand(store, ['create', '--all-users'])).at(-1)!;
    expect(await verifyApiKey(store, key)).toMatchObject({ allUsers: true });
  });

  it('refuses unclear or malformed requests', async () => {
    await expect(keysCommand(store, ['create'])).rejects.toThrow(/--user/);
    await expect(keysCommand(store, ['create', '--user', 'a', '--all-users'])).rejects.toThrow(/exactly one/);
    await expect(keysCommand(store, ['create', '--all-users', '--agent', 'x'])).rejects.toThrow(/--agent/);
    await expect(keysCommand(store, ['create', '--user', 'not valid'])).rejects.toThrow(/--user must be an id/);
    await expect(keysCommand(store, ['revoke', 'ffffffffffff'])).rejects.toThrow(/No key/);
    await expect(keysCommand(store, ['rotate'])).rejects.toThrow(/Usage/);
  });
});
