import type { AddressInfo } from 'node:net';
import { createRuntime, useRuntime } from '../composition.js';
import { settings } from '../config.js';
import { disableAzureRegistration, type ChangeFeedHandler } from '../functions.js';
import { loadFunctions } from './functions.js';
import { ChangeFeedPump } from './pump.js';
import { createLocalServer } from './server.js';

/** `npm start`: the whole service on this machine — PGlite, offline models, the app's own functions over HTTP. */
export async function startLocalHost(overrides: { port?: number } = {}) {
  const config = settings();
  const runtime = await createRuntime(config);
  useRuntime(runtime);
  disableAzureRegistration();
  const functions = await loadFunctions();

  const pumps = functions.flatMap((f) =>
    f.trigger.kind === 'cosmosChangeFeed' && runtime.changeFeed
      ? [new ChangeFeedPump(runtime.changeFeed, f.handler as ChangeFeedHandler, { name: f.name, batchSize: config.PUMP_BATCH_SIZE, intervalMs: config.PUMP_INTERVAL_MS })]
      : [],
  );
  const server = createLocalServer(functions, {
    maxBodyBytes: config.MAX_REQUEST_BYTES,
    onHandled: (name) => name === 'http-turns-append' && pumps.forEach((p) => p.wake()),
  });
  await new Promise<void>((resolve) => server.listen(overrides.port ?? config.PORT, config.HOST, resolve));
  pumps.forEach((p) => p.start());
  const { port } = server.address() as AddressInfo;

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await Promise.all(pumps.map((p) => p.stop()));
      await runtime.close();
    })());
  return { url: `http://${config.HOST}:${port}/api`, port, runtime, functions, stop };
}
