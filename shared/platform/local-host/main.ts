import { startLocalHost } from './host.js';

const host = await startLocalHost();
const where = host.runtime.backend === 'pglite' ? ` at ${host.runtime.settings.MEMORY_DATA_DIR}` : '';
console.log(`Agent Memory Service listening on ${host.url} (storage: ${host.runtime.backend}${where}; models: ${host.runtime.chat.model}, ${host.runtime.embedder.model})`);
console.log(`Functions: ${host.functions.map((f) => f.name).join(', ')}. Ctrl+C stops.`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`${signal}: shutting down`);
    // A second signal, or a stop that overruns its deadline (work that ignores it), ends the process at once.
    process.once(signal, () => process.exit(130));
    setTimeout(() => {
      console.error('shutdown overran its deadline: exiting');
      process.exit(1);
    }, 10_000).unref();
    host.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`shutdown failed: ${error instanceof Error ? error.name : 'unknown'}`);
        process.exit(1);
      },
    );
  });
}
