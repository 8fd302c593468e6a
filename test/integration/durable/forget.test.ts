import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as contextHandler } from '../../../functions/http-context-get.js';
import { handler as endHandler } from '../../../functions/http-session-end.js';
import { handler as eventsHandler } from '../../../functions/http-session-events-list.js';
import { handler as sessionForgetHandler } from '../../../functions/http-session-forget.js';
import { handler as turnsHandler } from '../../../functions/http-turns-append.js';
import { handler as userForgetHandler } from '../../../functions/http-user-forget.js';
import { handler as operationHandler } from '../../../functions/http-operation-get.js';
import { handler as reflectionHandler } from '../../../functions/http-reflection-start.js';
import { handler as memoriesHandler } from '../../../functions/http-memories-create.js';
import { handler as searchHandler } from '../../../functions/http-facts-search.js';
import { azuriteConnectionString, ensureBlobContainer, openBlobStore } from '../../../shared/adapters/blob/azure-blob.js';
import { CosmosArtifactStore } from '../../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../../shared/adapters/cosmos/forget.js';
import { cosmosStores } from '../../../shared/adapters/cosmos/stores.js';
import type { Db } from '../../../shared/adapters/postgres/db.js';
import { SnapshotSearchIndex } from '../../../shared/adapters/postgres/search-snapshot.js';
import { appendTurns } from '../../../shared/application/append-turns.js';
import { projectSession } from '../../../shared/application/project-session.js';
import { OperationProgress, sessionEndInstanceId } from '../../../shared/contracts/operations.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { useRuntime } from '../../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../../shared/platform/durable.js';
import { EventType, LocalDurableRunner, RunnerCrash } from '../../../shared/platform/local-host/durable-runner.js';
import { MemoryDurableStateStore, PostgresDurableStateStore, type DurableStateStore } from '../../../shared/platform/local-host/durable-state.js';
import { loadFunctions } from '../../../shared/platform/local-host/functions.js';
import { startAzurite, type RunningAzurite } from '../../../shared/platform/local-host/azurite.js';
import type { FunctionDescriptor } from '../../../shared/platform/functions.js';
import { useCosmosFake } from '../../support/cosmos-fake.js';
import { context, json, memoryRuntime, request } from '../../support/runtime.js';
import { ADVISOR_SESSION } from '../../support/scenarios.js';

let azurite: RunningAzurite;
let functions: FunctionDescriptor[];
beforeAll(async () => {
  azurite = await startAzurite({});
  functions = await loadFunctions();
}, 120_000);
afterAll(async () => {
  await azurite?.stop();
});

const cosmos = useCosmosFake(512);
let containers = 0;

interface Backend {
  name: string;
  open: () => Promise<{ runtime: Runtime; durable: DurableStateStore }>;
}

const blobEnv = () => ({ ARTIFACTS_BLOB_CONNECTION_STRING: azuriteConnectionString(azurite.blobEndpoint), ARTIFACTS_CONTAINER: `forget-${++containers}-${Date.now()}`, ARTIFACT_INLINE_MAX_BYTES: '1024', MIN_SESSIONS_FOR_AGGREGATION: '2' });

const BACKENDS: Backend[] = [
  {
    name: 'PostgreSQL (PGlite, local runner state in durable_instances)',
    open: async () => {
      const runtime = await memoryRuntime(blobEnv());
      await ensureBlobContainer(openBlobStore({ container: runtime.settings.ARTIFACTS_CONTAINER, connectionString: runtime.settings.ARTIFACTS_BLOB_CONNECTION_STRING! }));
      return { runtime, durable: new PostgresDurableStateStore((runtime as Runtime & { db: Db }).db) };
    },
  },
  {
    name: 'Cosmos DB (wire fake)',
    open: async () => {
      const base = await memoryRuntime(blobEnv());
      await ensureBlobContainer(openBlobStore({ container: base.settings.ARTIFACTS_CONTAINER, connectionString: base.settings.ARTIFACTS_BLOB_CONNECTION_STRING! }));
      const database = await cosmos();
      const runtime: Runtime = {
        ...base,
        ...cosmosStores(database, { atomicBatches: false }),
        backend: 'cosmos',
        detail: { ...base.detail, artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)) },
        forgets: new CosmosForgetStore(database),
        close: () => base.close(),
      };
      delete (runtime as Partial<Runtime>).changeFeed;
      useRuntime(runtime);
      return { runtime, durable: new MemoryDurableStateStore() };
    },
  },
];

const params = (userId: string, sessionId?: string): { params: Record<string, string> } => ({ params: sessionId ? { userId, sessionId } : { userId } });

describe.each(BACKENDS)('forget: $name', ({ open }) => {
  let runtime: Runtime;
  let durable: DurableStateStore;
  let runner: LocalDurableRunner;

  beforeAll(async () => {
    ({ runtime, durable } = await open());
    runner = new LocalDurableRunner(functions, durable, { delayScale: 0 });
    useLocalOrchestrationClient(runner);
  }, 120_000);
  afterAll(async () => {
    await runner.stop();
    useLocalOrchestrationClient(undefined);
    await runtime.close();
  });

  const completed = async (operationId: string) => {
    const done = await runner.waitFor(operationId, 120_000);
    expect(done.status, done.error).toBe('completed');
    return done;
  };

  const append = (userId: string, sessionId: string, turns: { role: 'user' | 'assistant' | 'tool'; content: string }[]) =>
    turnsHandler(request('POST', `v1/users/${userId}/sessions/${sessionId}/turns`, { ...params(userId, sessionId), body: { turns } }), context('http-turns-append'));

  /** Everything the issue names: ended and reflected sessions, insights, profile, artifacts (inline, blob, offloaded), search snapshot. */
  async function seedUser(userId: string) {
    for (const sessionId of ['s1', 's2']) {
      await appendTurns(runtime, { userId, sessionId }, { turns: ADVISOR_SESSION.map((t, i) => ({ ...t, turnId: `${sessionId}-${i}` })) });
      await projectSession(runtime, { userId, sessionId });
      const res = await endHandler(request('POST', `v1/users/${userId}/sessions/${sessionId}/end`, params(userId, sessionId)), context('http-session-end'));
      await completed(json(res).operationId as string);
    }
    await completed(json(await reflectionHandler(request('POST', `v1/users/${userId}/reflection`, params(userId)), context('x'))).operationId as string);
    expect(await runtime.insights.getProfile(userId)).not.toBeNull();
    expect((await runtime.insights.list(userId)).length).toBeGreaterThan(0);
    for (const [key, content] of [
      ['note-inline', 'The client prefers bonds.'],
      ['note-blob', 'Portfolio line. '.repeat(200)],
    ] as const) {
      const res = await memoriesHandler(request('POST', `v1/users/${userId}/memories`, { ...params(userId), body: { key, content } }), context('x'));
      expect(res.status).toBe(201);
    }
    // A tool output over the offload threshold becomes an artifact of session s3 (in Blob Storage: over the inline limit).
    expect((await append(userId, 's3', [{ role: 'tool', content: 'ledger row 42 balance ok; '.repeat(400) }])).status).toBe(202);
    await projectSession(runtime, { userId, sessionId: 's3' });
    const blobbed = (await runtime.detail.artifacts.list({ userId }, {}, 50, new Date())).items.filter((a) => a.storage.kind === 'blob');
    expect(blobbed.length).toBe(2);
    // Fact search starts building the user's in-process snapshot on PGlite (Cosmos ranks in its own queries, which the fake lacks).
    if (runtime.search instanceof SnapshotSearchIndex) {
      const search = await searchHandler(request('POST', `v1/users/${userId}/facts/search`, { ...params(userId), body: { query: 'retirement savings' } }), context('x'));
      expect((json(search).facts as unknown[]).length).toBeGreaterThan(0);
      await runtime.search.warm(userId); // the snapshot is built off the request path
      expect(runtime.search.held(userId)).toBeGreaterThan(0);
    }
  }

  /** The test's own look at every store, apart from the operation's report. */
  async function leftOf(userId: string): Promise<Record<string, number>> {
    const scan = await runtime.forgets.scan({ userId });
    const blobs = await runtime.detail.blobs!.existing({ prefix: `${userId}/` });
    const histories = (await Promise.all(['s1', 's2', 's3'].map((s) => durable.get(sessionEndInstanceId(userId, s))))).filter(Boolean);
    return { ...scan, blobs: blobs.length, durableInstances: histories.length };
  }

  const forgetUser = async (userId: string) => {
    const res = await userForgetHandler(request('DELETE', `v1/users/${userId}`, params(userId)), context('http-user-forget'));
    expect(res.status).toBe(202);
    return json(res).operationId as string;
  };

  const zeroes = (counts: Record<string, number>) => Object.fromEntries(Object.keys(counts).map((k) => [k, 0]));

  it('forgets a user: the report counts what it removed and a scan of every store that finds zero; others keep theirs; a later append starts from nothing', async () => {
    await seedUser('alice');
    await appendTurns(runtime, { userId: 'bob', sessionId: 'b1' }, { turns: [{ role: 'user', content: 'I am Bob and I like sailing.', turnId: 'b-1' }] });
    await projectSession(runtime, { userId: 'bob', sessionId: 'b1' });
    const bobBefore = await leftOf('bob');

    const operationId = await forgetUser('alice');
    expect(operationId).toBe('forget-user:alice');
    expect(await forgetUser('alice')).toBe(operationId); // a repeat while it runs is the same operation
    await completed(operationId);
    const op = json(await operationHandler(request('GET', `v1/operations/${operationId}`, { params: { operationId } }), context('x')));
    const report = op.output as { removed: Record<string, number>; residual: Record<string, number>; verified: boolean; sessions: number; rounds: number; graceSeconds: number };
    expect(report.verified).toBe(true);
    expect(report.sessions).toBe(3);
    // The grace (FORGET_GRACE_SECONDS' default; the runner's delayScale 0 fires its timer at once), then a round that purges nothing.
    expect(report).toMatchObject({ rounds: 2, graceSeconds: 600 });
    expect(report.residual).toEqual(zeroes(report.residual));
    expect(Object.keys(report.residual)).toEqual(expect.arrayContaining(['blobs', 'durableInstances', 'events', 'sessions', 'interactions', 'insights', 'artifacts']));
    expect(report.removed.blobs).toBe(2);
    expect(report.removed.durableInstances).toBe(2); // s1 and s2 were ended
    expect(report.removed.events).toBeGreaterThan(24);
    expect(report.removed.insights).toBeGreaterThan(0);
    if (runtime.backend !== 'cosmos') {
      expect(report.removed).toMatchObject({ profiles: 1, memory_turns: 25, searchSnapshots: expect.any(Number) });
      expect(report.removed.searchSnapshots).toBeGreaterThan(0);
      expect((runtime.search as SnapshotSearchIndex).held('alice')).toBe(0);
    }

    expect(await leftOf('alice')).toEqual(zeroes(await leftOf('alice')));
    expect(await leftOf('bob')).toEqual(bobBefore);
    expect(await runtime.events.read({ userId: 'bob', sessionId: 'b1' }, 0)).toHaveLength(bobBefore.events ?? 1);

    // A later append starts from nothing: seq 1, no profile, nothing found.
    const again = await append('alice', 's1', [{ role: 'user', content: 'Hello, new here.' }]);
    expect(again.status).toBe(202);
    expect(json(again).accepted).toEqual([{ turnId: expect.any(String), seq: 1 }]);
    expect(await runtime.insights.getProfile('alice')).toBeNull();

    // And a second forget later forgets that too (the finished operation's history is replaced by the new run's).
    const second = await forgetUser('alice');
    const done = await completed(second);
    expect((done.output as { removed: Record<string, number> }).removed.events).toBe(1);
    expect(await leftOf('alice')).toEqual(zeroes(await leftOf('alice')));
  });

  it('survives a crash mid-purge: appends are refused meanwhile (409 forget_in_progress), and the resumed operation finishes with zero residuals', async () => {
    await seedUser('carol');
    // A runner that dies right after the store purge ran, before its completion is persisted.
    let crashed = false;
    const crashing = new LocalDurableRunner(functions, durable, {
      delayScale: 0,
      afterActivity: (name) => {
        if (name === 'activity-forget-stores' && !crashed) {
          crashed = true;
          throw new RunnerCrash();
        }
      },
    });
    useLocalOrchestrationClient(crashing);
    const operationId = await forgetUser('carol');
    const stopped = await crashing.waitFor(operationId);
    expect(crashed).toBe(true);
    expect(stopped.status).toBe('running');

    // The tombstone stays until the scan is clean: an append now is refused, and nothing of it is kept.
    const refused = await append('carol', 's9', [{ role: 'user', content: 'Racing the purge.' }]);
    expect(refused.status).toBe(409);
    expect(json(refused).code).toBe('forget_in_progress');
    expect(await runtime.events.lastSeq({ userId: 'carol', sessionId: 's9' })).toBe(0);
    const memory = await memoriesHandler(request('POST', 'v1/users/carol/memories', { ...params('carol'), body: { key: 'late', content: 'Stored while forgetting.' } }), context('x'));
    expect(memory.status).toBe(409);
    expect(json(memory).code).toBe('forget_in_progress');

    // A restart resumes the operation (the local host resumes unfinished instances at start).
    useLocalOrchestrationClient(runner);
    expect(await runner.resumeAll()).toContain(operationId);
    const done = await completed(operationId);
    const report = done.output as { residual: Record<string, number>; removed: Record<string, number>; verified: boolean };
    expect(report.verified).toBe(true);
    expect(report.residual).toEqual(zeroes(report.residual));
    expect(await leftOf('carol')).toEqual(zeroes(await leftOf('carol')));
    expect((await append('carol', 's9', [{ role: 'user', content: 'After the forget.' }])).status).toBe(202);
  });

  it('a forget in its grace wait says so (progress: the round and when the wait ends, ids, numbers and times only), after a restart too, and then completes', async () => {
    await appendTurns(runtime, { userId: 'gina', sessionId: 'g1' }, { turns: [{ role: 'user', content: 'I collect stamps.', turnId: 'g-1' }] });
    // A runner that waits its timers out (no delayScale): the grace, 600 s, outlasts the test, which stops it midway.
    const waiting = new LocalDurableRunner(functions, durable);
    useLocalOrchestrationClient(waiting);
    const operationId = await forgetUser('gina');
    const status = async () => json(await operationHandler(request('GET', `v1/operations/${operationId}`, { params: { operationId } }), context('x')));
    const held = await vi.waitFor(
      async () => {
        const op = await status();
        expect(op.progress).toMatchObject({ step: 'grace' });
        return op as { status: string; createdAt: string; updatedAt: string; progress: { until: string } };
      },
      { timeout: 60_000, interval: 20 },
    );
    expect(held).toMatchObject({ status: 'running', progress: { step: 'grace', round: 1, until: expect.any(String) } });
    expect(OperationProgress.strict().parse(held.progress)).toEqual(held.progress);
    // The fire time: the grace after the orchestration's clock at the clean scan, which lies between the start and now.
    const until = Date.parse(held.progress.until);
    expect(until).toBeGreaterThanOrEqual(Date.parse(held.createdAt) + 600_000);
    expect(until).toBeLessThanOrEqual(Date.parse(held.updatedAt) + 600_000);
    expect((await append('gina', 'g1', [{ role: 'user', content: 'During the wait.' }])).status).toBe(409);

    // Stopped in the wait, the runner kept the progress; a restart sets the timer again with the same fire time.
    await waiting.stop();
    expect(await durable.get(operationId)).toMatchObject({ status: 'running', customStatus: held.progress });
    useLocalOrchestrationClient(runner);
    expect(await runner.resumeAll()).toContain(operationId);
    const done = await completed(operationId);
    expect(done.history.filter((e) => e.EventType === EventType.TimerCreated).map((e) => e.FireAt)).toEqual([held.progress.until]);
    expect(done.output).toMatchObject({ rounds: 2, graceSeconds: 600 });
    expect(await status()).toMatchObject({ status: 'completed', progress: { step: 'purging', round: 2 } });
  });

  it('a failed operation (a store step failing past its retries) keeps the tombstone, and a new DELETE re-runs it to zero residuals', async () => {
    await appendTurns(runtime, { userId: 'erin', sessionId: 'e1' }, { turns: [{ role: 'user', content: 'I live in Lisbon.', turnId: 'e-1' }] });
    await projectSession(runtime, { userId: 'erin', sessionId: 'e1' });
    const purge = runtime.forgets.purge.bind(runtime.forgets);
    runtime.forgets.purge = () => Promise.reject(new Error('store unavailable'));
    try {
      const failed = await runner.waitFor(await forgetUser('erin'), 120_000);
      expect(failed.status).toBe('failed');
    } finally {
      runtime.forgets.purge = purge;
    }
    expect((await append('erin', 'e1', [{ role: 'user', content: 'Still here?' }])).status).toBe(409);
    const done = await completed(await forgetUser('erin'));
    expect((done.output as { residual: Record<string, number> }).residual).toEqual(zeroes((done.output as { residual: Record<string, number> }).residual));
    expect(await leftOf('erin')).toEqual(zeroes(await leftOf('erin')));
  });

  it('forgets one session: its events, read models, insights (and aggregates built from it), artifacts and blobs; the other sessions stay', async () => {
    await appendTurns(runtime, { userId: 'dan', sessionId: 'keep' }, { turns: [{ role: 'user', content: 'I keep a garden.', turnId: 'k-1' }] });
    await projectSession(runtime, { userId: 'dan', sessionId: 'keep' });
    const kept = (await runtime.events.read({ userId: 'dan', sessionId: 'keep' }, 0)).length;
    expect((await append('dan', 'gone', [{ role: 'user', content: 'My account number is 1234.' }, { role: 'tool', content: 'statement line; '.repeat(500) }])).status).toBe(202);
    await projectSession(runtime, { userId: 'dan', sessionId: 'gone' });
    const res = await sessionForgetHandler(request('DELETE', 'v1/users/dan/sessions/gone', params('dan', 'gone')), context('http-session-forget'));
    expect(res.status).toBe(202);
    const operationId = json(res).operationId as string;
    expect(operationId).toBe('forget-session:dan:gone');
    const done = await completed(operationId);
    const report = done.output as { residual: Record<string, number>; removed: Record<string, number> };
    expect(report.residual).toEqual(zeroes(report.residual));
    expect(report.removed.blobs).toBe(1);
    expect(await runtime.forgets.scan({ userId: 'dan', sessionId: 'gone' })).toEqual(zeroes(await runtime.forgets.scan({ userId: 'dan', sessionId: 'gone' })));
    expect(await runtime.events.read({ userId: 'dan', sessionId: 'gone' }, 0)).toEqual([]);
    expect(await runtime.events.read({ userId: 'dan', sessionId: 'keep' }, 0)).toHaveLength(kept);
    expect(await runtime.sessions.get({ userId: 'dan', sessionId: 'keep' })).not.toBeNull();
    expect(await runtime.detail.blobs!.existing({ prefix: 'dan/' })).toEqual([]);
  });

  it("forgets one session: its summary leaves the init block of a later session (context and events), and the report's scan covers it", async () => {
    const [earlier, later] = [{ userId: 'fay', sessionId: 'advice' }, { userId: 'fay', sessionId: 'later' }];
    await appendTurns(runtime, earlier, { turns: ADVISOR_SESSION.map((t, i) => ({ ...t, turnId: `a-${i}` })) });
    await projectSession(runtime, earlier);
    await completed(json(await endHandler(request('POST', 'v1/users/fay/sessions/advice/end', params('fay', 'advice')), context('http-session-end'))).operationId as string);
    const summary = (await runtime.sessions.get(earlier))?.doc.summary;
    expect(summary).toBeTruthy();
    expect((await append('fay', 'later', [{ role: 'user', content: 'Back again, about the plan.' }])).status).toBe(202);
    await projectSession(runtime, later);
    const seen = async () => {
      const ctx = await contextHandler(request('GET', 'v1/users/fay/sessions/later/context', params('fay', 'later')), context('http-context-get'));
      const events = await eventsHandler(request('GET', 'v1/users/fay/sessions/later/events', params('fay', 'later')), context('http-session-events-list'));
      expect([ctx.status, events.status]).toEqual([200, 200]);
      return { context: JSON.stringify(ctx.jsonBody), events: JSON.stringify(events.jsonBody) };
    };
    const before = await seen();
    expect(before.context).toContain(summary);
    expect(before.events).toContain(summary);
    const kept = (await runtime.events.read(later, 0)).length;

    const res = await sessionForgetHandler(request('DELETE', 'v1/users/fay/sessions/advice', params('fay', 'advice')), context('http-session-forget'));
    const report = (await completed(json(res).operationId as string)).output as { residual: Record<string, number>; removed: Record<string, number> };
    expect(report.residual).toMatchObject({ initEvents: 0, initDocuments: 0 });
    expect(report.residual).toEqual(zeroes(report.residual));
    expect(report.removed).toMatchObject({ initEvents: 1, initDocuments: 1 });
    const after = await seen();
    expect(after.context).not.toContain(summary);
    expect(after.events).not.toContain(summary);
    expect(await runtime.events.read(later, 0)).toHaveLength(kept);
    expect((await runtime.sessions.get(later))?.doc).toMatchObject({ turnCount: 1, init: { recentSessions: [] } });
  });
});
