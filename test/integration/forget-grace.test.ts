import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { requestForget } from '../../shared/application/forget.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import { useRuntime, type Runtime } from '../../shared/platform/composition.js';
import { useLocalOrchestrationClient } from '../../shared/platform/durable.js';
import { LocalDurableRunner } from '../../shared/platform/local-host/durable-runner.js';
import { MemoryDurableStateStore } from '../../shared/platform/local-host/durable-state.js';
import { loadFunctions } from '../../shared/platform/local-host/functions.js';
import type { FunctionDescriptor } from '../../shared/platform/functions.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { gate, heldProjector, raceBackends, total } from '../support/forget-race.js';

const cosmos = useCosmosFake();
let functions: FunctionDescriptor[];
beforeAll(async () => {
  functions = await loadFunctions();
}, 120_000);

/**
 * A writer whose process dies between its write and its check after it, the write landing after the forget's first
 * clean scan: nothing runs the check (on Cosmos DB the enlisting or the read-back), so only the forget can remove it.
 * The whole forget runs through the orchestrator on the local durable runner (FORGET_GRACE_SECONDS at its default,
 * 600; the runner's `delayScale: 0` fires the timer at once).
 */
describe.each(raceBackends(cosmos))('a writer that dies before its check, its write landing after the forget scanned: $name', ({ name, open }) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await open();
    useRuntime(runtime);
  }, 120_000);
  afterAll(async () => {
    useLocalOrchestrationClient(undefined);
    await runtime?.close();
  });
  const postgres = name.startsWith('PostgreSQL');

  /**
   * Runs the session's forget to its end; `hooks['<activity>#<n>']` runs right after the n-th run of that activity
   * (`activity-forget-verify#1`: after the first verification scan).
   */
  async function forget(key: SessionKey, hooks: Record<string, () => Promise<unknown>>) {
    const runs = new Map<string, number>();
    const runner = new LocalDurableRunner(functions, new MemoryDurableStateStore(), {
      delayScale: 0,
      afterActivity: async (activity) => {
        runs.set(activity, (runs.get(activity) ?? 0) + 1);
        await hooks[`${activity}#${runs.get(activity)}`]?.();
      },
    });
    useLocalOrchestrationClient(runner);
    const { operationId } = await requestForget(runner, key);
    const done = await runner.waitFor(operationId, 120_000);
    await runner.stop();
    expect(done.status, done.error).toBe('completed');
    return { report: done.output as { rounds: number; graceSeconds: number }, scans: runs.get('activity-forget-verify') };
  }

  /** An append whose check before the write comes before the tombstone, whose turn lands on `lands.release()`, and whose process dies before its check after the write (`died.reached`). */
  function dyingAppend(key: SessionKey) {
    const lands = gate();
    const died = gate();
    const forgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
      forgetting: async (k: SessionKey) => {
        const seen = await runtime.forgets.forgetting(k);
        await lands.hold();
        return seen;
      },
      enlist: () => died.hold().then(() => false),
    });
    const writing = appendTurns({ ...runtime, forgets }, key, { turns: [{ role: 'user', content: 'LATE-TURN about the pension', turnId: 't-late' }] }).then(
      () => null,
      (error: unknown) => error,
    );
    return { lands, died, writing };
  }

  it("a client's append checked before the tombstone, its turn written after the first clean scan, its process gone before its check: nothing is left", async () => {
    const key = { userId: 'u-grace-append', sessionId: 'gone' };
    const { lands, died, writing } = dyingAppend(key);
    await lands.reached;
    const { report, scans } = await forget(key, {
      'activity-forget-verify#1': async () => {
        lands.release();
        // Cosmos DB: the turn is written and the writer dies; PostgreSQL's guard refuses the write under the tombstone.
        await Promise.race([died.reached, writing]);
      },
    });
    expect(scans).toBe(report.rounds);
    if (postgres) expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    // On main's code (Cosmos DB) the forget cleared its tombstone after the first clean scan and the turn stayed.
    expect(await runtime.events.read(key, 0)).toEqual([]);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    // Cosmos DB: the round after the wait purged the turn, so the forget waited again before the round that cleared.
    expect(report).toMatchObject({ graceSeconds: 600, rounds: postgres ? 2 : 3 });
  });

  it('a projector that read the events before the purge, writes after the first clean scan and dies before its check: nothing is left', async () => {
    const key = { userId: 'u-grace-projector', sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
    // Held before its embeddings (it has read the events), then, after its session document is written, for good.
    const { embedding, written, embedder, sessions } = heldProjector(runtime);
    const projecting = projectSession({ ...runtime, embedder, sessions }, key).then(
      () => null,
      (error: unknown) => error,
    );
    await embedding.reached;
    const { report } = await forget(key, {
      'activity-forget-verify#1': async () => {
        embedding.release();
        // Cosmos DB: the document is written and the projector dies; PostgreSQL's guard refuses its writes.
        await Promise.race([written.reached, projecting]);
      },
    });
    if (postgres) expect(await projecting).toMatchObject({ code: 'AM410' });
    // On main's code (Cosmos DB) the session document the projector wrote stayed.
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    expect(report).toMatchObject({ graceSeconds: 600, rounds: postgres ? 2 : 3 });
  });

  it("a projector that reads a dead append's late turn during the wait, writes after the round that follows it and dies before its check: the forget waits again, and nothing is left", async () => {
    const key = { userId: 'u-grace-chain', sessionId: 'gone' };
    const { lands, died, writing } = dyingAppend(key);
    await lands.reached;
    let projector: ReturnType<typeof heldProjector> | undefined;
    let projecting: Promise<unknown> = Promise.resolve();
    const { report } = await forget(key, {
      'activity-forget-verify#1': async () => {
        lands.release();
        await Promise.race([died.reached, writing]);
      },
      // After the wait, before the round's store purge: the projector reads the late turn (Cosmos DB) and is held
      // before its embeddings; on PostgreSQL there is nothing to read.
      'activity-forget-blobs#2': async () => {
        projector = heldProjector(runtime);
        projecting = projectSession({ ...runtime, embedder: projector.embedder, sessions: projector.sessions }, key).catch((error: unknown) => error);
        await Promise.race([projector.embedding.reached, projecting]);
      },
      // That round purged the turn and scanned clean; now the projector writes, and dies.
      'activity-forget-verify#2': async () => {
        projector!.embedding.release();
        await Promise.race([projector!.written.reached, projecting]);
      },
    });
    expect(await runtime.events.read(key, 0)).toEqual([]);
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    // Cosmos DB: the round after the first wait purged the turn, the one after the second the projector's document
    // (a wait after the first clean scan and one more round would have cleared the tombstone and left it).
    expect(report).toMatchObject({ graceSeconds: 600, rounds: postgres ? 2 : 4 });
  });
});
