import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';

const dataDir = mkdtempSync(join(tmpdir(), 'memory-shutdown-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const [command, ...args] = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ');

function start() {
  const child = spawn(command === 'node' ? process.execPath : `node_modules/.bin/${command}`, args, {
    env: { ...process.env, MEMORY_DATA_DIR: dataDir, PORT: '0', PUMP_INTERVAL_MS: '20' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString());
  child.stderr.on('data', collect);
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      collect(chunk);
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}: ${output}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, url, exited, output: () => output };
}

const SESSIONS = 12;
const TURNS = 30;

describe('shutdown', () => {
  it('SIGTERM while the projection is busy: the host stops cleanly, and the next start projects what was left', async () => {
    const first = start();
    const url = await first.url;
    for (let s = 0; s < SESSIONS; s++) {
      const turns = Array.from({ length: TURNS }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `Session ${s}, turn ${i}: I like hiking in the Alps and reading about ships.`, turnId: `t${i}` }));
      const res = await fetch(`${url}/v1/users/busy/sessions/s${s}/turns`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ turns }) });
      expect(res.status).toBe(202);
    }
    const last = (await (await fetch(`${url}/v1/users/busy/sessions/s${SESSIONS - 1}`)).json()) as { pending: number };
    expect(last.pending).toBeGreaterThan(0); // the projection is still working through the backlog

    first.child.kill('SIGTERM');
    // Exit code 0 is the clean stop; the deadline fallback in main.ts exits with 1.
    expect(await first.exited).toBe(0);
    expect(first.output()).toContain('SIGTERM: shutting down');
    expect(first.output()).not.toContain('overran its deadline');

    const second = start();
    const again = await second.url;
    for (const deadline = Date.now() + 60_000; ; await sleep(100)) {
      const status = (await (await fetch(`${again}/v1/users/busy/sessions/s${SESSIONS - 1}`)).json()) as { pending: number; lastSeq: number };
      if (status.pending === 0 && status.lastSeq >= TURNS) break;
      if (Date.now() > deadline) throw new Error('the backlog was not projected after the restart');
    }
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 150_000);
});
