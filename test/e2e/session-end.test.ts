import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunnerCrash } from '../../shared/platform/local-host/durable-runner.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-e2e-end-'));
let host: Host;
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
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const api = (path: string, init?: RequestInit) => fetch(`${host.url}/${path}`, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } });
const post = (path: string, body?: unknown) => api(path, { method: 'POST', ...(body !== undefined && { body: JSON.stringify(body) }) });
const json = async <T = Record<string, unknown>>(res: Response) => (await res.json()) as T;

async function operation(operationId: string) {
  for (let i = 0; i < 600; i++) {
    const res = await api(`v1/operations/${encodeURIComponent(operationId)}`);
    const body = await json<{ status: string; output?: Record<string, unknown>; error?: string }>(res);
    if (body.status === 'completed' || body.status === 'failed') return body;
    await sleep(50);
  }
  throw new Error(`operation ${operationId} did not finish`);
}

const ADVISOR = [
  "Hi, I'm 52 and I'm married with three children.",
  'My goal is to retire at 62 and pay off the mortgage first.',
  "I'm a conservative investor, I don't want to lose money.",
  "I'm worried that inflation and healthcare costs could make us run out of money.",
];

async function seed(userId: string, sessionId: string, lines: string[]) {
  const turns = lines.flatMap((content, i) => [
    { role: 'user', content, turnId: `${sessionId}-u${i}` },
    { role: 'assistant', content: `Thank you, noted (${i}).`, turnId: `${sessionId}-a${i}` },
  ]);
  expect((await post(`v1/users/${userId}/sessions/${sessionId}/turns`, { turns })).status).toBe(202);
}

describe('session end and reflection on the local host', () => {
  it('end → operation completes → summary, insights, status; end twice → one run; reflection → profile; next context has both', async () => {
    const user = 'e2e-client';
    await seed(user, 's1', ADVISOR);
    const first = await post(`v1/users/${user}/sessions/s1/end`);
    expect(first.status).toBe(202);
    const { operationId } = await json<{ operationId: string }>(first);
    expect(operationId).toBe(`session-end:${user}:s1`);
    expect(await json(await post(`v1/users/${user}/sessions/s1/end`))).toEqual({ operationId });
    const done = await operation(operationId);
    expect(done).toMatchObject({ status: 'completed', output: { status: 'completed', reflectionStatus: 'processed', reflectionFlag: 'insight' } });

    const session = await json(await api(`v1/users/${user}/sessions/s1`));
    expect(session).toMatchObject({ status: 'completed', reflectionStatus: 'processed', chunkedThroughSeq: 8 });
    const { insights } = await json<{ insights: { category: string; id: string }[] }>(await api(`v1/users/${user}/insights?type=session`));
    expect(new Set(insights.map((i) => i.category))).toEqual(new Set(['demographics', 'financial_goals', 'risk_profile', 'concern']));
    // Ending twice ran once: one row in the runner's state, one reflect step in its history.
    const state = await host.runner.waitFor(operationId);
    expect(state.history.filter((e) => e.EventType === 4 && e.Name === 'activity-session-reflect')).toHaveLength(1);

    expect((await api(`v1/users/${user}/profile`)).status).toBe(404);
    const reflection = await json<{ operationId: string }>(await post(`v1/users/${user}/reflection`));
    expect(await operation(reflection.operationId)).toMatchObject({ status: 'completed', output: { updated: true, version: 1 } });
    const profile = await json<{ profile: string; sourceInsightIds: string[] }>(await api(`v1/users/${user}/profile`));
    expect(profile.profile).toMatch(/retire at 62/);
    expect(new Set(profile.sourceInsightIds)).toEqual(new Set(insights.map((i) => i.id)));
    const processed = await json<{ insights: unknown[] }>(await api(`v1/users/${user}/insights?status=processed`));
    expect(processed.insights).toHaveLength(insights.length);

    await seed(user, 's2', ['Hello again.']);
    for (let i = 0; i < 100 && (await json<{ pending: number }>(await api(`v1/users/${user}/sessions/s2`))).pending > 0; i++) await sleep(20);
    const context = await json<{ text: string; sections: { profile: string; recentSessions: { sessionId: string }[] } }>(await api(`v1/users/${user}/sessions/s2/context`));
    expect(context.sections.profile).toBe(profile.profile);
    expect(context.sections.recentSessions.map((s) => s.sessionId)).toEqual(['s1']);
    expect(context.text).toContain('### Key Insights');
  });

  it('a host killed in the middle of a session end resumes it at restart: it completes once, without duplicate insights', async () => {
    const user = 'e2e-crash';
    await seed(user, 'c1', ADVISOR);
    // The "kill": the runner dies right after the reflection wrote its insights, before the step was persisted.
    crashAfter = 'activity-session-reflect';
    const { operationId } = await json<{ operationId: string }>(await post(`v1/users/${user}/sessions/c1/end`));
    for (let i = 0; i < 400 && crashAfter !== undefined; i++) await sleep(25);
    expect(crashAfter).toBeUndefined();
    const interrupted = await json<{ status: string }>(await api(`v1/operations/${encodeURIComponent(operationId)}`));
    expect(interrupted.status).toBe('running');
    const before = await json<{ insights: { id: string }[] }>(await api(`v1/users/${user}/insights`));
    expect(before.insights.length).toBeGreaterThan(0);
    await host.stop();

    host = await start();
    const done = await operation(operationId);
    expect(done).toMatchObject({ status: 'completed', output: { status: 'completed', reflectionStatus: 'processed' } });
    const after = await json<{ insights: { id: string }[] }>(await api(`v1/users/${user}/insights`));
    expect(after.insights.map((i) => i.id).sort()).toEqual(before.insights.map((i) => i.id).sort());
    const session = await json(await api(`v1/users/${user}/sessions/c1`));
    expect(session).toMatchObject({ status: 'completed', reflectionStatus: 'processed' });
  });
});
