import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../shared/application/artifact-ports.js';
import { GLOBAL_OWNER, type ArtifactRecord } from '../../shared/contracts/artifacts.js';
import { Scope } from '../../shared/contracts/scopes.js';
import { canSee, type Viewer } from '../../shared/domain/scopes.js';

let counter = 0;
const freshUser = () => `art-user-${++counter}-${Date.now()}`;
/** The readers' time in the tests that do not look at expiry: after every createdAt below. */
const NOW = new Date('2026-01-05T12:00:00.000Z');

export function artifact(userId: string, key: string, overrides: Partial<ArtifactRecord> = {}): ArtifactRecord {
  return {
    userId,
    key,
    scope: 'user',
    type: 'tool_output',
    tags: [],
    description: `description of ${key}`,
    contentKind: 'text',
    tokens: 10,
    bytes: 20,
    contentHash: `hash-${key}`,
    createdAt: '2026-01-05T10:00:00.000Z',
    expiresAt: null,
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
      expect(await store.get(user, 'a', NOW)).toEqual(inline);
      expect(await store.get(user, 'b', NOW)).toEqual(blob);
      expect(await store.get(user, 'missing', NOW)).toBeNull();
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
      expect(await store.get(bob, 'secret', NOW)).toBeNull();
      expect((await store.list({ userId: bob }, {}, 10, NOW)).items).toEqual([]);
      expect(await store.search({ userId: bob }, ['secret'], 10, NOW)).toEqual([]);
      expect(await store.delete(bob, 'secret')).toBeNull();
      expect(await store.get(alice, 'secret', NOW)).not.toBeNull();
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
      const first = await store.list({ userId: user }, {}, 3, NOW);
      expect(keys(first)).toEqual(['k6', 'k5', 'k4']);
      expect(first.nextCursor).not.toBeNull();
      const second = await store.list({ userId: user }, {}, 3, NOW, first.nextCursor!);
      expect(keys(second)).toEqual(['k3', 'k2', 'k1']);
      const third = await store.list({ userId: user }, {}, 3, NOW, second.nextCursor!);
      expect(keys(third)).toEqual(['k0']);
      expect(third.nextCursor).toBeNull();

      expect(keys(await store.list({ userId: user }, { type: 'web_content' }, 10, NOW))).toEqual(['k5', 'k3', 'k1']);
      expect(keys(await store.list({ userId: user }, { source: 'shell' }, 10, NOW))).toEqual(['k2', 'k1', 'k0']);
      expect(keys(await store.list({ userId: user }, { tags: ['x', 'y'] }, 10, NOW))).toEqual(['k6', 'k3', 'k0']);
      expect(keys(await store.list({ userId: user }, { from: at(2), to: at(4) }, 10, NOW))).toEqual(['k4', 'k3', 'k2']);
    });

    it('deletes and returns the removed record', async () => {
      const user = freshUser();
      const record = artifact(user, 'gone');
      await store.putIfAbsent(record);
      expect(await store.delete(user, 'gone')).toEqual(record);
      expect(await store.get(user, 'gone', NOW)).toBeNull();
      expect(await store.delete(user, 'gone')).toBeNull();
    });

    it('searches descriptions and inline contents, case-insensitively, for any term', async () => {
      const user = freshUser();
      await store.putIfAbsent(artifact(user, 'db', { description: 'Postgres connection settings', storage: { kind: 'inline', content: 'host=db.internal port=5432' } }));
      await store.putIfAbsent(artifact(user, 'log', { description: 'npm install output', storage: { kind: 'inline', content: 'added 12 packages' } }));
      await store.putIfAbsent(artifact(user, 'big', { description: 'A large report', storage: { kind: 'blob', blobName: 'x' } }));
      expect((await store.search({ userId: user }, ['postgres'], 10, NOW)).map((r) => r.key)).toEqual(['db']);
      expect((await store.search({ userId: user }, ['db.internal'], 10, NOW)).map((r) => r.key)).toEqual(['db']);
      expect((await store.search({ userId: user }, ['packages', 'report'], 10, NOW)).map((r) => r.key).sort()).toEqual(['big', 'log']);
      expect(await store.search({ userId: user }, ['nothing-like-this'], 10, NOW)).toEqual([]);
    });

    describe('TTL', () => {
      const expiry = '2026-01-05T10:30:00.000Z';
      const before = new Date('2026-01-05T10:29:59.999Z');
      const at = new Date(expiry);

      it('stores expiresAt and shows an artifact to readers until, not at, its expiry', async () => {
        const user = freshUser();
        const record = artifact(user, 'w', { expiresAt: expiry, description: 'working notes' });
        await store.putIfAbsent(record);
        await store.putIfAbsent(artifact(user, 'keep', { description: 'permanent notes' }));
        expect(await store.get(user, 'w', before)).toEqual(record);
        expect((await store.list({ userId: user }, {}, 10, before)).items.map((r) => r.key)).toEqual(['w', 'keep']);
        expect((await store.search({ userId: user }, ['notes'], 10, before)).map((r) => r.key).sort()).toEqual(['keep', 'w']);

        expect(await store.get(user, 'w', at)).toBeNull();
        expect((await store.list({ userId: user }, {}, 10, at)).items.map((r) => r.key)).toEqual(['keep']);
        expect((await store.list({ userId: user }, { type: 'tool_output' }, 10, at)).items.map((r) => r.key)).toEqual(['keep']);
        expect((await store.search({ userId: user }, ['notes'], 10, at)).map((r) => r.key)).toEqual(['keep']);
        // A permanent one is there at any time.
        expect(await store.get(user, 'keep', new Date('2999-01-01T00:00:00.000Z'))).not.toBeNull();
      });

      it('putIfAbsent over an expired artifact reports it (not created) for the caller to sweep', async () => {
        const user = freshUser();
        const old = artifact(user, 'k', { expiresAt: expiry });
        await store.putIfAbsent(old);
        expect(await store.putIfAbsent(artifact(user, 'k', { contentHash: 'new' }))).toEqual({ record: old, created: false });
      });

      it('expire removes only what is due, queues the blobs of the removed ones, and a rerun removes nothing', async () => {
        const user = freshUser();
        const other = freshUser();
        await store.putIfAbsent(artifact(user, 'inline-due', { expiresAt: expiry }));
        await store.putIfAbsent(artifact(user, 'blob-due', { expiresAt: '2026-01-05T10:10:00.000Z', storage: { kind: 'blob', blobName: `${user}/blob-due/h~1` } }));
        await store.putIfAbsent(artifact(user, 'later', { expiresAt: '2026-01-05T10:30:00.001Z', storage: { kind: 'blob', blobName: `${user}/later/h~2` } }));
        await store.putIfAbsent(artifact(user, 'permanent', { storage: { kind: 'blob', blobName: `${user}/permanent/h` } }));
        await store.putIfAbsent(artifact(other, 'inline-due', { expiresAt: expiry }));

        expect(await store.expire(user, before)).toBe(1);
        expect(await store.expire(user, at)).toBe(1);
        expect(await store.pendingBlobDeletions(user, 10)).toEqual([`${user}/blob-due/h~1`]);
        expect(await store.pendingBlobDeletions(other, 10)).toEqual([]);
        expect(await store.expire(user, at)).toBe(0);
        // Only the due ones went: the later and the permanent one are there, also to a raw delete.
        expect((await store.list({ userId: user }, {}, 10, before)).items.map((r) => r.key).sort()).toEqual(['later', 'permanent']);
        expect(await store.get(other, 'inline-due', before)).not.toBeNull();

        await store.blobDeletionsDone(user, [`${user}/blob-due/h~1`]);
        expect(await store.pendingBlobDeletions(user, 10)).toEqual([]);
        await store.blobDeletionsDone(user, [`${user}/blob-due/h~1`]);
      });

      it('expire honours a key and a limit', async () => {
        const user = freshUser();
        for (const k of ['a', 'b', 'c']) await store.putIfAbsent(artifact(user, k, { expiresAt: expiry }));
        expect(await store.expire(user, at, { key: 'b' })).toBe(1);
        expect(await store.expire(user, at, { key: 'b' })).toBe(0);
        expect(await store.expire(user, at, { limit: 1 })).toBe(1);
        expect(await store.expire(user, at, { limit: 5 })).toBe(1);
        expect(await store.expire(user, at)).toBe(0);
      });

      it('holds a queued blob back while an artifact still points at it', async () => {
        const user = freshUser();
        const blobName = `${user}/k/h~1`;
        await store.putIfAbsent(artifact(user, 'k', { expiresAt: expiry, storage: { kind: 'blob', blobName } }));
        expect(await store.expire(user, at)).toBe(1);
        await store.putIfAbsent(artifact(user, 'other', { storage: { kind: 'blob', blobName } }));
        expect(await store.pendingBlobDeletions(user, 10)).toEqual([]);
        await store.delete(user, 'other');
        expect(await store.pendingBlobDeletions(user, 10)).toEqual([blobName]);
      });
    });

    describe('scopes', () => {
      const at = (minute: number) => `2026-01-05T10:${String(minute).padStart(2, '0')}:00.000Z`;
      /** A user's artifacts of every scope, one a minute (newest last). */
      async function scopedUser() {
        const user = freshUser();
        const items = [
          artifact(user, 'u', { createdAt: at(1), description: 'notes for everyone' }),
          artifact(user, 'p-r', { createdAt: at(2), scope: 'private', agentId: 'researcher', sessionId: 's1', description: 'researcher notes' }),
          artifact(user, 'p-w', { createdAt: at(3), scope: 'private', agentId: 'writer', description: 'writer notes' }),
          artifact(user, 's-1', { createdAt: at(4), scope: 'session', sessionId: 's1', description: 'session one notes' }),
          artifact(user, 's-2', { createdAt: at(5), scope: 'session', sessionId: 's2', description: 'session two notes' }),
        ];
        for (const item of items) await store.putIfAbsent(item);
        return user;
      }
      const keys = (records: { key: string }[]) => records.map((r) => r.key);

      it('lists and searches only what the viewer may see, in the query', async () => {
        const user = await scopedUser();
        const cases: [Viewer, string[]][] = [
          [{ userId: user }, ['s-2', 's-1', 'p-w', 'p-r', 'u']],
          [{ userId: user, agentId: 'writer' }, ['s-2', 's-1', 'p-w', 'u']],
          [{ userId: user, agentId: 'writer', sessionId: 's1' }, ['s-1', 'p-w', 'u']],
          [{ userId: user, agentId: 'writer', sessionId: 's1', grants: new Set(['p-r']) }, ['s-1', 'p-w', 'p-r', 'u']],
          [{ userId: user, sessionId: 's2' }, ['s-2', 'p-w', 'p-r', 'u']],
          [{ userId: freshUser(), agentId: 'writer', sessionId: 's1' }, []],
        ];
        for (const [viewer, expected] of cases) {
          expect(keys((await store.list(viewer, {}, 10, NOW)).items), JSON.stringify(viewer)).toEqual(expected);
          expect(keys(await store.search(viewer, ['notes'], 10, NOW)), JSON.stringify(viewer)).toEqual(expected);
        }
        // A full page of what the viewer sees, though invisible items lie between: filtered in the query, not after.
        const page = await store.list({ userId: user, agentId: 'writer', sessionId: 's1' }, {}, 2, NOW);
        expect(keys(page.items)).toEqual(['s-1', 'p-w']);
        expect(keys((await store.list({ userId: user, agentId: 'writer', sessionId: 's1' }, {}, 2, NOW, page.nextCursor!)).items)).toEqual(['u']);
        expect(keys((await store.list({ userId: user, agentId: 'writer' }, { scope: 'private' }, 10, NOW)).items)).toEqual(['p-w']);
        expect(keys((await store.list({ userId: user }, { scope: 'user' }, 10, NOW)).items)).toEqual(['u']);
      });

      it('stores global artifacts under the reserved owner, shows them to every user, and pages through both without skipping', async () => {
        const alice = freshUser();
        const bob = freshUser();
        const globals = [
          artifact(GLOBAL_OWNER, 'style-guide', { scope: 'global', createdAt: at(2), description: 'house style notes' }),
          // The same key and time as one of alice's: their sort keys still differ, so paging skips neither.
          artifact(GLOBAL_OWNER, 'same', { scope: 'global', createdAt: at(3), description: 'global same notes' }),
        ];
        try {
          for (const g of globals) expect((await store.putIfAbsent(g)).created).toBe(true);
          await store.putIfAbsent(artifact(alice, 'same', { createdAt: at(3), description: 'alice same notes' }));
          await store.putIfAbsent(artifact(alice, 'a-1', { createdAt: at(1) }));
          await store.putIfAbsent(artifact(alice, 'a-4', { createdAt: at(4), scope: 'private', agentId: 'researcher' }));
          expect(await store.get(GLOBAL_OWNER, 'style-guide', NOW)).toEqual(globals[0]);

          const seen: { userId: string; key: string }[] = [];
          let cursor: string | undefined;
          do {
            const page = await store.list({ userId: alice, agentId: 'writer' }, {}, 1, NOW, cursor);
            seen.push(...page.items.map((r) => ({ userId: r.userId, key: r.key })));
            cursor = page.nextCursor ?? undefined;
          } while (cursor);
          expect(seen.map((r) => `${r.userId === GLOBAL_OWNER ? 'g' : 'a'}:${r.key}`)).toEqual(['g:same', 'a:same', 'g:style-guide', 'a:a-1']);

          expect(keys((await store.list({ userId: bob }, {}, 10, NOW)).items)).toEqual(['same', 'style-guide']);
          expect(keys((await store.list({ userId: bob }, { scope: 'global' }, 10, NOW)).items)).toEqual(['same', 'style-guide']);
          expect((await store.list({ userId: alice }, { scope: 'user' }, 10, NOW)).items.every((r) => r.userId === alice)).toBe(true);
          expect(keys(await store.search({ userId: bob, agentId: 'x', sessionId: 'y' }, ['style'], 10, NOW))).toEqual(['style-guide']);
          expect(keys(await store.search({ userId: alice }, ['same'], 10, NOW)).sort()).toEqual(['same', 'same']);
        } finally {
          for (const g of globals) await store.delete(GLOBAL_OWNER, g.key);
        }
      });

      it('property: listing (every page) and search return exactly the live items canSee admits', async () => {
        const agents = ['a1', 'a2', 'a3'];
        const sessions = ['s1', 's2'];
        const item = fc.record({
          scope: fc.constantFrom(...Scope.options),
          agentId: fc.option(fc.constantFrom(...agents), { nil: undefined }),
          sessionId: fc.option(fc.constantFrom(...sessions), { nil: undefined }),
          minute: fc.integer({ min: 0, max: 59 }),
        });
        const viewer = fc.record({
          agentId: fc.option(fc.constantFrom(...agents), { nil: undefined }),
          sessionId: fc.option(fc.constantFrom(...sessions), { nil: undefined }),
          grants: fc.subarray(Array.from({ length: 8 }, (_, i) => `k${i}`)),
        });
        await fc.assert(
          fc.asyncProperty(fc.array(item, { maxLength: 8 }), viewer, fc.integer({ min: 1, max: 4 }), async (drafts, v, pageSize) => {
            const user = freshUser();
            const records = drafts.map((d, i) =>
              artifact(d.scope === 'global' ? GLOBAL_OWNER : user, `k${i}`, {
                scope: d.scope,
                createdAt: at(d.minute),
                description: `needle ${i}`,
                ...(d.agentId && { agentId: d.agentId }),
                ...(d.sessionId && { sessionId: d.sessionId }),
              }),
            );
            try {
              for (const r of records) await store.putIfAbsent(r);
              const reader: Viewer = { userId: user, ...(v.agentId && { agentId: v.agentId }), ...(v.sessionId && { sessionId: v.sessionId }), grants: new Set(v.grants) };
              const id = (r: ArtifactRecord) => `${r.userId}/${r.key}`;
              const expected = records.filter((r) => canSee(r, reader)).map(id).sort();
              const listed: ArtifactRecord[] = [];
              let cursor: string | undefined;
              do {
                const page = await store.list(reader, {}, pageSize, NOW, cursor);
                expect(page.items.length).toBeLessThanOrEqual(pageSize);
                if (page.nextCursor) expect(page.items.length).toBe(pageSize);
                listed.push(...page.items);
                cursor = page.nextCursor ?? undefined;
              } while (cursor);
              expect(listed.every((r) => canSee(r, reader))).toBe(true);
              expect(listed.map(id).sort()).toEqual(expected);
              const found = await store.search(reader, ['needle'], 50, NOW);
              expect(found.every((r) => canSee(r, reader))).toBe(true);
              expect(found.map(id).sort()).toEqual(expected);
            } finally {
              for (const r of records.filter((r) => r.userId === GLOBAL_OWNER)) await store.delete(GLOBAL_OWNER, r.key);
            }
          }),
          { numRuns: 25 },
        );
      }, 120_000);
    });

    it('keeps snapshots per user', async () => {
      const user = freshUser();
      const snapshot = { userId: user, snapshotId: 'snap-1', keys: ['a', 'b'], agentId: 'sub', createdAt: '2026-01-05T10:00:00.000Z' };
      await store.putSnapshot(snapshot);
      expect(await store.getSnapshot(user, 'snap-1')).toEqual(snapshot);
      expect(await store.getSnapshot(freshUser(), 'snap-1')).toBeNull();
      // Snapshots are not artifacts.
      expect((await store.list({ userId: user }, {}, 10, NOW)).items).toEqual([]);
    });
  });
}
