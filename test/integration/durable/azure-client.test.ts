import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestrationClient } from '../../../shared/platform/durable.js';

/**
 * `orchestrationClient` in Azure: the durable-functions client over HTTP, here against a server that answers the
 * extension's instance query (`GET <rpcBaseUrl>instances/<id>`) as the extension does.
 */
const instances: Record<string, unknown> = {
  'forget-user:u1': {
    name: 'orch-forget',
    instanceId: 'forget-user:u1',
    runtimeStatus: 'Running',
    createdTime: '2026-01-05T10:00:00Z',
    lastUpdatedTime: '2026-01-05T10:00:07Z',
    input: { userId: 'u1' },
    output: null,
    customStatus: { step: 'grace', round: 1, until: '2026-01-05T10:10:07.000Z' },
  },
  'session-end:u1:s1': { name: 'orch-session-end', instanceId: 'session-end:u1:s1', runtimeStatus: 'Completed', createdTime: '2026-01-05T10:00:00Z', lastUpdatedTime: '2026-01-05T10:00:02Z', input: { userId: 'u1', sessionId: 's1' }, output: { summarized: true }, customStatus: null },
  // A status set by an orchestrator of another deployment, and the empty one some hosts report for none.
  'forget-user:u2': { name: 'orch-forget', instanceId: 'forget-user:u2', runtimeStatus: 'Running', createdTime: '2026-01-05T10:00:00Z', lastUpdatedTime: '2026-01-05T10:00:01Z', input: { userId: 'u2' }, output: null, customStatus: { step: 'verifying', pass: 2 } },
  'session-end:u1:s2': { name: 'orch-session-end', instanceId: 'session-end:u1:s2', runtimeStatus: 'Running', createdTime: '2026-01-05T10:00:00Z', lastUpdatedTime: '2026-01-05T10:00:01Z', input: { userId: 'u1', sessionId: 's2' }, output: null, customStatus: '' },
};

let server: Server;
let rpcBaseUrl: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    const id = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/durabletask\/instances\//, ''));
    const found = instances[id];
    res.writeHead(found ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(found ?? { message: 'not found' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rpcBaseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/durabletask/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** An invocation with the durable client input binding the extension fills in. */
function invocation() {
  const input = df.input.durableClient();
  const ctx = new InvocationContext({ functionName: 'http-operation-get', invocationId: 'i', options: { extraInputs: [input] }, logHandler: () => undefined });
  ctx.extraInputs.set(input, { taskHubName: 'hub', creationUrls: {}, managementUrls: {}, rpcBaseUrl });
  return ctx;
}

describe('the orchestration client in Azure (durable.ts)', () => {
  it("maps the instance's custom status to progress", async () => {
    expect(await orchestrationClient(invocation()).status('forget-user:u1')).toEqual({
      operationId: 'forget-user:u1',
      name: 'orch-forget',
      status: 'running',
      createdAt: '2026-01-05T10:00:00.000Z',
      updatedAt: '2026-01-05T10:00:07.000Z',
      progress: { step: 'grace', round: 1, until: '2026-01-05T10:10:07.000Z' },
      input: { userId: 'u1' },
    });
  });

  it('gives no progress when the orchestrator set none, and null for an unknown instance', async () => {
    const status = await orchestrationClient(invocation()).status('session-end:u1:s1');
    expect(status).toMatchObject({ status: 'completed', output: { summarized: true } });
    expect(status).not.toHaveProperty('progress');
    expect(await orchestrationClient(invocation()).status('nope')).toBeNull();
  });

  it('reads an instance whose custom status this version does not know, without progress', async () => {
    for (const id of ['forget-user:u2', 'session-end:u1:s2']) {
      const status = await orchestrationClient(invocation()).status(id);
      expect(status).toMatchObject({ operationId: id, status: 'running' });
      expect(status).not.toHaveProperty('progress');
    }
  });
});
