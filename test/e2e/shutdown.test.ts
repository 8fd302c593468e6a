import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';

const dataDir = mkdtempSync(join(tmpdir(), 'memory-shutdown-'));
interface Host {
  child: ChildProcess;
  url: Promise<string>;
  exited: Promise<number | null>;
  output: () => string;
}
const hosts: Host[] = [];
afterAll(async () => {
  // A host left running by a failed assertion is stopped (it stops its Azurite), then the folders go (Azurite's too).
  for (const host of hosts) if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill('SIGTERM');
  await Promise.all(hosts.map((h) => h.exited));
  for (const dir of [dataDir, `${dataDir}-azurite`]) rmSync(dir, { recursive: true, force: true });
});

const [command, ...args] = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(' ');

function start(): Host {
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
  const host: Host = { child, url, exited, output: () => output };
  hosts.push(host);
  return host;
}

const SESSIONS = 12;
const TURNS = 30;
/**
 * The restarted host fails the test only when its projection makes no progress for this long (a stuck or lost backlog),
 * never for being slow: under a full parallel suite on 2 cores a loaded host projects the backlog, just later.
 */
const STALL_MS = 120_000;

type Status = { pending: number; lastSeq: number; projectedThroughSeq: number; chunkedThroughSeq: number };

/** Waits until every session's backlog is projected (turns written and windows decided), polling its progress. */
async function untilProjected(url: string): Promise<void> {
  let progress = -1;
  for (let since = Date.now(); ; await sleep(250)) {
    const statuses = await Promise.all(Array.from({ length: SESSIONS }, async (_, s) => (await (await fetch(`${url}/v1/users/busy/sessions/s${s}`)).json()) as Status));
    if (statuses.every((st) => st.pending === 0 && st.lastSeq >= TURNS)) return;
    // Checkpoints only move forward, so their sum grows with every slice written or window decided.
    const now = statuses.reduce((sum, st) => sum + st.projectedThroughSeq + st.chunkedThroughSeq, 0);
    if (now > progress) [progress, since] = [now, Date.now()];
    else if (Date.now() - since > STALL_MS) throw new Error(`the backlog was not projected after the restart: no progress for ${STALL_MS / 1000} s`);
  }
}

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
    await untilProjected(again);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  }, 900_000);
});
