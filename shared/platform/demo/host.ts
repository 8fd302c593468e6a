// The service the demo talks to: the one answering at MEMORY_URL, or, when nothing answers on a loopback address, a
// local host started here on a free port with its own temporary data folder (removed at the end), so the demo never
// writes into the user's memory.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_MEMORY_URL = 'http://127.0.0.1:7071/api';

export interface DemoHost {
  url: string;
  /** True when the demo started it (and stops it). */
  started: boolean;
  stop: () => Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const START_TIMEOUT_MS = 180_000;
const STOP_TIMEOUT_MS = 15_000;
/** Settings that would point a started host at the user's own stores; the demo's host keeps to its temporary folder. */
const STORE_SETTINGS = ['DATABASE_URL', 'STORAGE_BACKEND', 'COSMOS__accountEndpoint', 'COSMOS_KEY', 'ARTIFACTS_BLOB_ENDPOINT', 'ARTIFACTS_BLOB_CONNECTION_STRING', 'AZURITE_DATA_DIR'];

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(3000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

export async function findOrStartHost(url: string, log: (line: string) => void): Promise<DemoHost> {
  if (await answers(url)) return { url, started: false, stop: async () => {} };
  if (!LOOPBACK.has(new URL(url).hostname)) throw new Error(`No service answers at ${url}/health (MEMORY_URL); the demo starts a local host only for a loopback address`);

  // One temporary folder for everything the host keeps: PGlite in it, and Azurite next to PGlite (pglite-azurite).
  const dataDir = mkdtempSync(join(tmpdir(), 'memory-demo-'));
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  const env: NodeJS.ProcessEnv = { ...process.env, MEMORY_DATA_DIR: join(dataDir, 'pglite'), HOST: '127.0.0.1', PORT: '0', AUTH_MODE: 'open', LOG_LEVEL: process.env.LOG_LEVEL ?? 'warning' };
  for (const name of STORE_SETTINGS) delete env[name];
  log(`No service answers at ${url}: starting a local host (data in ${dataDir}, removed at the end).`);
  // node with tsx as a loader, as `npm start` does, so SIGTERM reaches the host itself. In its own process group, so a
  // Ctrl+C in the terminal reaches the demo alone, which then stops the host once (SIGTERM).
  const child = spawn(process.execPath, ['--import', 'tsx', 'shared/platform/local-host/main.ts'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const remove = () => rmSync(dataDir, { recursive: true, force: true });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    remove();
  };
  try {
    const started = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the local host did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
      const read = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-20_000);
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`the local host exited with ${code} before it listened:\n${output}`));
      });
    });
    return { url: started, started: true, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
