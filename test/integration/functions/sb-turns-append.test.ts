import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler } from '../../../functions/sb-turns-append.js';
import type { Runtime } from '../../../shared/platform/composition.js';
import { context, memoryRuntime } from '../../support/runtime.js';

let runtime: Runtime;
beforeAll(async () => {
  runtime = await memoryRuntime();
});
afterAll(() => runtime.close());

const key = { userId: 'sb-user', sessionId: 'sb-session' };
const delivery = (messageId: string, deliveryCount = 1) => context('sb-turns-append', { messageId, deliveryCount });

describe('sb-turns-append', () => {
  it('appends the turns of a message, naming unnamed turns after the message id', async () => {
    await handler({ type: 'append', ...key, turns: [{ role: 'user', content: 'hello' }, { role: 'assistant', content: 'hi', turnId: 'own-id' }] }, delivery('m-1'));
    const events = await runtime.events.read(key, 0);
    expect(events.map((e) => e.type === 'TurnAppended' && e.data.turnId)).toEqual(['m-1.0', 'own-id']);
  });

  it('records a redelivered message once', async () => {
    const message = { type: 'append', ...key, turns: [{ role: 'user', content: 'again' }] };
    await handler(message, delivery('m-2'));
    await handler(message, delivery('m-2', 2));
    const events = await runtime.events.read(key, 0);
    expect(events.filter((e) => e.type === 'TurnAppended' && e.data.turnId === 'm-2.0')).toHaveLength(1);
  });

  it('accepts the body as a JSON string too', async () => {
    await handler(JSON.stringify({ type: 'append', ...key, turns: [{ role: 'user', content: 'as text' }] }), delivery('m-3'));
    expect((await runtime.events.readLastTurns(key, 1))[0]!.data.turnId).toBe('m-3.0');
  });

  it('accepts an assistant turn of only tool calls with null content, stored as ""', async () => {
    const toolCalls = [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }];
    await handler({ type: 'append', ...key, turns: [{ role: 'assistant', content: null, toolCalls }] }, delivery('m-4'));
    expect((await runtime.events.readLastTurns(key, 1))[0]!.data).toMatchObject({ turnId: 'm-4.0', role: 'assistant', content: '', toolCalls });
  });

  it('throws for null content on a user turn, so the platform dead-letters it', async () => {
    await expect(handler({ type: 'append', ...key, turns: [{ role: 'user', content: null }] }, delivery('bad-4'))).rejects.toThrow(/bad-4.*turns\.0\.content/);
  });

  it('throws with the reason for a malformed message so the platform dead-letters it, and writes nothing', async () => {
    const before = await runtime.events.lastSeq(key);
    await expect(handler({ type: 'append', ...key, turns: [{ role: 'robot', content: 'x' }] }, delivery('bad-1'))).rejects.toThrow(/bad-1.*turns\.0\.role/);
    await expect(handler('not json', delivery('bad-2'))).rejects.toThrow(/Rejected message bad-2/);
    await expect(handler({ type: 'append', userId: 'a b', sessionId: 's', turns: [{ role: 'user', content: 'x' }] }, delivery('bad-3'))).rejects.toThrow(/userId/);
    expect(await runtime.events.lastSeq(key)).toBe(before);
  });
});
