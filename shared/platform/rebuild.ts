import { parseArgs } from 'node:util';
import { rebuildProjections } from '../application/rebuild.js';
import { Id } from '../contracts/ids.js';
import { createRuntime } from './composition.js';

/**
 * `npm run rebuild -- [--user U]`: rebuilds the session read models of one user (or all) from the events, on the
 * store the settings name (the embedded PGlite folder, PostgreSQL or Cosmos DB). PGlite is one process's: stop the
 * local host first. Prints counts and the model calls made (the chat model is never called).
 */
const { values } = parseArgs({ options: { user: { type: 'string' } } });
const userId = values.user === undefined ? undefined : Id.parse(values.user);
const runtime = await createRuntime();
try {
  const started = performance.now();
  const report = await rebuildProjections(runtime, userId);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(`Rebuilt ${report.sessions} sessions of ${report.users} users from ${report.events} events in ${seconds} s (storage: ${runtime.backend})`);
  console.log(`Model calls: ${JSON.stringify(Object.fromEntries(Object.entries(runtime.meter.snapshot()).map(([op, t]) => [op, t.calls])))}`);
} finally {
  await runtime.close();
}
