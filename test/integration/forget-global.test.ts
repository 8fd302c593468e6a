import { describe, expect, it } from 'vitest';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { PostgresArtifactStore } from '../../shared/adapters/postgres/artifacts.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { PostgresForgetStore } from '../../shared/adapters/postgres/forget.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import type { ArtifactStore } from '../../shared/application/artifact-ports.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import { GLOBAL_OWNER } from '../../shared/contracts/artifacts.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { artifact } from './artifact-store-contract.js';

const cosmos = useCosmosFake();
const NOW = new Date('2026-01-05T12:00:00.000Z');

const backends: [string, () => Promise<{ artifacts: ArtifactStore; forgets: ForgetStore; close: () => Promise<void> }>][] = [
  [
    'postgres (PGlite)',
    async () => {
      const db = await openPglite(undefined);
      await migrate(db);
      return { artifacts: new PostgresArtifactStore(db), forgets: new PostgresForgetStore(db), close: () => db.close() };
    },
  ],
  [
    'cosmos (wire fake)',
    async () => {
      const database = await cosmos();
      return { artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), forgets: new CosmosForgetStore(database), close: async () => database.client.dispose() };
    },
  ],
];

describe.each(backends)('forgetting a user and global memory: %s', (_name, open) => {
  it("deletes the user's private, session and user artifacts, and no global one (global memory is no user's data)", async () => {
    const { artifacts, forgets, close } = await open();
    try {
      const user = 'forgotten';
      const mine = [
        artifact(user, 'p', { scope: 'private', agentId: 'researcher', storage: { kind: 'blob', blobName: `${user}/p/h` } }),
        artifact(user, 's', { scope: 'session', sessionId: 's1' }),
        artifact(user, 'u', { scope: 'user' }),
      ];
      const global = artifact(GLOBAL_OWNER, 'style', { scope: 'global', storage: { kind: 'blob', blobName: `${GLOBAL_OWNER}/style/h` } });
      for (const record of [...mine, global]) await artifacts.putIfAbsent(record);

      expect(await forgets.blobNames({ userId: user })).toEqual([`${user}/p/h`]);
      await forgets.markForgetting({ userId: user }, 'forget', NOW);
      await forgets.purge({ userId: user });
      for (const record of mine) expect(await artifacts.get(user, record.key, NOW), record.key).toBeNull();
      expect(Object.values(await forgets.scan({ userId: user })).reduce((a, b) => a + b, 0)).toBe(0);
      await forgets.clearForgetting({ userId: user }, 'forget');

      expect(await artifacts.get(GLOBAL_OWNER, 'style', NOW)).toEqual(global);
      expect((await artifacts.list({ userId: 'someone-else' }, {}, 10, NOW)).items.map((r) => r.key)).toEqual(['style']);
    } finally {
      await close();
    }
  }, 60_000);
});
