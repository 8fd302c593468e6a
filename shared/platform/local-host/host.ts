import type { AddressInfo } from 'node:net';
import { createRuntime, useRuntime } from '../composition.js';
import { settings } from '../config.js';
import { disableAzureRegistration, type ChangeFeedHandler, type TimerHandler } from '../functions.js';
import type { Db } from '../../adapters/postgres/db.js';
import { inBackground } from '../../adapters/postgres/priority-gate.js';
import { useLocalOrchestrationClient } from '../durable.js';
import { LocalDurableRunner, type RunnerOptions } from './durable-runner.js';
import { MemoryDurableStateStore, PostgresDurableStateStore } from './durable-state.js';
import { LocalTimer } from './timers.js';
import { loadFunctions } from './functions.js';
import { ChangeFeedPump } from './pump.js';
import { createLocalServer } from './server.js';
import { withLocalBlobStorage } from './azurite.js';

/** How long a shutdown waits for requests in flight, and then for the current batch or step, before abandoning them. */
export const SHUTDOWN_GRACE_MS = 2_000;

/** Waits for `work`, at most `ms` (it may go on in the background: the caller then ends what it waits on). */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** The timer function that serves the projection queue; the local host also runs it after each change-feed batch. */
const PROJECTION_QUEUE_FUNCTION = 'timer-projection-queue';

/** Runs `work` when woken, one run at a time; a wake during a run runs it once more when that run ends. */
export function wakeable(work: () => Promise<void>): { wake: () => void; stop: () => Promise<void> } {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const wake = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        await work();
      } while (again && !stopped);
    })().finally(() => (running = undefined));
  };
  return { wake, stop: async () => ((stopped = true), await running) };
}

/** `npm start`: the whole service on this machine — PGlite, offline models, the app's own functions over HTTP. */
export async function startLocalHost(overrides: { port?: number; durable?: RunnerOptions; timers?: boolean } = {}) {
  assertOpenOnlyOnLoopback(settings());
  // Blob Storage for large artifacts: Azurite, started here unless ARTIFACTS_BLOB_* points elsewhere.
  const { settings: config, azurite } = await withLocalBlobStorage(settings());
  const runtime = await createRuntime(config).catch(async (error: unknown) => {
    await azurite?.stop();
    throw error;
  });
  useRuntime(runtime);
  // An offline model is loaded while the functions load, so the first request after a start does not wait for it.
  const warming = runtime.embedder.warmUp?.().catch((error: unknown) => console.error(`The embedder's warm-up failed: ${error instanceof Error ? error.message : String(error)}`));
  disableAzureRegistration();
  const functions = await loadFunctions();

  // Orchestrations: the local durable runner, its state in PostgreSQL (memory on the Cosmos backend), resumed at start.
  const db = (runtime as { db?: Db }).db;
  const runner = new LocalDurableRunner(functions, db ? new PostgresDurableStateStore(db) : new MemoryDurableStateStore(), {
    log: (message) => console.error(message),
    ...overrides.durable,
  });
  useLocalOrchestrationClient(runner);
  const timers = functions.flatMap((f) =>
    f.trigger.kind === 'timer' ? [new LocalTimer(f.name, String((config as Record<string, unknown>)[f.trigger.scheduleSetting]), f.handler as TimerHandler)] : [],
  );

  // The projection queue's timer also fires, for low latency, right after each change-feed batch (and at start, for
  // sessions queued before a restart), one woken run at a time; a scheduled run may overlap one (claims are leases).
  const projectionRun = timers.find((t) => t.name === PROJECTION_QUEUE_FUNCTION);
  const projection = wakeable(async () => projectionRun?.fire());
  const pumps = functions.flatMap((f) =>
    f.trigger.kind === 'cosmosChangeFeed' && runtime.changeFeed
      ? [
          new ChangeFeedPump(runtime.changeFeed, f.handler as ChangeFeedHandler, {
            name: f.name,
            batchSize: config.PUMP_BATCH_SIZE,
            intervalMs: config.PUMP_INTERVAL_MS,
            afterBatch: projection.wake,
          }),
        ]
      : [],
  );
  const server = createLocalServer(functions, {
    // Routes built by httpHandler or httpEndpoint say their own limit (MAX_REQUEST_BYTES; artifact uploads more).
    maxBodyBytes: config.MAX_REQUEST_BYTES,
    bodyTimeoutMs: config.BODY_TIMEOUT_MS,
    hostNames: [config.HOST],
    // MCP (functions/http-mcp.ts) at /api/mcp as in Azure, and at /mcp where local clients have always found it.
    aliases: { '/mcp': '/api/mcp' },
    onHandled: (name) => (name === 'http-turns-append' || name === 'http-mcp') && pumps.forEach((p) => p.wake()),
  });
  await warming;
  await new Promise<void>((resolve) => server.listen(overrides.port ?? config.PORT, config.HOST, resolve));
  // Background work: on PGlite, requests' statements go first (priority-gate.ts). Started after listen, whose
  // connections must not inherit it.
  await inBackground(async () => {
    pumps.forEach((p) => p.start());
    projection.wake();
    await runner.resumeAll();
    if (overrides.timers !== false) timers.forEach((t) => t.start());
  });
  const { port } = server.address() as AddressInfo;

  let stopping: Promise<void> | undefined;
  /**
   * Stops within a few seconds whatever is running: requests in flight get `graceMs`, then their connections are cut;
   * the pumps, timers and orchestrations get `graceMs` to finish their current batch or step, after which it is abandoned
   * (its checkpoint is not saved, so the next start reads the batch again and the idempotent projection absorbs it), and
   * closing the runtime ends the model thread and the stores that abandoned work still waits on.
   */
  const stop = (graceMs = SHUTDOWN_GRACE_MS) =>
    (stopping ??= (async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      await within(closed, graceMs);
      server.closeAllConnections();
      await within(Promise.all([...timers.map((t) => t.stop()), runner.stop(), ...pumps.map((p) => p.stop()), projection.stop()]), graceMs);
      await runtime.close();
      await azurite?.stop();
    })());
  return { url: `http://${config.HOST}:${port}/api`, port, runtime, functions, runner, timers, stop };
}

const LOOPBACK = /^(127(\.\d{1,3}){3}|::1|\[::1\]|localhost)$/i;

/** AUTH_MODE=open serves every user's memory without credentials: only on a loopback address, and said at start. */
export function assertOpenOnlyOnLoopback(config: { AUTH_MODE: string; HOST: string }): void {
  if (config.AUTH_MODE !== 'open') return;
  if (!LOOPBACK.test(config.HOST)) {
    throw new Error(`Invalid settings: AUTH_MODE=open needs HOST on loopback (127.0.0.1, ::1, localhost), not ${config.HOST}; set AUTH_MODE=apikey or entra to listen elsewhere`);
  }
  console.warn(`WARNING: AUTH_MODE=open: no authentication, any local process can read and write every user's memory (listening on ${config.HOST} only)`);
}
