/**
 * The hosted models' stand-in for sustained.ts, in a worker thread of its own: the scripted OpenAI-compatible server
 * (test/support/openai-test-server.ts) answering every chat and embedding call after a fixed delay. In the service's
 * thread its timers would fire late whenever PGlite keeps that thread busy, and the models would look slower than
 * they are. Started by `startModelStandIn`; the worker reports its URL, and the requests it saw when asked.
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
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
  // The worker is TypeScript: register tsx's loader inside it first (workers do not inherit the main thread's hooks).
  const boot = [`import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))};`, 'register();', `await import(${JSON.stringify(import.meta.url)});`].join('\n');
  const worker = new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), { workerData: { delayMs } });
  const next = <T>() => new Promise<T>((resolve, reject) => (worker.once('message', resolve), worker.once('error', reject)));
  const { baseURL } = await next<{ baseURL: string }>();
  return {
    baseURL,
    stats: () => {
      const answer = next<StandInStats>();
      worker.postMessage('stats');
      return answer;
    },
    close: async () => {
      await worker.terminate();
    },
  };
}

if (!isMainThread && (workerData as { delayMs?: number } | null)?.delayMs !== undefined) {
  const { delayMs } = workerData as { delayMs: number };
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
  parentPort!.on('message', () => parentPort!.postMessage(stats));
  parentPort!.postMessage({ baseURL: server.baseURL });
}
