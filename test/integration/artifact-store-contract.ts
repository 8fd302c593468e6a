import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../shared/application/artifact-ports.js';
import type { ArtifactRecord } from '../../shared/contracts/artifacts.js';

let counter = 0;
const freshUser = () => `art-user-${++counter}-${Date.now()}`;

export function artifact(userId: string, key: string, overrides: Partial<ArtifactRecord> = {}): ArtifactRecord {
  return {
    userId,
    key,
    type: 'tool_output',
    tags: [],
    description: `description of ${key}`,
    contentKind: 'text',
    tokens: 10,
    bytes: 20,
    contentHash: `hash-${key}`,
    createdAt: '2026-01-05T10:00:00.000Z',
    storage: { kind: 'inline', content: `content of ${key}` },
    ...overrides,
  };
}

/** The behaviour every artifact store adapter shares; run against PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeArtifactStoreContract(name: string, open: () => Promise<{ store: ArtifactStore; close: () => Promise<void> }>) {
  describe(`artifact store contract: ${name}`, () => {
    let store: ArtifactStore;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ store, close } = await open());
    }, 60_000);
    afterAll(() => close?.());

    it('stores and reads back inline and blob-referenced records exactly', async () => {
      const user = freshUser();
      const inline = artifact(user, 'a', { source: 'web_fetch', sessionId: 's1', agentId: 'researcher', turnId: 't1', tags: ['web', 'q1'] });
      const blob = artifact(user, 'b', { storage: { kind: 'blob', blobName: `${user}/b/hash` }, restoredFrom: { snapshotId: 'snap-1', key: 'a' } });
      expect(await store.putIfAbsent(inline)).toEqual({ record: inline, created: true });
      expect(await store.putIfAbsent(blob)).toEqual({ record: blob, created: true });
      expect(await store.get(user, 'a')).toEqual(inline);
      expect(await store.get(user, 'b')).toEqual(blob);
      expect(await store.get(user, 'missing')).toBeNull();
    });

    it('putIfAbsent keeps the first record of a key and says so', async () => {
      const user = freshUser();
      const first = artifact(user, 'k');
      await store.putIfAbsent(first);
      const second = await store.putIfAbsent(artifact(user, 'k', { contentHash: 'other', storage: { kind: 'inline', content: 'other' } }));
      expect(second).toEqual({ record: first, created: false });
    });

    it("never shows one user's artifacts to another", async () => {
      const alice = freshUser();
      const bob = freshUser();
      await store.putIfAbsent(artifact(alice, 'secret', { description: 'alice secret plans' }));
      expect(await store.get(bob, 'secret')).toBeNull();
      expect((await store.list(bob, {}, 10)).items).toEqual([]);
      expect(await store.search(bob, ['secret'], 10)).toEqual([]);
      expect(await store.delete(bob, 'secret')).toBeNull();
      expect(await store.get(alice, 'secret')).not.toBeNull();
    });

    it('lists newest first with filters and pages with a cursor', async () => {
      const user = freshUser();
      const at = (minute: number) => `2026-01-05T10:${String(minute).padStart(2, '0')}:00.000Z`;
      for (let i = 0; i < 7; i++) {
        await store.putIfAbsent(
          artifact(user, `k${i}`, {
            createdAt: at(i),
            type: i % 2 ? 'web_content' : 'tool_output',
            source: i < 3 ? 'shell' : 'browser',
            tags: i % 3 === 0 ? ['x', 'y'] : ['x'],
            sessionId: i < 4 ? 's1' : 's2',
            ...(i === 6 && { agentId: 'sub' }),
          }),
        );
      }
      const keys = (page: { items: ArtifactRecord[] }) => page.items.map((r) => r.key);
      const first = await store.list(user, {}, 3);
      expect(keys(first)).toEqual(['k6', 'k5', 'k4']);
      expect(first.nextCursor).not.toBeNull();
      const second = await store.list(user, {}, 3, first.nextCursor!);
      expect(keys(second)).toEqual(['k3', 'k2', 'k1']);
      const third = await store.list(user, {}, 3, second.nextCursor!);
      expect(keys(third)).toEqual(['k0']);
      expect(third.nextCursor).toBeNull();

      expect(keys(await store.list(user, { type: 'web_content' }, 10))).toEqual(['k5', 'k3', 'k1']);
      expect(keys(await store.list(user, { source: 'shell' }, 10))).toEqual(['k2', 'k1', 'k0']);
      expect(keys(await store.list(user, { tags: ['x', 'y'] }, 10))).toEqual(['k6', 'k3', 'k0']);
      expect(keys(await store.list(user, { sessionId: 's2' }, 10))).toEqual(['k6', 'k5', 'k4']);
      expect(keys(await store.list(user, { agentId: 'sub' }, 10))).toEqual(['k6']);
      expect(keys(await store.list(user, { from: at(2), to: at(4) }, 10))).toEqual(['k4', 'k3', 'k2']);
    });

    it('deletes and returns the removed record', async () => {
      const user = freshUser();
      const record = artifact(user, 'gone');
      await store.putIfAbsent(record);
      expect(await store.delete(user, 'gone')).toEqual(record);
      expect(await store.get(user, 'gone')).toBeNull();
      expect(await store.delete(user, 'gone')).toBeNull();
    });

    it('searches descriptions and inline contents, case-insensitively, for any term', async () => {
      const user = freshUser();
      await store.putIfAbsent(artifact(user, 'db', { description: 'Postgres connection settings', storage: { kind: 'inline', content: 'host=db.internal port=5432' } }));
      await store.putIfAbsent(artifact(user, 'log', { description: 'npm install output', storage: { kind: 'inline', content: 'added 12 packages' } }));
      await store.putIfAbsent(artifact(user, 'big', { description: 'A large report', storage: { kind: 'blob', blobName: 'x' } }));
      expect((await store.search(user, ['postgres'], 10)).map((r) => r.key)).toEqual(['db']);
      expect((await store.search(user, ['db.internal'], 10)).map((r) => r.key)).toEqual(['db']);
      expect((await store.search(user, ['packages', 'report'], 10)).map((r) => r.key).sort()).toEqual(['big', 'log']);
      expect(await store.search(user, ['nothing-like-this'], 10)).toEqual([]);
    });

    it('keeps snapshots per user', async () => {
      const user = freshUser();
      const snapshot = { userId: user, snapshotId: 'snap-1', keys: ['a', 'b'], agentId: 'sub', createdAt: '2026-01-05T10:00:00.000Z' };
      await store.putSnapshot(snapshot);
      expect(await store.getSnapshot(user, 'snap-1')).toEqual(snapshot);
      expect(await store.getSnapshot(freshUser(), 'snap-1')).toBeNull();
      // Snapshots are not artifacts.
      expect((await store.list(user, {}, 10)).items).toEqual([]);
    });
  });
}
