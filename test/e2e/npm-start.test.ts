import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dataDir = mkdtempSync(join(tmpdir(), 'memory-start-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

// The command behind `npm start`, run directly: npm itself reports a signalled child as a failure.
// (It runs node with tsx as a loader rather than tsx's CLI, whose signal relay SIGKILLs a child that is busy computing.)
const [command, ...args] = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ');

/** Starts the service as `npm start` does and resolves with its API URL once it says where it listens. */
function start() {
  const child = spawn(command === 'node' ? process.execPath : `node_modules/.bin/${command}`, args, { env: { ...process.env, MEMORY_DATA_DIR: dataDir, PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, url, exited, output: () => output };
}

describe('npm start', () => {
  it('serves the API, stops cleanly on SIGTERM and SIGINT, and keeps its data across restarts', async () => {
    const first = start();
    const url = await first.url;
    const res = await fetch(`${url}/v1/users/u/sessions/s/turns`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ turns: [{ role: 'user', content: 'remember me', turnId: 'keep' }] }),
    });
    expect(res.status).toBe(202);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('SIGTERM: shutting down');

    const second = start();
    const again = await second.url;
    const page = (await (await fetch(`${again}/v1/users/u/sessions/s/events`)).json()) as { events: { data: { turnId?: string } }[] };
    expect(page.events[0]!.data.turnId).toBe('keep');
    second.child.kill('SIGINT');
    expect(await second.exited).toBe(0);
  }, 90_000);
});
