import type { Database } from '@azure/cosmos';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { CosmosSlotStore } from '../../shared/adapters/cosmos/slots.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { finishForget, purgeStores, verifyForget } from '../../shared/application/forget.js';
import type { ForgetScope, ForgetStore } from '../../shared/application/forget-ports.js';
import type { OrchestrationClient } from '../../shared/application/operation-ports.js';
import type { SessionStore } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { embedderWith, memoryRuntime } from './runtime.js';

/**
 * The two backends a forget race is played on: PGlite (its guard triggers refuse writes under a tombstone) and the
 * Cosmos wire fake (nothing refuses them; the writers check after their writes). `cosmos`: the file's useCosmosFake().
 */
export const raceBackends = (cosmos: () => Promise<Database>): { name: string; open: () => Promise<Runtime> }[] => [
  { name: 'PostgreSQL (PGlite)', open: () => memoryRuntime() },
  {
    name: 'Cosmos DB (wire fake)',
    open: async () => {
      const base = await memoryRuntime();
      const database = await cosmos();
      const runtime: Runtime = {
        ...base,
        ...cosmosStores(database, { atomicBatches: false }),
        backend: 'cosmos',
        detail: { ...base.detail, artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)) },
        slots: new CosmosSlotStore(database.container(COSMOS_CONTAINERS.slots.name)),
        forgets: new CosmosForgetStore(database),
        close: () => base.close(),
      };
      delete (runtime as Partial<Runtime>).changeFeed;
      return runtime;
    },
  },
];

/** Holds the first caller that reaches it until released. */
export function gate() {
  let release!: () => void;
  let entered!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  let used = false;
  const hold = async () => {
    if (used) return;
    used = true;
    entered();
    await open;
  };
  return { hold, reached, release };
}

/**
 * A projector's stores with two gates: `embedding` holds its first embedding call (before anything it derives is
 * written), `written` holds it right after its first session document is written.
 */
export function heldProjector(runtime: Runtime) {
  const embedding = gate();
  const written = gate();
  const embedder = embedderWith(runtime.embedder, async (texts) => (await embedding.hold(), runtime.embedder.embed(texts)));
  const sessions: SessionStore = Object.assign(Object.create(runtime.sessions) as SessionStore, {
    put: async (...args: Parameters<SessionStore['put']>) => {
      const result = await runtime.sessions.put(...args);
      await written.hold();
      return result;
    },
  });
  return { embedding, written, embedder, sessions };
}

/** The runtime's forget store, holding its caller right after `markForgetting` records a tombstone (`ownTombstone`). */
export function heldAtOwnTombstone(runtime: Runtime) {
  const ownTombstone = gate();
  const forgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
    markForgetting: async (...args: Parameters<ForgetStore['markForgetting']>) => {
      const recorded = await runtime.forgets.markForgetting(...args);
      if (recorded) await ownTombstone.hold();
      return recorded;
    },
  });
  return { forgets, ownTombstone };
}

/**
 * A projection of `key` started and held before its embeddings (`embedding`), and held again right after it records
 * its own tombstone (`ownTombstone`), which it does once a forget has overtaken it; `projecting` settles when it ends.
 */
export async function projectorHeldAtItsTombstone(runtime: Runtime, key: SessionKey) {
  const { forgets, ownTombstone } = heldAtOwnTombstone(runtime);
  const { embedding, written, embedder, sessions } = heldProjector(runtime);
  written.release();
  const projecting = projectSession({ ...runtime, embedder, sessions, forgets }, key);
  await embedding.reached;
  return { projecting, embedding, ownTombstone };
}

export const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

/** No durable histories in these races: they are between a writer and the forget's store steps. */
const orchestrations: OrchestrationClient = { start: async (_n, instanceId) => ({ instanceId, started: false }), status: async () => null, purge: async () => 0 };

/** The forget's scan of the session or the user (its proof), with the tombstone's version read before it. */
export const scanSession = (runtime: Runtime, key: ForgetScope) => verifyForget({ ...runtime, orchestrations }, { ...key, sessionIds: key.sessionId === undefined ? [] : [key.sessionId], blobNames: [] });

/**
 * The rest of a session's (or a user's) forget as the workflow runs it, after a clean scan made under `tombstone`:
 * clear the tombstone scanned, or (a writer enlisted since) purge and scan again, each scan clean. Returns the rounds run.
 */
export async function finishRounds(runtime: Runtime, key: ForgetScope, tombstone: string | null): Promise<number> {
  for (let round = 1; ; round++) {
    if ((await finishForget(runtime, { ...key, removed: 0, tombstone })).cleared) return round;
    tombstone = await purgeAndScan(runtime, key, round + 1);
  }
}

/** The forget's store step from here to its end (`purgeStores`, a clean scan, `finishRounds`); the rounds run. */
export async function forgetToEnd(runtime: Runtime, key: ForgetScope): Promise<number> {
  return finishRounds(runtime, key, await purgeAndScan(runtime, key));
}

/** One round's purge and scan, which must find nothing; the tombstone's version the scan was made under. */
export async function purgeAndScan(runtime: Runtime, key: ForgetScope, round = 1): Promise<string | null> {
  await purgeStores(runtime, key);
  const scan = await scanSession(runtime, key);
  if (scan.total !== 0) throw new Error(`round ${round}: the scan found ${JSON.stringify(scan.residual)}`);
  return scan.tombstone;
}
