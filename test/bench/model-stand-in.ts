/**
 * The hosted models' stand-in for sustained.ts, in a child process of its own: the scripted OpenAI-compatible server
 * (test/support/openai-test-server.ts) answering every chat and embedding call after a fixed delay. In the service's
 * thread its timers would fire late whenever PGlite keeps that thread busy, and the models would look slower than
 * they are; in its process, its memory would count as the service's. Started by `startModelStandIn`; the child reports
 * its URL, and the requests it saw when asked.
 */
import { forkTypeScript } from './child-process.js';
import { chatCompletion, embeddings, startOpenAITestServer, type Handler } from '../support/openai-test-server.js';

export interface StandInStats {
  embeddingRequests: number;
  embeddingTexts: number;
  maxTextsPerRequest: number;
  chatRequests: number;
}

export interface ModelStandIn {
  baseURL: string;
  stats(): Promise<StandInStats>;
  close(): Promise<void>;
}

export async function startModelStandIn(delayMs: number): Promise<ModelStandIn> {
  const child = forkTypeScript(new URL(import.meta.url), { BENCH_MODEL_STAND_IN_DELAY_MS: String(delayMs) });
  const next = <T>() => new Promise<T>((resolve, reject) => (child.once('message', resolve), child.once('error', reject)));
  const { baseURL } = await next<{ baseURL: string }>();
  return {
    baseURL,
    stats: () => {
      const answer = next<StandInStats>();
      child.send('stats');
      return answer;
    },
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return; // gone already: no exit event to wait for
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill();
      await exited;
    },
  };
}

if (process.env.BENCH_MODEL_STAND_IN_DELAY_MS !== undefined && process.send) {
  const delayMs = Number(process.env.BENCH_MODEL_STAND_IN_DELAY_MS);
  const delayed =
    (handler: Handler): Handler =>
    async (request) => ({ ...(typeof handler === 'function' ? await handler(request) : handler), delayMs });
  // Connections kept, as a real API keeps them: with the test default every call would pay a new connection.
  const server = await startOpenAITestServer({ keepAliveMs: 120_000 });
  const metadata = { summary: 'The user and the assistant planned a trip.', topics: ['travel'], entities: ['Lisbon'], cumulativeSummary: 'They planned a trip to Lisbon.' };
  server.setDefault('chat', delayed(chatCompletion({ content: metadata })));
  server.setDefault('embeddings', delayed(embeddings()));
  // Only counts are kept: a long run would otherwise hold every request body.
  const stats: StandInStats = { embeddingRequests: 0, embeddingTexts: 0, maxTextsPerRequest: 0, chatRequests: 0 };
  setInterval(() => {
    for (const r of server.requests.splice(0)) {
      if (r.kind === 'chat') stats.chatRequests += 1;
      else {
        const n = (r.body.input as unknown[]).length;
        stats.embeddingRequests += 1;
        stats.embeddingTexts += n;
        stats.maxTextsPerRequest = Math.max(stats.maxTextsPerRequest, n);
      }
    }
  }, 500);
  process.on('message', () => process.send!(stats));
  process.on('disconnect', () => process.exit()); // the bench ended, however it ended
  process.send({ baseURL: server.baseURL });
}
