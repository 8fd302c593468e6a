import * as df from 'durable-functions';
import type { OrchestrationContext, Task } from 'durable-functions';
import { describe, expect, it } from 'vitest';
import { openPglite } from '../../../shared/adapters/postgres/db.js';
import { migrate } from '../../../shared/adapters/postgres/migrations.js';
import type { FunctionDescriptor } from '../../../shared/platform/functions.js';
import { LocalDurableRunner, RunnerCrash } from '../../../shared/platform/local-host/durable-runner.js';
import { MemoryDurableStateStore, PostgresDurableStateStore } from '../../../shared/platform/local-host/durable-state.js';

/** A tiny app: a flaky activity, a counter activity, a parent that fans out to children. */
function app(calls: string[], failuresBeforeSuccess: number) {
  let flaky = 0;
  const retry = new df.RetryOptions(10, 3);
  const functions: FunctionDescriptor[] = [
    {
      name: 'flaky',
      trigger: { kind: 'activity' },
      handler: async (input: unknown) => {
        calls.push(`flaky:${String(input)}`);
        if (flaky++ < failuresBeforeSuccess) throw new Error(`flaky failure ${flaky}`);
        return `ok:${String(input)}`;
      },
    },
    {
      name: 'count',
      trigger: { kind: 'activity' },
      handler: async (input: unknown) => {
        calls.push(`count:${String(input)}`);
        return Number(input) * 10;
      },
    },
    {
      name: 'child',
      trigger: { kind: 'orchestration' },
      handler: function* (ctx: OrchestrationContext): Generator<Task, unknown, unknown> {
        return (yield ctx.df.callActivity('count', ctx.df.getInput())) as number;
      },
    },
    {
      name: 'parent',
      trigger: { kind: 'orchestration' },
      handler: function* (ctx: OrchestrationContext): Generator<Task, unknown, unknown> {
        const first = yield ctx.df.callActivityWithRetry('flaky', retry, 'x');
        const fan = (yield ctx.df.Task.all([1, 2, 3].map((n) => ctx.df.callActivity('count', n)))) as number[];
        const subs = (yield ctx.df.Task.all([4, 5].map((n) => ctx.df.callSubOrchestrator('child', n, `child-${n}`)))) as number[];
        return { first, fan, subs, at: ctx.df.currentUtcDateTime.toISOString() };
      },
    },
  ];
  return functions;
}

describe('local durable runner', () => {
  it('runs activities with retries, fan-out and sub-orchestrations to completion, once per instance id', async () => {
    const calls: string[] = [];
    const runner = new LocalDurableRunner(app(calls, 2), new MemoryDurableStateStore(), { delayScale: 0 });
    expect(await runner.start('parent', 'p1', null)).toEqual({ instanceId: 'p1', started: true });
    expect(await runner.start('parent', 'p1', null)).toEqual({ instanceId: 'p1', started: false });
    const done = await runner.waitFor('p1');
    expect(done.status, done.error).toBe('completed');
    expect(done.output).toMatchObject({ first: 'ok:x', fan: [10, 20, 30], subs: [40, 50] });
    expect(calls.filter((c) => c === 'flaky:x')).toHaveLength(3);
    expect(calls.filter((c) => c.startsWith('count:')).sort()).toEqual(['count:1', 'count:2', 'count:3', 'count:4', 'count:5']);
    expect((await runner.status('child-4'))?.status).toBe('completed');
    expect(await runner.status('p1')).toMatchObject({ operationId: 'p1', name: 'parent', status: 'completed' });
    await runner.stop();
  });

  it('marks the instance failed with the reason when retries are exhausted, and a failed instance may be started again', async () => {
    const calls: string[] = [];
    const runner = new LocalDurableRunner(app(calls, 3), new MemoryDurableStateStore(), { delayScale: 0 });
    await runner.start('parent', 'p2', null);
    const failed = await runner.waitFor('p2');
    expect(failed.status).toBe('failed');
    expect(failed.error).toMatch(/flaky failure 3/);
    expect(calls).toEqual(['flaky:x', 'flaky:x', 'flaky:x']);
    // The flaky activity succeeds from now on.
    expect((await runner.start('parent', 'p2', null)).started).toBe(true);
    expect((await runner.waitFor('p2')).status).toBe('completed');
    await runner.stop();
  });

  it('resumes from persisted state after a crash: activities already recorded do not run again', async () => {
    const db = await openPglite(undefined);
    await migrate(db);
    const store = new PostgresDurableStateStore(db);
    const calls: string[] = [];
    let crashed = false;
    const crashing = new LocalDurableRunner(app(calls, 0), store, {
      delayScale: 0,
      afterActivity: (name) => {
        // Die right after the first fan-out activity ran, before its batch was persisted.
        if (name === 'count' && !crashed) {
          crashed = true;
          throw new RunnerCrash();
        }
      },
    });
    await crashing.start('parent', 'p3', null);
    const stopped = await crashing.waitFor('p3');
    expect(stopped.status).toBe('running');
    await crashing.stop();
    expect(calls.filter((c) => c === 'flaky:x')).toHaveLength(1);

    const restarted = new LocalDurableRunner(app(calls, 0), store, { delayScale: 0 });
    expect(await restarted.resumeAll()).toEqual(['p3']);
    const done = await restarted.waitFor('p3');
    expect(done.status, done.error).toBe('completed');
    // The flaky step was persisted before the crash, so it ran once; the interrupted fan-out ran again.
    expect(calls.filter((c) => c === 'flaky:x')).toHaveLength(1);
    expect(done.output).toMatchObject({ fan: [10, 20, 30], subs: [40, 50] });
    await restarted.stop();
    await db.close();
  });
});
