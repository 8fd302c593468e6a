import { describe, expect, it } from 'vitest';
import { inBackground, PriorityGate } from '../../../../shared/adapters/postgres/priority-gate.js';

describe('PriorityGate', () => {
  it('runs one operation at a time, a waiting request before waiting background work, each kind in arrival order', async () => {
    const gate = new PriorityGate();
    const order: string[] = [];
    let inFlight = 0;
    const op = (name: string) => async () => {
      inFlight += 1;
      expect(inFlight).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(name);
      inFlight -= 1;
      return name;
    };
    const first = inBackground(() => gate.run(op('background 1')));
    const queued = [
      inBackground(() => gate.run(op('background 2'))),
      gate.run(op('request 1')),
      inBackground(() => gate.run(op('background 3'))),
      gate.run(op('request 2')),
    ];
    expect(await Promise.all([first, ...queued])).toEqual(['background 1', 'background 2', 'request 1', 'background 3', 'request 2']);
    expect(order).toEqual(['background 1', 'request 1', 'request 2', 'background 2', 'background 3']);
  });

  it('passes on to the next operation when one fails', async () => {
    const gate = new PriorityGate();
    const failing = gate.run(async () => {
      throw new Error('refused');
    });
    const next = gate.run(async () => 'ran');
    await expect(failing).rejects.toThrow('refused');
    expect(await next).toBe('ran');
  });

  it('keeps background work marked across awaits and timers it starts', async () => {
    const gate = new PriorityGate();
    const order: string[] = [];
    const hold = gate.run(() => new Promise((resolve) => setTimeout(resolve, 10)));
    const later = inBackground(async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return gate.run(async () => order.push('background'));
    });
    await new Promise((resolve) => setTimeout(resolve, 3));
    const request = gate.run(async () => order.push('request'));
    await Promise.all([hold, later, request]);
    expect(order).toEqual(['request', 'background']);
  });

  it('lets the event loop turn before each background operation, so a backlog starves no request or timer', async () => {
    const gate = new PriorityGate();
    const order: string[] = [];
    // Operations that answer at once, as PGlite's do (on the calling thread): handed over in microtasks, all three ran
    // before the event loop could read a request.
    const work = [0, 1, 2].map((i) => inBackground(() => gate.run(async () => order.push(`background ${i}`))));
    setImmediate(() => order.push('event loop'));
    const request = new Promise((resolve) => setImmediate(() => resolve(gate.run(async () => order.push('request')))));
    await Promise.all([...work, request]);
    expect(order).toEqual(['background 0', 'event loop', 'request', 'background 1', 'background 2']);
  });
});
