import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EmbeddingBatcher } from '../../shared/adapters/batching/embedding-batcher.js';
import { MemoryClient, type SessionEventsPage } from '../../shared/client/index.js';
import { startLocalHost } from '../../shared/platform/local-host/host.js';

type Host = Awaited<ReturnType<typeof startLocalHost>>;
const dataDir = mkdtempSync(join(tmpdir(), 'memory-e2e-'));
let host: Host;
/** Whether the encoder's warm-up had finished when the host's start returned (it listens then). */
let warmedAtStart: boolean | undefined;
/**
 * The TypeScript client on the host's URL (a restart moves the host to a new port, and the client with it). One attempt
 * per request: a 429 or 503 the client would otherwise retry must fail these tests, as it did over raw fetch.
 */
let memory: MemoryClient;
const connect = () => new MemoryClient({ baseUrl: host.url, retry: { maxAttempts: 1 } });

beforeAll(async () => {
  process.env.MEMORY_DATA_DIR = dataDir;
  process.env.PUMP_INTERVAL_MS = '20';
  let warmed = false;
  const warmUp = EmbeddingBatcher.prototype.warmUp;
  const spy = vi.spyOn(EmbeddingBatcher.prototype, 'warmUp').mockImplementation(function (this: EmbeddingBatcher) {
    return warmUp.call(this).then(() => void (warmed = true));
  });
  host = await startLocalHost({ port: 0 });
  warmedAtStart = spy.mock.calls.length === 1 && warmed;
  spy.mockRestore();
  memory = connect();
});
afterAll(async () => {
  await host?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Raw HTTP, for what the client never sends (unknown routes, malformed bodies). */
const api = (path: string, init?: RequestInit) => fetch(`${host.url}/${path}`, { ...init, headers: { 'content-type': 'application/json', ...init?.headers } });

async function settled(userId: string, sessionId: string) {
  // Appends do not wait for the projection (the offline models run on their own thread), so it may still be catching
  // up when the last append returns: seconds of inference on a busy 2-core machine.
  for (const deadline = Date.now() + 40_000; Date.now() < deadline; ) {
    const status = await memory.getSession(userId, sessionId);
    if (status.pending === 0 && status.lastSeq > 0) return status;
    await sleep(25);
  }
  throw new Error(`session ${sessionId} did not settle`);
}

type StreamEvent = SessionEventsPage['events'][number];

/** The session's whole stream, paged through GET /events 7 at a time (lifecycle events sit between the turns). */
async function stream(userId: string, sessionId: string): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of memory.events(userId, sessionId, { limit: 7 })) events.push(event);
  return events;
}

/** Seq of each turn, by turnId. */
const turnSeqs = (events: StreamEvent[]) => new Map(events.flatMap((e) => (e.type === 'TurnAppended' ? [[e.data.turnId, e.metadata.seq] as const] : [])));
/** Each interaction window's seq range. */
const windows = (events: StreamEvent[]) => events.flatMap((e) => (e.type === 'InteractionSummarised' ? [[e.data.fromSeq, e.data.toSeq]] : []));

describe('local host over HTTP', () => {
  it('warms the offline encoder before it listens, so that no first request waits for the model', async () => {
    expect(warmedAtStart).toBe(true);
  });

  it('serves health and answers unknown routes with problem+json', async () => {
    expect(await memory.health()).toMatchObject({ status: 'ok', storage: 'pglite' });
    const missing = await api('v1/nothing');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toBe('application/problem+json');
    expect(((await missing.json()) as { code: string }).code).toBe('not_found');
    const malformed = await api('v1/users/u/sessions/s/turns', { method: 'POST', body: '{"turns":' });
    expect(malformed.status).toBe(400);
  });

  it('3 sessions × 37 turns: status and context reflect the projection', async () => {
    const userId = 'e2e-user';
    const sessions = ['alpha', 'beta', 'gamma'];
    for (const sessionId of sessions) {
      for (let i = 1; i <= 37; i += 2) {
        const turns = [
          { role: 'user' as const, content: `In ${sessionId} I mention fact number ${i}.`, turnId: `${sessionId}-${i}` },
          ...(i < 37 ? [{ role: 'assistant' as const, content: `Noted fact ${i} for ${sessionId}.`, turnId: `${sessionId}-${i + 1}` }] : []),
        ];
        // The client throws on anything but a 2xx; the service answers an append with 202 and one seq per turn.
        expect((await memory.appendTurns(userId, sessionId, turns)).accepted.map((a) => a.turnId)).toEqual(turns.map((t) => t.turnId));
      }
    }
    for (const sessionId of sessions) {
      const status = await settled(userId, sessionId);
      const events = await stream(userId, sessionId);
      const seqOf = turnSeqs(events);
      // One stream, gapless: the turns and, between them, the lifecycle the projection decided (init block, windows).
      expect(events.map((e) => e.metadata.seq)).toEqual(Array.from({ length: status.lastSeq }, (_, i) => i + 1));
      expect(windows(events)).toEqual(
        [1, 11, 21].map((n) => [seqOf.get(`${sessionId}-${n}`), seqOf.get(`${sessionId}-${n + 9}`)]),
      );
      expect(events.filter((e) => e.type === 'SessionInitFixed')).toHaveLength(1);
      expect(status).toMatchObject({ projectedThroughSeq: status.lastSeq, chunkedThroughSeq: seqOf.get(`${sessionId}-30`), turnCount: 37, status: 'active', reflectionStatus: 'pending' });
      const context = await memory.getContext(userId, sessionId);
      expect(context.summaryCoversThroughSeq).toBe(seqOf.get(`${sessionId}-30`));
      expect(context.sections.turns.map((t) => t.turnId)).toEqual([31, 32, 33, 34, 35, 36, 37].map((n) => `${sessionId}-${n}`));
      expect(context.sections.summary.length).toBeGreaterThan(0);
      expect(context.text).toContain(`In ${sessionId} I mention fact number 37.`);
      const active = context.text.split('### Active Conversation\n')[1]!;
      expect(active.split('\n')).toHaveLength(7);
      expect(active).not.toContain('fact number 29.');
      const interactions = await host.runtime.interactions.listBySession({ userId, sessionId });
      expect(interactions.map((x) => x.turnIds)).toEqual([1, 11, 21].map((n) => Array.from({ length: 10 }, (_, i) => `${sessionId}-${n + i}`)));
    }
  });

  it('8 concurrent clients appending to one session get gapless, unique seqs', async () => {
    const clients = Array.from({ length: 8 }, (_, c) =>
      (async () => {
        const client = connect();
        const seqs: number[] = [];
        for (let i = 0; i < 25; i++) {
          const { accepted } = await client.appendTurns('e2e-user', 'crowded', [{ role: 'user', content: `client ${c} turn ${i}`, turnId: `c${c}-${i}` }]);
          seqs.push(...accepted.map((a) => a.seq));
        }
        return seqs;
      })(),
    );
    const all = (await Promise.all(clients)).flat().sort((a, b) => a - b);
    await settled('e2e-user', 'crowded');
    const events = await stream('e2e-user', 'crowded');
    // Unique seqs, each a turn's; the stream around them (lifecycle events included) is gapless.
    expect(new Set(all).size).toBe(200);
    expect([...turnSeqs(events).values()].sort((a, b) => a - b)).toEqual(all);
    expect(events.map((e) => e.metadata.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it('a retried turnId gets the same seq', async () => {
    const once = [{ role: 'user' as const, content: 'only once', turnId: 'once' }];
    const first = await memory.appendTurns('e2e-user', 'retry', once);
    await memory.appendTurns('e2e-user', 'retry', [{ role: 'user', content: 'next', turnId: 'next' }]);
    const again = await memory.appendTurns('e2e-user', 'retry', once);
    expect(again).toEqual(first);
    await settled('e2e-user', 'retry');
    expect([...turnSeqs(await stream('e2e-user', 'retry')).keys()]).toEqual(['once', 'next']);
  });

  it('finds a fact stated in other words: a question about a dog finds the golden retriever puppy in the top 3', async () => {
    const said = [
      'My mortgage rate resets next year.',
      'We just adopted a golden retriever puppy named Max!',
      'I am flying to Lisbon in July for a conference.',
      'My Python script crashes on empty CSV rows.',
      'I switched my 401k to a target-date fund.',
    ];
    await memory.appendTurns('e2e-semantic', 's1', said.map((content, i) => ({ role: 'user', content, turnId: `fact-${i}` })));
    await settled('e2e-semantic', 's1');
    const { facts } = await memory.searchFacts('e2e-semantic', { query: 'Does the user have a dog?', topK: 3, sources: ['turns'] });
    expect(facts.flatMap((f) => f.turnIds)).toContain('fact-1');
  });

  it('keeps its data across a restart and projects events written while it was down', async () => {
    await memory.appendTurns('e2e-user', 'durable', [{ role: 'user', content: 'before restart', turnId: 'b1' }]);
    await settled('e2e-user', 'durable');
    await host.stop();
    // A "crash" between the event write and its projection: events land while no pump runs.
    const { createRuntime } = await import('../../shared/platform/composition.js');
    const { settings } = await import('../../shared/platform/config.js');
    const offline = await createRuntime(settings());
    const turns = Array.from({ length: 11 }, (_, i) => ({ type: 'TurnAppended' as const, data: { turnId: `w${i}`, role: 'user' as const, content: `written while down ${i}`, timestamp: new Date().toISOString() } }));
    await offline.events.append({ userId: 'e2e-user', sessionId: 'durable' }, turns, new Date());
    await offline.close();

    host = await startLocalHost({ port: 0 });
    memory = connect();
    const status = await settled('e2e-user', 'durable');
    const seqOf = turnSeqs(await stream('e2e-user', 'durable'));
    expect(status).toMatchObject({ turnCount: 12, projectedThroughSeq: status.lastSeq, chunkedThroughSeq: seqOf.get('w8') });
    const context = await memory.getContext('e2e-user', 'durable');
    expect(context.sections.turns.map((t) => t.turnId)).toEqual(['w6', 'w7', 'w8', 'w9', 'w10']);
  });
});
