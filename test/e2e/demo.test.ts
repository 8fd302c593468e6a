import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';

// The command behind `npm run demo`, run directly (npm adds nothing but its own output).
const [command, ...args] = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { demo: string } }).scripts.demo.split(' ');

/** Runs the demo to its end with MEMORY_URL set; resolves with its exit code and everything it printed. */
function demo(memoryUrl: string): Promise<{ code: number | null; output: string }> {
  const child = spawn(command === 'node' ? process.execPath : `node_modules/.bin/${command}`, args, { env: { ...process.env, MEMORY_URL: memoryUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, output })));
}

/** A loopback port nothing listens on (taken from the system, then released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

describe('npm run demo', () => {
  it('starts a local host when none answers, runs the three scenarios with every check passing, and removes its data', async () => {
    const { code, output } = await demo(`http://127.0.0.1:${await freePort()}/api`);
    expect(output, output).toContain('(started by the demo)');
    for (const headline of [
      'Scenario 1: long context with memory retrieval from past sessions',
      'Scenario 2: reflection-powered session initialisation',
      'Scenario 3: real-time context compression',
    ]) {
      expect(output).toContain(headline);
    }
    // What memory did, narrated: a fact with its provenance, the profile, the context before and after compression.
    expect(output).toMatch(/recall "Biscuit": fact #\d .*session dog-and-trip, turn dog-and-trip-u\d/);
    expect(output).toMatch(/┌─ profile v1, from \d+ insights/);
    expect(output).toMatch(/┌─ context before compression/);
    expect(output).not.toContain('FAILED');
    expect(output).toMatch(/All \d+ checks passed/);
    expect(code, output).toBe(0);
    const dataDir = /starting a local host \(data in (\S+),/.exec(output)?.[1];
    expect(dataDir).toBeDefined();
    expect(existsSync(dataDir!)).toBe(false);
  }, 240_000);

  it('exits 1 and says why when MEMORY_URL names a service that does not answer and is not on loopback', async () => {
    const { code, output } = await demo('http://192.0.2.1:9/api');
    expect(output).toContain('The demo could not run: No service answers at http://192.0.2.1:9/api/health');
    expect(code).toBe(1);
  }, 60_000);
});
