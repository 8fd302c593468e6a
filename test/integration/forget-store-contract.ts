import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../shared/application/artifact-ports.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import { refoldSession } from '../../shared/application/project-session.js';
import type { Stores } from '../../shared/application/ports.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { InsightDocument } from '../../shared/contracts/insights.js';
import { newSession, sessionOf } from '../../shared/domain/session.js';
import { turnDraft } from '../support/builders.js';
import { artifact } from './artifact-store-contract.js';

const at = new Date('2026-01-05T10:00:00Z');
let counter = 0;
const freshUser = () => `forget-${++counter}-${Date.now()}`;

export interface ForgetBackend {
  stores: Stores;
  artifacts: ArtifactStore;
  forgets: ForgetStore;
  close: () => Promise<void>;
}

const insight = (userId: string, id: string, sessionId: string, sourceSessionIds = [sessionId], type: InsightDocument['type'] = 'session'): InsightDocument => ({
  schemaVersion: SCHEMA_VERSION,
  id,
  userId,
  type,
  sessionId,
  sourceSessionIds,
  category: 'demographics',
  text: `insight ${id}`,
  confidence: 0.8,
  importance: 'high',
  status: 'pending',
  embeddingModel: 'test-model',
  insightVector: [0.1, 0.2, 0.3],
  createdAt: at.toISOString(),
  updatedAt: at.toISOString(),
});

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** The forget port's behaviour, the same on every store adapter: PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeForgetStoreContract(name: string, open: () => Promise<ForgetBackend>) {
  describe(`forget store contract: ${name}`, () => {
    let b: ForgetBackend;
    beforeAll(async () => {
      b = await open();
    }, 60_000);
    afterAll(() => b?.close());

    /** Two sessions with events, a session document, insights (one aggregate over both), a profile, artifacts inline and blob. */
    async function seed(userId: string) {
      for (const sessionId of ['s1', 's2']) {
        await b.stores.events.append({ userId, sessionId }, [turnDraft(`${sessionId}-a`), turnDraft(`${sessionId}-b`)], at);
        await b.stores.sessions.put(newSession({ userId, sessionId }, at), null);
        await b.artifacts.putIfAbsent(artifact(userId, `${sessionId}-inline`, { sessionId }));
        await b.artifacts.putIfAbsent(artifact(userId, `${sessionId}-blob`, { sessionId, storage: { kind: 'blob', blobName: `${userId}/${sessionId}-blob/h` } }));
      }
      await b.stores.insights.upsert([insight(userId, 'i1', 's1'), insight(userId, 'i2', 's2'), insight(userId, 'agg', 's2', ['s1', 's2'], 'aggregate')]);
      await b.stores.insights.putProfile({ schemaVersion: SCHEMA_VERSION, userId, profile: 'likes bonds', sourceInsightIds: ['i1'], version: 1, updatedAt: at.toISOString() } as never);
    }

    it('scans what a user holds, purges all of it (idempotently) and then scans zero; another user keeps everything', async () => {
      const user = freshUser();
      const other = freshUser();
      await seed(user);
      await seed(other);
      const before = await b.forgets.scan({ userId: user });
      expect(total(before)).toBeGreaterThanOrEqual(4 + 2 + 4 + 4); // events, sessions, artifacts, insights and profile
      expect(await b.forgets.sessions({ userId: user })).toEqual(['s1', 's2']);
      expect(await b.forgets.blobNames({ userId: user })).toEqual([`${user}/s1-blob/h`, `${user}/s2-blob/h`]);

      expect(await b.forgets.markForgetting({ userId: user }, 'forget', at)).toBe(true);
      expect(await b.forgets.markForgetting({ userId: user }, 'forget', at)).toBe(false); // a repeat is harmless
      const removed = await b.forgets.purge({ userId: user });
      expect(total(removed)).toBeGreaterThanOrEqual(total(before));
      expect(total(await b.forgets.scan({ userId: user }))).toBe(0);
      expect(total(await b.forgets.purge({ userId: user }))).toBe(0);
      expect(await b.forgets.scan({ userId: other })).toEqual(before);
      await b.forgets.clearForgetting({ userId: user }, 'forget');
      await b.forgets.clearForgetting({ userId: user }, 'forget');
    });

    it('a session: its events, document, artifacts, its insights and the aggregate built from it, and the profile made from them; not the other session', async () => {
      const user = freshUser();
      await seed(user);
      expect(await b.forgets.blobNames({ userId: user, sessionId: 's1' })).toEqual([`${user}/s1-blob/h`]);
      await b.forgets.markForgetting({ userId: user, sessionId: 's1' }, 'forget', at);
      await b.forgets.purge({ userId: user, sessionId: 's1' });
      expect(total(await b.forgets.scan({ userId: user, sessionId: 's1' }))).toBe(0);
      expect(await b.stores.events.read({ userId: user, sessionId: 's1' }, 0)).toEqual([]);
      expect(await b.stores.events.read({ userId: user, sessionId: 's2' }, 0)).toHaveLength(2);
      expect((await b.stores.insights.list(user)).map((i) => i.id)).toEqual(['i2']);
      expect(await b.stores.insights.getProfile(user)).toBeNull();
      expect(await b.artifacts.get(user, 's2-inline', at)).not.toBeNull();
      expect(await b.artifacts.get(user, 's1-inline', at)).toBeNull();
      await b.forgets.clearForgetting({ userId: user, sessionId: 's1' }, 'forget');
    });

    it("a session's summary in other sessions' init blocks: counted by the scan, erased from their events, gone from their documents once refolded", async () => {
      const user = freshUser();
      await seed(user);
      const summary = 'SUMMARY-OF-S1: retire at 60';
      const later = { userId: user, sessionId: 's3' };
      const recentSessions = [
        { sessionId: 's0', endedAt: at.toISOString(), summary: 'an older session' },
        { sessionId: 's1', endedAt: at.toISOString(), summary },
      ];
      await b.stores.events.append(later, [turnDraft('s3-a'), { type: 'SessionInitFixed', data: { profile: null, recentSessions } }, turnDraft('s3-b')], at);
      await b.stores.sessions.put(sessionOf(later, await b.stores.events.read(later, 0)), null);
      const text = async () => JSON.stringify([await b.stores.events.read(later, 0), (await b.stores.sessions.get(later))?.doc]);
      expect(await text()).toContain(summary);
      expect(await b.forgets.scan({ userId: user, sessionId: 's1' })).toMatchObject({ initEvents: 1, initDocuments: 1 });
      expect(await b.forgets.scan({ userId: user, sessionId: 's2' })).toMatchObject({ initEvents: 0, initDocuments: 0 });

      await b.forgets.markForgetting({ userId: user, sessionId: 's1' }, 'forget', at);
      await b.forgets.purge({ userId: user, sessionId: 's1' });
      expect(await b.forgets.redactInit({ userId: user, sessionId: 's1' })).toEqual({ events: 1, sessionIds: ['s3'] });
      const events = await b.stores.events.read(later, 0);
      expect(events.map((e) => e.metadata.seq)).toEqual([1, 2, 3]);
      expect(events[1]).toMatchObject({ type: 'SessionInitFixed', data: { profile: null, recentSessions: [recentSessions[0]] } });
      // The document still shows the entry (evolve fixes init once) until it is folded again from the stream.
      expect(await b.forgets.scan({ userId: user, sessionId: 's1' })).toMatchObject({ initEvents: 0, initDocuments: 1 });
      expect(await b.forgets.redactInit({ userId: user, sessionId: 's1' })).toEqual({ events: 0, sessionIds: ['s3'] });
      expect(await refoldSession(b.stores, later)).toBe(true);
      expect((await b.stores.sessions.get(later))?.doc).toMatchObject({ projectedThroughSeq: 3, turnCount: 2, init: { profile: null, recentSessions: [recentSessions[0]] } });
      expect(await text()).not.toContain(summary);
      expect(total(await b.forgets.scan({ userId: user, sessionId: 's1' }))).toBe(0);
      expect(await b.forgets.redactInit({ userId: user, sessionId: 's1' })).toEqual({ events: 0, sessionIds: [] });
      await b.forgets.clearForgetting({ userId: user, sessionId: 's1' }, 'forget');
    });

    it('the tombstone covers the user (every session) or one session, and goes with clearForgetting', async () => {
      const user = freshUser();
      await b.forgets.markForgetting({ userId: user, sessionId: 's1' }, 'forget', at);
      expect(await b.forgets.forgetting({ userId: user, sessionId: 's1' })).toBe(true);
      expect(await b.forgets.forgetting({ userId: user, sessionId: 's2' })).toBe(false);
      await b.forgets.markForgetting({ userId: user }, 'forget', at);
      expect(await b.forgets.forgetting({ userId: user, sessionId: 's2' })).toBe(true);
      expect(await b.forgets.forgetting({ userId: freshUser(), sessionId: 's2' })).toBe(false);
      await b.forgets.clearForgetting({ userId: user }, 'forget');
      await b.forgets.clearForgetting({ userId: user, sessionId: 's1' }, 'forget');
      expect(await b.forgets.forgetting({ userId: user, sessionId: 's1' })).toBe(false);
    });

    it("a session's tombstones are one per owner (a forget's, the overtaken projectors'): writes are refused under each, and each owner clears only its own", async () => {
      const user = freshUser();
      const key = { userId: user, sessionId: 's1' };
      expect(await b.forgets.markForgetting(key, 'projector', at)).toBe(true);
      // A writer that enlists only with the forgets' tombstones finds none, and leaves the projector's as it was.
      const projector = await b.forgets.tombstoneVersion(key, 'projector');
      expect(await b.forgets.enlist(key, ['forget'])).toBe(false);
      expect(await b.forgets.tombstoneVersion(key, 'projector')).toBe(projector);
      expect(await b.forgets.markForgetting(key, 'forget', at)).toBe(true);
      expect(await b.forgets.enlist(key, ['forget'])).toBe(true);
      expect(await b.forgets.markForgetting(key, 'projector', at)).toBe(false);
      const forget = await b.forgets.tombstoneVersion(key, 'forget');
      expect(await b.forgets.clearForgetting(key, 'projector', (await b.forgets.tombstoneVersion(key, 'projector'))!)).toBe(true);
      expect(await b.forgets.forgetting(key)).toBe(true);
      expect(await b.forgets.enlist(key)).toBe(true);
      // PostgreSQL refuses the writes themselves: enlisting changes nothing there.
      expect((await b.forgets.tombstoneVersion(key, 'forget')) === forget).toBe(b.forgets.refusesWritesItself);
      await b.forgets.clearForgetting(key, 'forget');
      expect(await b.forgets.forgetting(key)).toBe(false);
    });

    it('clearStale deletes an owner\'s tombstone only when it was recorded before the time given', async () => {
      const key = { userId: freshUser(), sessionId: 's1' };
      await b.forgets.markForgetting(key, 'projector', at);
      await b.forgets.clearStale(key, 'projector', at);
      expect(await b.forgets.forgetting(key)).toBe(true);
      await b.forgets.clearStale(key, 'projector', new Date(at.getTime() + 1));
      expect(await b.forgets.forgetting(key)).toBe(false);
    });

    it('a tombstone is cleared only with the version read before the scan; a writer that enlists since changes it where writes are not refused', async () => {
      const user = freshUser();
      const key = { userId: user, sessionId: 's1' };
      expect(await b.forgets.enlist(key)).toBe(false);
      expect(await b.forgets.tombstoneVersion({ userId: user }, 'forget')).toBeNull();
      await b.forgets.markForgetting({ userId: user }, 'forget', at);
      const scanned = (await b.forgets.tombstoneVersion({ userId: user }, 'forget'))!;
      expect(scanned).toEqual(expect.any(String));
      expect(await b.forgets.enlist(key)).toBe(true);
      const now = (await b.forgets.tombstoneVersion({ userId: user }, 'forget'))!;
      // PostgreSQL refuses the writes themselves: enlisting changes nothing there.
      expect(now === scanned).toBe(b.forgets.refusesWritesItself);
      if (!b.forgets.refusesWritesItself) {
        expect(await b.forgets.clearForgetting({ userId: user }, 'forget', scanned)).toBe(false);
        expect(await b.forgets.forgetting(key)).toBe(true);
      }
      expect(await b.forgets.clearForgetting({ userId: user }, 'forget', now)).toBe(true);
      expect(await b.forgets.forgetting(key)).toBe(false);
      // A repeat (a rerun after a crash) finds it gone: cleared.
      expect(await b.forgets.clearForgetting({ userId: user }, 'forget', now)).toBe(true);
      expect(await b.forgets.enlist(key)).toBe(false);
    });

    it("an append that passed the check before the tombstone was recorded is refused, and the forget's next round purges it; after the forget, a new append starts at seq 1", async () => {
      const user = freshUser();
      const key = { userId: user, sessionId: 's1' };
      await b.stores.events.append(key, [turnDraft('old')], at);
      await b.forgets.markForgetting({ userId: user }, 'forget', at);
      await b.forgets.purge({ userId: user });
      const scanned = await b.forgets.tombstoneVersion({ userId: user }, 'forget');
      // The race: the append's first look found no tombstone (it was recorded just after).
      let looks = 0;
      const racing: ForgetStore = Object.assign(Object.create(b.forgets) as ForgetStore, {
        forgetting: async (k: typeof key) => (++looks === 1 ? false : b.forgets.forgetting(k)),
      });
      const deps = { events: b.stores.events, clock: { now: () => at }, ids: { newId: () => 'generated' }, forgets: racing };
      await expect(appendTurns(deps, key, { turns: [{ role: 'user', content: 'racing the purge', turnId: 'new' }] })).rejects.toMatchObject({ code: 'forget_in_progress' });
      if (!b.forgets.refusesWritesItself) {
        // Written, and enlisted with the tombstone: the clear under the version read before fails, and the next round purges.
        expect(await b.forgets.clearForgetting({ userId: user }, 'forget', scanned!)).toBe(false);
        await b.forgets.purge({ userId: user });
      }
      expect(await b.stores.events.read(key, 0)).toEqual([]);
      expect(total(await b.forgets.scan({ userId: user }))).toBe(0);
      // Without the race the first look refuses.
      await expect(appendTurns({ ...deps, forgets: b.forgets }, key, { turns: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ code: 'forget_in_progress' });
      await b.forgets.clearForgetting({ userId: user }, 'forget');
      expect(await appendTurns({ ...deps, forgets: b.forgets }, key, { turns: [{ role: 'user', content: 'fresh', turnId: 'fresh' }] })).toEqual({ accepted: [{ turnId: 'fresh', seq: 1 }] });
    });
  });
}
