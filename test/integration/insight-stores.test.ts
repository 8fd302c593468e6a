import { describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosInsightStore } from '../../shared/adapters/cosmos/insights.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { openPglite } from '../../shared/adapters/postgres/db.js';
import { migrate } from '../../shared/adapters/postgres/migrations.js';
import { postgresStores } from '../../shared/adapters/postgres/stores.js';
import type { Stores } from '../../shared/application/ports.js';
import { applyRetention } from '../../shared/application/retention.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { InsightDocument, ProfileDocument } from '../../shared/contracts/insights.js';
import { newSession } from '../../shared/domain/session.js';
import { DAY_SECONDS, retentionPolicy } from '../../shared/domain/retention.js';
import { useCosmosFake } from '../support/cosmos-fake.js';

const DIMENSIONS = 3;
let counter = 0;

function insight(userId: string, id: string, overrides: Partial<InsightDocument> = {}): InsightDocument {
  return {
    schemaVersion: SCHEMA_VERSION,
    id,
    userId,
    type: 'session',
    sessionId: 's1',
    sourceSessionIds: ['s1'],
    category: 'demographics',
    text: `insight ${id}`,
    confidence: 0.8,
    importance: 'high',
    status: 'pending',
    embeddingModel: 'test-model',
    insightVector: [0.1, 0.2, 0.3],
    createdAt: '2026-01-05T10:00:00.000Z',
    updatedAt: '2026-01-05T10:00:00.000Z',
    ...overrides,
  };
}

/** One contract for the insight store and the session directory, run against every backend. */
function describeInsightContract(name: string, open: () => Promise<Stores>) {
  describe(`insight store and session directory contract: ${name}`, () => {
    const user = () => `u${++counter}-${Date.now()}`;

    it('upserts by id, lists oldest first with filters, and keeps the vector', async () => {
      const stores = await open();
      const u = user();
      await stores.insights.upsert([
        insight(u, 'b', { createdAt: '2026-01-05T11:00:00.000Z', category: 'concern', sessionId: 's2', sourceSessionIds: ['s2'] }),
        insight(u, 'a'),
        insight(u, 'c', { type: 'aggregate', status: 'processed' }),
      ]);
      await stores.insights.upsert([insight(u, 'a', { text: 'rewritten', insightVector: [1, 0, 0] })]);
      const all = await stores.insights.list(u);
      expect(all.map((i) => i.id)).toEqual(['a', 'c', 'b']);
      expect(all[0]).toEqual(insight(u, 'a', { text: 'rewritten', insightVector: [1, 0, 0] }));
      expect((await stores.insights.list(u, { type: 'aggregate' })).map((i) => i.id)).toEqual(['c']);
      expect((await stores.insights.list(u, { status: 'pending' })).map((i) => i.id)).toEqual(['a', 'b']);
      expect((await stores.insights.list(u, { sessionId: 's2' })).map((i) => i.id)).toEqual(['b']);
      expect((await stores.insights.list(u, { category: 'concern' })).map((i) => i.id)).toEqual(['b']);
      expect(await stores.insights.list(user())).toEqual([]);
      await stores.close();
    });

    it('keeps one profile per user, apart from the insights', async () => {
      const stores = await open();
      const u = user();
      expect(await stores.insights.getProfile(u)).toBeNull();
      const profile: ProfileDocument = { schemaVersion: SCHEMA_VERSION, id: 'profile', userId: u, type: 'long_term', profile: 'p1', sourceInsightIds: ['a'], version: 1, updatedAt: '2026-01-05T10:00:00.000Z' };
      await stores.insights.putProfile(profile);
      await stores.insights.putProfile({ ...profile, profile: 'p2', sourceInsightIds: ['a', 'b'], version: 2 });
      expect(await stores.insights.getProfile(u)).toEqual({ ...profile, profile: 'p2', sourceInsightIds: ['a', 'b'], version: 2 });
      expect(await stores.insights.list(u)).toEqual([]);
      await stores.insights.putProfile({ ...profile, userId: 'other-' + u });
      await stores.insights.deleteProfile(u);
      await stores.insights.deleteProfile(u); // none: nothing to do
      expect(await stores.insights.getProfile(u)).toBeNull();
      expect(await stores.insights.getProfile('other-' + u)).not.toBeNull();
      await stores.close();
    });

    it('purges the named insights of one user only, never the profile, counting what existed; a repeat purges nothing', async () => {
      const stores = await open();
      const [u, other] = [user(), user()];
      await stores.insights.upsert([insight(u, 'a', { status: 'superseded' }), insight(u, 'b', { status: 'merged', mergedInto: 'c' }), insight(u, 'c')]);
      await stores.insights.upsert([insight(other, 'a', { status: 'superseded' })]);
      const profile: ProfileDocument = { schemaVersion: SCHEMA_VERSION, id: 'profile', userId: u, type: 'long_term', profile: 'p', sourceInsightIds: ['c'], version: 1, updatedAt: '2026-01-05T10:00:00.000Z' };
      await stores.insights.putProfile(profile);
      expect(await stores.insights.purge(u, ['a', 'b', 'missing', 'profile'])).toBe(2);
      expect((await stores.insights.list(u)).map((i) => i.id)).toEqual(['c']);
      expect((await stores.insights.list(other)).map((i) => i.id)).toEqual(['a']);
      expect(await stores.insights.getProfile(u)).toEqual(profile);
      expect(await stores.insights.purge(u, ['a', 'b'])).toBe(0);
      expect(await stores.insights.purge(u, [])).toBe(0);
      await stores.close();
    });

    it('retention deletes superseded and merged insights past their audit period and keeps live ones; a rerun deletes nothing', async () => {
      const stores = await open();
      const u = user();
      const now = new Date('2026-03-01T00:00:00.000Z');
      const daysAgo = (days: number) => new Date(now.getTime() - days * DAY_SECONDS * 1000).toISOString();
      await stores.insights.upsert([
        insight(u, 'old-superseded', { status: 'superseded', supersededBy: 'live', updatedAt: daysAgo(31) }),
        insight(u, 'old-merged', { status: 'merged', mergedInto: 'live', updatedAt: daysAgo(30) }),
        insight(u, 'recent-superseded', { status: 'superseded', updatedAt: daysAgo(29) }),
        insight(u, 'live', { status: 'processed', updatedAt: daysAgo(400) }),
        insight(u, 'pending', { updatedAt: daysAgo(400) }),
      ]);
      const deps = { insights: stores.insights, retention: retentionPolicy(30) };
      expect(await applyRetention({ ...deps, retention: retentionPolicy(0) }, u, now)).toEqual({ expired: 0, artifactsExpired: 0 });
      expect(await applyRetention(deps, u, now)).toEqual({ expired: 2, artifactsExpired: 0 });
      expect((await stores.insights.list(u)).map((i) => i.id).sort()).toEqual(['live', 'pending', 'recent-superseded']);
      expect(await applyRetention(deps, u, now)).toEqual({ expired: 0, artifactsExpired: 0 });
      await stores.close();
    });

    it('finds recent summaries, idle sessions, sessions by reflection status and active users', async () => {
      const stores = await open();
      const u = user();
      const at = (h: number) => `2026-01-05T${String(h).padStart(2, '0')}:00:00.000Z`;
      const put = async (sessionId: string, patch: Partial<ReturnType<typeof newSession>>) =>
        stores.sessions.put({ ...newSession({ userId: u, sessionId }, new Date(at(1))), ...patch }, null);
      await put('old', { status: 'completed', summary: 'old summary', endedAt: at(2), startedAt: at(1), lastTurnAt: at(2), reflectionStatus: 'no-insight' });
      await put('mid', { status: 'completed', summary: 'mid summary', endedAt: at(4), startedAt: at(3), lastTurnAt: at(4), reflectionStatus: 'processed' });
      await put('new', { status: 'completed', summary: 'new summary', endedAt: at(6), startedAt: at(5), lastTurnAt: at(6), reflectionStatus: 'no-insight' });
      await put('live', { status: 'active', startedAt: at(7), lastTurnAt: at(8), lastActivityAt: at(8) });
      // Imported history: the client's timestamps are old, but the service recorded the turns just now.
      await put('imported', { status: 'active', startedAt: at(0), lastTurnAt: at(1), lastActivityAt: at(10) });
      expect(await stores.directory.recentSummaries(u, 2)).toEqual([
        { sessionId: 'new', endedAt: at(6), summary: 'new summary' },
        { sessionId: 'mid', endedAt: at(4), summary: 'mid summary' },
      ]);
      expect((await stores.directory.recentSummaries(u, 5, { before: at(5) })).map((s) => s.sessionId)).toEqual(['mid', 'old']);
      expect((await stores.directory.recentSummaries(u, 5, { excludeSessionId: 'new' })).map((s) => s.sessionId)).toEqual(['mid', 'old']);
      expect(await stores.directory.recentSummaries(u, 0)).toEqual([]);
      const idle = await stores.directory.idleSessions(new Date(at(9)), 1000);
      expect(idle.filter((k) => k.userId === u)).toEqual([{ userId: u, sessionId: 'live' }]);
      expect((await stores.directory.idleSessions(new Date(at(8)), 1000)).filter((k) => k.userId === u)).toEqual([]);
      expect(await stores.directory.byReflectionStatus(u, 'no-insight')).toEqual([
        { userId: u, sessionId: 'old' },
        { userId: u, sessionId: 'new' },
      ]);
      expect(await stores.directory.usersActiveSince(new Date(at(0)), 10_000)).toContain(u);
      expect(await stores.directory.usersActiveSince(new Date('2099-01-01T00:00:00Z'), 10_000)).toEqual([]);
      await stores.close();
    });
  });
}

describeInsightContract('postgres (PGlite)', async () => {
  const db = await openPglite(undefined);
  await migrate(db);
  return postgresStores(db);
});

const openFakeDatabase = useCosmosFake(DIMENSIONS);

describeInsightContract('cosmos (wire fake)', async () => cosmosStores(await openFakeDatabase(), { atomicBatches: false, ownsClient: true, retention: retentionPolicy(30) }));

describe('cosmos insight store: retention by per-item ttl (the wire fake keeps `ttl` but never expires items)', () => {
  const now = new Date('2026-03-01T00:00:00.000Z');

  it('stamps a superseded or merged insight with the seconds left of its audit period, and a live one with none', async () => {
    const database = await openFakeDatabase();
    const container = database.container(COSMOS_CONTAINERS.insights.name);
    const store = new CosmosInsightStore(container, { retention: retentionPolicy(30), now: () => now });
    const u = `ttl-${Date.now()}`;
    await store.upsert([
      insight(u, 'superseded', { status: 'superseded', updatedAt: now.toISOString() }),
      insight(u, 'merged', { status: 'merged', mergedInto: 'live', updatedAt: new Date(now.getTime() - 10 * DAY_SECONDS * 1000).toISOString() }),
      insight(u, 'overdue', { status: 'superseded', updatedAt: '2025-01-01T00:00:00.000Z' }),
      insight(u, 'live', { status: 'processed' }),
    ]);
    const ttl = async (id: string) => (await container.item(id, u).read<Record<string, unknown>>()).resource?.ttl;
    expect(await ttl('superseded')).toBe(30 * DAY_SECONDS);
    expect(await ttl('merged')).toBe(20 * DAY_SECONDS);
    expect(await ttl('overdue')).toBe(1);
    expect(await ttl('live')).toBeUndefined();
    // The stamp is storage detail: reads return the document as written.
    expect((await store.list(u, { status: 'superseded' })).map((i) => i.id)).toEqual(['overdue', 'superseded']);

    // Live again (a rewrite as pending): the ttl goes, so Cosmos keeps it.
    await store.upsert([insight(u, 'superseded', { status: 'pending', updatedAt: now.toISOString() })]);
    expect(await ttl('superseded')).toBeUndefined();
    // Without a policy, or with "keep for good", nothing is stamped.
    await new CosmosInsightStore(container, { retention: retentionPolicy(0), now: () => now }).upsert([insight(u, 'merged', { status: 'merged' })]);
    await new CosmosInsightStore(container).upsert([insight(u, 'overdue', { status: 'superseded' })]);
    expect(await ttl('merged')).toBeUndefined();
    expect(await ttl('overdue')).toBeUndefined();
    database.client.dispose();
  });
});
