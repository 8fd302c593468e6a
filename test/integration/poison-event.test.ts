import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { handler as healthHandler } from '../../functions/http-health-get.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import { getContext } from '../../shared/application/get-context.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { invocationContext } from '../../shared/platform/local-host/invocation.js';
import { turnDraft } from '../support/builders.js';
import { context, json, memoryRuntime, request } from '../support/runtime.js';

const poisoned = { userId: 'poisoned', sessionId: 's1' };
const healthy = { userId: 'healthy', sessionId: 's1' };

describe('a poison event (a value the store refuses) is set aside, and projection goes on for everyone', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  });
  afterAll(() => runtime.close());

  const feed = async () => (await runtime.changeFeed!.readFeed(null, 500)).events;
  const project = async (retryCount: number) => projectHandler(await feed(), invocationContext('cosmos-events-project', {}, { retryCount, maxRetryCount: 3 }));

  it('the poison timestamp (year 0, which PostgreSQL cannot hold): other users are projected at once, the event is set aside on the last retry', async () => {
    // Written straight to the store, as an event recorded before the edge refused such dates would be.
    const poison = { type: 'TurnAppended' as const, data: { turnId: 'bad', role: 'user' as const, content: 'from year zero', timestamp: '0000-01-01T00:00:00.000Z' } };
    await runtime.events.append(poisoned, [turnDraft('before'), poison, turnDraft('after')], new Date());
    await runtime.events.append(healthy, [turnDraft('h1'), turnDraft('h2')], new Date());

    await expect(project(1)).rejects.toThrow();
    // The batch failed, but only the poisoned session did: the other user's turns are projected and searchable.
    expect(await getSessionStatus(runtime, healthy)).toMatchObject({ pending: 0, turnCount: 2, setAside: [] });
    expect((await getSessionStatus(runtime, poisoned)).pending).toBeGreaterThan(0);

    await project(3);
    const status = await getSessionStatus(runtime, poisoned);
    expect(status).toMatchObject({ pending: 0, turnCount: 3, setAside: [{ seq: 2, reason: expect.stringMatching(/^error 22/i) }] });
    expect(status.setAside[0]!.reason).not.toContain('0000');
    // Set aside from the turn index only: the context still shows the turn, read from the events.
    expect((await getContext(runtime, poisoned, {})).sections.turns.map((t) => t.turnId)).toEqual(['before', 'bad', 'after']);
    const health = json(await healthHandler(request('GET', 'health'), context('http-health-get')));
    expect(health.projection).toEqual({ setAsideEvents: 1 });

    // Redelivery changes nothing, and later turns of the session project as usual.
    await project(0);
    await runtime.events.append(poisoned, [turnDraft('later')], new Date());
    await project(0);
    expect(await getSessionStatus(runtime, poisoned)).toMatchObject({ pending: 0, turnCount: 4, setAside: [{ seq: 2 }] });
  });
});
