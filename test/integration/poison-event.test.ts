import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { handler as healthHandler } from '../../functions/http-health-get.js';
import { handler as queueHandler } from '../../functions/timer-projection-queue.js';
import { PROJECTION_RETRIES, retryDelayMs } from '../../shared/application/projection-scheduler.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import { getContext } from '../../shared/application/get-context.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { invocationContext } from '../../shared/platform/local-host/invocation.js';
import { turnDraft } from '../support/builders.js';
import { atOffset, context, json, memoryRuntime, request } from '../support/runtime.js';

const poisoned = { userId: 'poisoned', sessionId: 's1' };
const healthy = { userId: 'healthy', sessionId: 's1' };

describe('a poison event (a value the store refuses) is set aside, and projection goes on for everyone', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  });
  afterAll(() => runtime.close());

  let cursor: string | null = null;
  /**
   * The change-feed handler on the events since the last call, as the pump would deliver them, then the projection
   * queue's timer, as the local host runs it after each batch (the init blocks the feed leaves queued are fixed there).
   */
  const project = async () => {
    const batch = await runtime.changeFeed!.readFeed(cursor, 500);
    cursor = batch.cursor ?? cursor;
    await projectHandler(batch.events, invocationContext('cosmos-events-project'));
    await queueHandler({} as never, invocationContext('timer-projection-queue'));
  };
  /** The projection queue's timer, `seconds` from now (a failed session waits for its backoff). */
  const serveQueue = (seconds: number) => atOffset(runtime, seconds, () => queueHandler({} as never, invocationContext('timer-projection-queue')));

  it('the poison timestamp (year 0, which PostgreSQL cannot hold): other users are projected at once, the event is set aside after the retries', async () => {
    // Written straight to the store, as an event recorded before the edge refused such dates would be.
    const poison = { type: 'TurnAppended' as const, data: { turnId: 'bad', role: 'user' as const, content: 'from year zero', timestamp: '0000-01-01T00:00:00.000Z' } };
    await runtime.events.append(poisoned, [turnDraft('before'), poison, turnDraft('after')], new Date());
    await runtime.events.append(healthy, [turnDraft('h1'), turnDraft('h2')], new Date());

    // The batch is handled (the feed moves on); only the poisoned session failed, and it stays queued with backoff.
    await project();
    expect(await getSessionStatus(runtime, healthy)).toMatchObject({ pending: 0, turnCount: 2, setAside: [] });
    expect((await getSessionStatus(runtime, poisoned)).pending).toBeGreaterThan(0);
    expect(await runtime.projectionQueue.size()).toBe(1);

    // Before its backoff is over it is not tried again; then it fails PROJECTION_RETRIES times in all, and the next
    // attempt sets the event aside.
    await serveQueue(0);
    let elapsed = 0;
    for (let failures = 1; failures < PROJECTION_RETRIES; failures++) {
      elapsed += retryDelayMs(failures) + 1;
      await serveQueue(elapsed);
      expect((await getSessionStatus(runtime, poisoned)).setAside).toEqual([]);
    }
    await serveQueue(elapsed + retryDelayMs(PROJECTION_RETRIES) + 1);
    expect(await runtime.projectionQueue.size()).toBe(0);
    const status = await getSessionStatus(runtime, poisoned);
    expect(status).toMatchObject({ pending: 0, turnCount: 3, setAside: [{ seq: 2, reason: expect.stringMatching(/^error 22/i) }] });
    expect(status.setAside[0]!.reason).not.toContain('0000');
    // Set aside from the turn index only: the context still shows the turn, read from the events.
    expect((await getContext(runtime, poisoned, {})).sections.turns.map((t) => t.turnId)).toEqual(['before', 'bad', 'after']);
    const health = json(await healthHandler(request('GET', 'health'), context('http-health-get')));
    expect(health.projection).toEqual({ setAsideEvents: 1 });

    // Redelivery changes nothing, and later turns of the session project as usual.
    cursor = null;
    await project();
    await runtime.events.append(poisoned, [turnDraft('later')], new Date());
    await project();
    expect(await getSessionStatus(runtime, poisoned)).toMatchObject({ pending: 0, turnCount: 4, setAside: [{ seq: 2 }] });
  });
});
