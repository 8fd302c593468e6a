import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { azuriteConnectionString } from '../../adapters/blob/azure-blob.js';

export interface RunningAzurite {
  /** e.g. http://127.0.0.1:10000 */
  blobEndpoint: string;
  stop(): Promise<void>;
}

/**
 * Starts Azurite's blob service as a child process (the `azurite` package, a dev dependency of the local host) with
 * its data under `location` (memory only without one); port 0 (the default) picks a free port. Resolves when Azurite reports the address it listens on.
 */
export async function startAzurite(options: { location?: string; host?: string; port?: number; timeoutMs?: number }): Promise<RunningAzurite> {
  if (options.location) mkdirSync(options.location, { recursive: true });
  const storage = options.location ? ['--location', options.location] : ['--inMemoryPersistence'];
  const require = createRequire(import.meta.url);
  const main = require.resolve('azurite/dist/src/blob/main.js');
  const child = spawn(
    process.execPath,
    [main, '--blobHost', options.host ?? '127.0.0.1', '--blobPort', String(options.port ?? 0), ...storage, '--silent', '--disableTelemetry', '--skipApiVersionCheck', '--loose'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const blobEndpoint = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => fail(new Error('Azurite did not start in time')), options.timeoutMs ?? 30_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      child.kill();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /successfully listens on (http:\/\/[^\s]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        child.stdout?.off('data', onData);
        resolve(match[1]!.replace(/\/$/, ''));
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => fail(new Error(`Azurite exited (${code}) before listening: ${output.slice(-300)}`)));
  });
  // Keep the pipes drained so a chatty Azurite never blocks.
  child.stdout?.resume();
  child.stderr?.resume();
  // A process that exits without stop() (a crash, process.exit) does not leave Azurite running behind it.
  const killOnExit = () => child.kill();
  process.once('exit', killOnExit);
  return {
    blobEndpoint,
    stop: async () => {
      process.off('exit', killOnExit);
      await stopChild(child);
    },
  };
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * The settings with Blob Storage filled in for a local process: unchanged when ARTIFACTS_BLOB_* is set, else an
 * embedded Azurite is started (data beside the PGlite folder, memory only for memory://) and its connection used.
 */
export async function withLocalBlobStorage<S extends LocalBlobSettings>(config: S): Promise<{ settings: S; azurite?: RunningAzurite }> {
  if (config.ARTIFACTS_BLOB_CONNECTION_STRING || config.ARTIFACTS_BLOB_ENDPOINT) return { settings: config };
  const location = config.AZURITE_DATA_DIR ?? azuriteDirFor(config.MEMORY_DATA_DIR);
  const azurite = await startAzurite({ port: config.AZURITE_BLOB_PORT, ...(location && { location }) });
  return { settings: { ...config, ARTIFACTS_BLOB_CONNECTION_STRING: azuriteConnectionString(azurite.blobEndpoint) }, azurite };
}

interface LocalBlobSettings {
  ARTIFACTS_BLOB_CONNECTION_STRING?: string | undefined;
  ARTIFACTS_BLOB_ENDPOINT?: string | undefined;
  AZURITE_DATA_DIR?: string | undefined;
  AZURITE_BLOB_PORT: number;
  MEMORY_DATA_DIR: string;
}

/** `.data/pglite` → `.data/azurite`; another folder → `<folder>-azurite`; memory:// → none (memory only). */
export function azuriteDirFor(memoryDataDir: string): string | undefined {
  if (memoryDataDir.startsWith('memory://')) return undefined;
  const trimmed = memoryDataDir.replace(/[/\\]+$/, '');
  return /[/\\]\.data[/\\]pglite$/.test(trimmed) ? trimmed.replace(/pglite$/, 'azurite') : `${trimmed}-azurite`;
}
