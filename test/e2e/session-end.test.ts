import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryClient } from '../../shared/client/index.js';
import { RunnerCrash } from '../../shared/platform/local-host/durable-runner.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-e2e-end-'));
let host: Host;
/** The TypeScript client, one attempt per request (a retried 429/503 must not hide a failure); renewed with the host. */
let memory: MemoryClient;
let crashAfter: string | undefined;

const start = () =>
  startLocalHost({
    port: 0,
    timers: false,
    durable: {
      delayScale: 0,
      afterActivity: (name) => {
        if (name === crashAfter) {
          crashAfter = undefined;
          throw new RunnerCrash();
        }
      },
    },
  });

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  host = await start();
  memory = new MemoryClient({ baseUrl: host.url, retry: { maxAttempts: 1 } });
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const operation = (operationId: string) => memory.waitForOperation(operationId, { intervalMs: 50, maxPolls: 600 });

const ADVISOR = [
  "Hi, I'm 52 and I'm married with three children.",
  'My goal is to retire at 62 and pay off the mortgage first.',
  "I'm a conservative investor, I don't want to lose money.",
  "I'm worried that inflation and healthcare costs could make us run out of money.",
];

async function seed(userId: string, sessionId: string, lines: string[]) {
  const turns = lines.flatMap((content, i) => [
    { role: 'user' as const, content, turnId: `${sessionId}-u${i}` },
    { role: 'assistant' as const, content: `Thank you, noted (${i}).`, turnId: `${sessionId}-a${i}` },
  ]);
  expect((await memory.appendTurns(userId, sessionId, turns)).accepted).toHaveLength(turns.length);
}

describe('session end and reflection on the local host', () => {
  it('end → operation completes → summary, insights, status; end twice → one run; reflection → profile; next context has both', async () => {
    const user = 'e2e-client';
    await seed(user, 's1', ADVISOR);
    const { operationId } = await memory.endSession(user, 's1');
    expect(operationId).toBe(`session-end:${user}:s1`);
    expect(await memory.endSession(user, 's1')).toEqual({ operationId });
    const done = await operation(operationId);
    expect(done).toMatchObject({ status: 'completed', output: { status: 'completed', reflectionStatus: 'processed', reflectionFlag: 'insight' } });

    const session = await memory.getSession(user, 's1');
    expect(session).toMatchObject({ status: 'completed', reflectionStatus: 'processed', chunkedThroughSeq: 8 });
    const { insights } = await memory.listInsights(user, { type: 'session' });
    expect(new Set(insights.map((i) => i.category))).toEqual(new Set(['demographics', 'financial_goals', 'risk_profile', 'concern']));
    // Ending twice ran once: one row in the runner's state, one reflect step in its history.
    const state = await host.runner.waitFor(operationId);
    expect(state.history.filter((e) => e.EventType === 4 && e.Name === 'activity-session-reflect')).toHaveLength(1);

    await expect(memory.getProfile(user)).rejects.toMatchObject({ name: 'MemoryServiceError', status: 404, code: 'not_found' });
    const reflection = await memory.startReflection(user);
    expect(await operation(reflection.operationId)).toMatchObject({ status: 'completed', output: { updated: true, version: 1 } });
    const profile = await memory.getProfile(user);
    expect(profile.profile).toMatch(/retire at 62/);
    expect(new Set(profile.sourceInsightIds)).toEqual(new Set(insights.map((i) => i.id)));
    const processed = await memory.listInsights(user, { status: 'processed' });
    expect(processed.insights).toHaveLength(insights.length);

    await seed(user, 's2', ['Hello again.']);
    for (let i = 0; i < 100 && (await memory.getSession(user, 's2')).pending > 0; i++) await sleep(20);
    const context = await memory.getContext(user, 's2');
    expect(context.sections.profile).toBe(profile.profile);
    expect(context.sections.recentSessions.map((s) => s.sessionId)).toEqual(['s1']);
    expect(context.text).toContain('### Key Insights');
  });

  it('a host killed in the middle of a session end resumes it at restart: it completes once, without duplicate insights', async () => {
    const user = 'e2e-crash';
    await seed(user, 'c1', ADVISOR);
    // The "kill": the runner dies right after the reflection wrote its insights, before the step was persisted.
    crashAfter = 'activity-session-reflect';
    const { operationId } = await memory.endSession(user, 'c1');
    for (let i = 0; i < 400 && crashAfter !== undefined; i++) await sleep(25);
    expect(crashAfter).toBeUndefined();
    const interrupted = await memory.getOperation(operationId);
    expect(interrupted.status).toBe('running');
    const before = await memory.listInsights(user);
    expect(before.insights.length).toBeGreaterThan(0);
    await host.stop();

    host = await start();
    memory = new MemoryClient({ baseUrl: host.url, retry: { maxAttempts: 1 } });
    const done = await operation(operationId);
    expect(done).toMatchObject({ status: 'completed', output: { status: 'completed', reflectionStatus: 'processed' } });
    const after = await memory.listInsights(user);
    expect(after.insights.map((i) => i.id).sort()).toEqual(before.insights.map((i) => i.id).sort());
    const session = await memory.getSession(user, 'c1');
    expect(session).toMatchObject({ status: 'completed', reflectionStatus: 'processed' });
  });
});
