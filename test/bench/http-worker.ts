/**
 * The HTTP load generator, run in a child process so the client shares neither the service's event loop nor its memory
 * (on the real deployment, clients are other processes). Started by `load-client.ts`.
 */
import { fetchClient, nodeHttpClient, type Client } from './client.js';
import { appendBody, rng } from './fixtures.js';
import { closedLoop, openLoop } from './load.js';
import type { Job, JobResult } from './load-client.js';

const { baseUrl, maxSockets } = JSON.parse(process.env.BENCH_HTTP_WORKER ?? '{}') as { baseUrl: string; maxSockets: number };
const clients: Record<'fetch' | 'node', Client> = { fetch: fetchClient(baseUrl), node: nodeHttpClient(baseUrl, maxSockets) };

/** Wall-clock milliseconds with sub-millisecond resolution, comparable with the service's (performance.timeOrigin is wall-clock). */
const wall = () => performance.timeOrigin + performance.now();

/**
 * Opens `concurrency` keep-alive connections before a measured run. Under load the service accepts new connections
 * slowly (its event loop is busy with synchronous PGlite work), which would otherwise show up as multi-second first requests.
 */
async function warm(client: Client, concurrency: number) {
  await Promise.all(Array.from({ length: concurrency }, () => client.send('GET', '/health')));
}

async function run(job: Job): Promise<JobResult> {
  const client = clients[job.client];
  await warm(client, job.kind === 'appendSteady' ? 16 : job.concurrency);
  const expect = (status: number, wanted: number) => {
    if (status !== wanted) throw new Error(`HTTP ${status}`);
  };
  switch (job.kind) {
    case 'append': {
      const r = await closedLoop(job.total, job.concurrency, async (i) => {
        const session = `s${i % job.sessions}`;
        const res = await client.send('POST', `/v1/users/${job.label}/sessions/${session}/turns`, appendBody(`${job.label}-${i}`, Math.floor(i / job.sessions) * job.batch, job.batch));
        expect(res.status, 202);
      }, job.maxMs);
      return { ...r, appends: [] };
    }
    case 'appendSteady': {
      const appends: JobResult['appends'] = [];
      const latencies: number[] = [];
      const batch = job.batch ?? 1;
      const users = job.users ?? 1;
      const r = await openLoop(job.total, job.periodMs, async (i) => {
        const user = job.users ? `${job.label}-u${i % users}` : job.label;
        const session = `s${Math.floor(i / users) % job.sessions}`;
        const sent = wall();
        const res = await client.send('POST', `/v1/users/${user}/sessions/${session}/turns`, appendBody(`${job.label}-${i}`, i * batch, batch));
        const acked = wall();
        expect(res.status, 202);
        latencies.push(acked - sent);
        appends.push({ user, session, seq: (JSON.parse(res.body) as { accepted: { seq: number }[] }).accepted.at(-1)!.seq, sent, acked });
      });
      return { latencies, elapsedMs: r.elapsedMs, errors: r.errors, appends };
    }
    case 'context': {
      const random = rng(job.seed);
      const r = await closedLoop(job.total, job.concurrency, async () => {
        const session = job.sessionIds[Math.floor(random() * job.sessionIds.length)]!;
        const res = await client.send('GET', `/v1/users/${job.userId}/sessions/${session}/context?maxTokens=${job.maxTokens}${job.agentId ? `&agentId=${job.agentId}` : ''}`);
        expect(res.status, 200);
      }, job.maxMs);
      return { ...r, appends: [] };
    }
  }
}

process.on('disconnect', () => process.exit()); // the bench ended, however it ended
process.on('message', (message: { id: number; job: Job } | 'close') => {
  if (message === 'close') {
    Object.values(clients).forEach((c) => c.close());
    process.disconnect();
    return;
  }
  run(message.job).then(
    (result) => process.send!({ id: message.id, result }),
    (error: unknown) => process.send!({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
