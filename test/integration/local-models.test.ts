import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createLocalModels, LocalChatModel, ModelThread, ModelThreadPool, SentenceEncoderEmbedder } from '../../shared/adapters/local-models/index.js';
import { UsageMeter } from '../../shared/application/metering.js';
import { EmbeddingBatcher } from '../../shared/adapters/batching/embedding-batcher.js';
import type { ChatTaskInput, ChatTaskName } from '../../shared/application/model-tasks.js';
import type { ChatMessage, ToolDefinition } from '../../shared/application/ports.js';
import { periodReferredTo } from '../../shared/domain/time-expressions.js';

/** Every way the model code could reach the network, made to fail loudly and counted. */
function blockNetwork() {
  const attempts: string[] = [];
  const originals = { fetch: globalThis.fetch, httpRequest: http.request, httpGet: http.get, httpsRequest: https.request, httpsGet: https.get, connect: net.Socket.prototype.connect };
  const refuse = (what: string) =>
    function (this: unknown, ...args: unknown[]): never {
      attempts.push(`${what} ${String(args[0]).slice(0, 80)}`);
      throw new Error(`network access attempted: ${what}`);
    };
  globalThis.fetch = refuse('fetch') as typeof fetch;
  http.request = refuse('http.request') as typeof http.request;
  http.get = refuse('http.get') as typeof http.get;
  https.request = refuse('https.request') as typeof https.request;
  https.get = refuse('https.get') as typeof https.get;
  net.Socket.prototype.connect = refuse('socket.connect') as typeof net.Socket.prototype.connect;
  return {
    attempts,
    restore() {
      globalThis.fetch = originals.fetch;
      http.request = originals.httpRequest;
      http.get = originals.httpGet;
      https.request = originals.httpsRequest;
      https.get = originals.httpsGet;
      net.Socket.prototype.connect = originals.connect;
    },
  };
}

const dot = (a: readonly number[], b: readonly number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);

const PUPPY = 'We just adopted a golden retriever puppy named Max.';
const DISTRACTORS = [
  'We refinanced our mortgage at a lower rate last spring.',
  'My trip to Lisbon was wonderful, the pastries were amazing.',
  'There is a bug in my Python script where the loop never ends.',
  'I have $200k in my 401k and want to retire at 60.',
  'My daughter starts college in 2030.',
  'Please email me rather than call.',
  'The quarterly report is due on Friday.',
  'I am worried about inflation eating into my savings.',
  'We are repainting the kitchen a lighter shade of blue.',
  'My sister lives in Toronto and works as a nurse.',
];

describe('SentenceEncoderEmbedder (Universal Sentence Encoder Lite, real weights)', () => {
  let network: ReturnType<typeof blockNetwork>;
  const meter = new UsageMeter();
  const embedder = new SentenceEncoderEmbedder({ meter });

  beforeAll(() => {
    network = blockNetwork();
  });
  afterAll(() => network.restore());

  it('loads from the package without any network access and embeds 512-d unit vectors', async () => {
    const vectors = await embedder.embed(['hello world', 'The user wants to retire at 60.', '']);
    expect(network.attempts).toEqual([]);
    expect(vectors).toHaveLength(3);
    for (const v of vectors) {
      expect(v).toHaveLength(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    expect(meter.snapshot().embed).toMatchObject({ calls: 1, failures: 0 });
  });

  it('is deterministic, batch or single', async () => {
    const texts = ['I have a mortgage.', 'I prefer email.', 'Lisbon in May.'];
    const batched = await embedder.embed(texts);
    const single = await Promise.all(texts.map(async (t) => (await embedder.embed([t]))[0]!));
    batched.forEach((v, i) => single[i]!.forEach((x, j) => expect(x).toBeCloseTo(v[j]!, 5)));
    expect(await embedder.embed(texts)).toEqual(batched);
  });

  it('given a dog question, then the puppy sentence — sharing no word with it — ranks first among unrelated sentences', async () => {
    const [query, ...docs] = await embedder.embed(['Does the user have a dog?', ...DISTRACTORS, PUPPY]);
    const ranked = docs.map((d, i) => ({ text: [...DISTRACTORS, PUPPY][i]!, score: dot(query!, d) })).sort((a, b) => b.score - a.score);
    expect(ranked[0]!.text).toBe(PUPPY);
    expect(ranked[0]!.score - ranked[1]!.score).toBeGreaterThan(0.05);
  });
});

describe('createLocalModels', () => {
  it('answers a retrieval conversation offline, finding the puppy for a question about a dog', async () => {
    const meter = new UsageMeter();
    const { chat, embedder, close } = createLocalModels(meter);
    onTestFinished(close);
    expect([embedder.model, embedder.dimensions]).toEqual(['use-lite-512', 512]);
    const tools: ToolDefinition[] = [{ name: 'search_interactions', description: 'search', parameters: { type: 'object', properties: { query: { type: 'string' } } } }];
    const question: ChatMessage[] = [{ role: 'user', content: 'Does the user have a dog?' }];

    const plan = await chat.converse({ operation: 'retrieveFacts', tier: 'mini', messages: question, tools });
    expect(plan.toolCalls).toEqual([{ id: 'call_1', name: 'search_interactions', arguments: { query: 'Does the user have a dog?' } }]);

    const results = JSON.stringify(DISTRACTORS.slice(0, 5).map((summary, i) => ({ id: `interaction:${i}`, summary })).concat({ id: 'interaction:puppy', summary: PUPPY }));
    const answer = await chat.converse({
      operation: 'retrieveFacts',
      tier: 'mini',
      messages: [...question, { role: 'assistant', content: null, toolCalls: plan.toolCalls }, { role: 'tool', toolCallId: 'call_1', content: results }],
      tools,
    });
    expect(answer.toolCalls).toEqual([]);
    expect(answer.content!.split('\n')[1]).toBe(`- ${PUPPY} [interaction:puppy]`);
    expect(answer.content).not.toContain('Lisbon');
    expect(Object.keys(meter.snapshot()).sort()).toEqual(['embed', 'retrieveFacts']);
  });
});

const CATEGORIES = ['demographics', 'financial_goals', 'risk_profile', 'current_situation', 'concern', 'preference'];
const CONVERSATION = [
  'user: I am 45 and want to retire at 60 with enough to travel.',
  'assistant: Then let us look at your savings rate and your current pension pot.',
  'user: My partner Maria works part time. We also have a mortgage of 180,000 with twelve years left on it.',
  'user: I would rather not take too much risk in the last five years. Please email me rather than call.',
].join('\n');

describe('ModelThread: the offline models on their own thread (real weights)', () => {
  let network: ReturnType<typeof blockNetwork>;
  const thread = new ModelThread();
  const meter = new UsageMeter();
  const models = createLocalModels(meter, thread);

  beforeAll(() => {
    network = blockNetwork();
  });
  afterAll(async () => {
    network.restore();
    await models.close();
  });

  it('embeds exactly as in process, loads nothing from the network (the thread refuses sockets), and every batch runs in the thread while this one goes on', async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `${DISTRACTORS[i % DISTRACTORS.length]} (${i})`);
    await models.embedder.embed(['load the model first']);
    // Each batch the embedder sends to the model thread: its texts, and whether this thread ran a task (a setImmediate
    // queued as the batch left) before the vectors came back, i.e. whether its event loop went on meanwhile.
    const sent: string[] = [];
    const thisThreadRan: boolean[] = [];
    const inModelThread = thread.embed.bind(thread);
    const spy = vi.spyOn(thread, 'embed').mockImplementation(async (batch) => {
      sent.push(...batch);
      let ran = false;
      setImmediate(() => (ran = true));
      const vectors = await inModelThread(batch);
      thisThreadRan.push(ran);
      return vectors;
    });
    const inThread = await models.embedder.embed(texts).finally(() => spy.mockRestore());
    expect(network.attempts).toEqual([]);
    expect(thread.starts).toBe(1);
    expect(sent.sort()).toEqual([...texts].sort());
    expect(thisThreadRan.length).toBeGreaterThan(1);
    // In process, inference is synchronous: nothing else would run on this thread until a batch is done.
    expect(thisThreadRan).toContain(true);
    const inProcess = await new SentenceEncoderEmbedder().embed(texts);
    expect(inThread).toEqual(inProcess);
    expect(meter.snapshot().embed).toMatchObject({ failures: 0 });
  });

  it('runs the chat tasks in the thread with the same validated outputs as in process', async () => {
    const inProcess = new LocalChatModel(new UsageMeter());
    const inputs: { [K in ChatTaskName]?: ChatTaskInput<K> } = {
      windowMetadata: { conversation: CONVERSATION, previousSummary: 'User: Earlier we met.' },
      sessionSummary: { conversation: CONVERSATION },
      sessionInsights: { conversation: CONVERSATION, categories: CATEGORIES },
    };
    for (const task of Object.keys(inputs) as ChatTaskName[]) {
      expect(await models.chat.run(task, inputs[task]!)).toEqual(await inProcess.run(task, inputs[task]!));
    }
    expect(meter.snapshot().windowMetadata).toMatchObject({ calls: 1, failures: 0 });
  });

  it('given embedding batches waiting in the thread, then a chat task goes before them', async () => {
    const texts = Array.from({ length: 8 }, (_, i) => `${DISTRACTORS[i]} (${i})`);
    const order: string[] = [];
    const embeds = [1, 2, 3].map((i) => thread.embed(texts).then(() => order.push(`embed ${i}`)));
    const task = thread.solve('sessionSummary', { conversation: CONVERSATION }).then(() => order.push('task'));
    await Promise.all([...embeds, task]);
    // In arrival order the task would be last; it goes first, or second if the first batch was already running.
    expect(order.slice(0, 2)).toContain('task');
    expect(order.filter((o) => o !== 'task')).toEqual(['embed 1', 'embed 2', 'embed 3']);
  });

  it('parses the periods turns refer to in the thread exactly as in process, one per turn in order', async () => {
    const at = '2021-09-15T12:00:00.000Z';
    const texts = [
      'My flight got cancelled yesterday, so I drove.',
      'Last week we finally signed the lease!',
      "I'm starting the new job next month",
      'Back in 2014 I lived in Lisbon for a while.',
      'Honestly I just want a quiet evening with a book.',
      'I have been knitting for ten years and today I sold a scarf',
      'The barbecue on Saturday was a disaster',
      'The barbecue on Saturday will be fun',
      '',
    ];
    const inThread = await thread.referredPeriods(texts.map((text) => ({ text, at })));
    expect(inThread).toEqual(texts.map((text) => periodReferredTo(text, new Date(at))));
    expect(inThread.filter(Boolean)).toHaveLength(5);
    expect(network.attempts).toEqual([]);
  });

  it('given embedding batches waiting in the thread, then a periods request goes before them', async () => {
    const texts = Array.from({ length: 8 }, (_, i) => `${DISTRACTORS[i]} (${i})`);
    const order: string[] = [];
    const embeds = [1, 2, 3].map((i) => thread.embed(texts).then(() => order.push(`embed ${i}`)));
    const periods = thread.referredPeriods([{ text: 'We moved here two years ago', at: '2021-09-15T12:00:00.000Z' }]).then(() => order.push('periods'));
    await Promise.all([...embeds, periods]);
    expect(order.slice(0, 2)).toContain('periods');
  });

  it('given a request the thread fails, then the caller gets its typed error, and the same thread serves the next request', async () => {
    await expect(thread.solve('writePoem' as ChatTaskName, {} as never)).rejects.toMatchObject({ name: 'MemoryError', code: 'internal', message: expect.stringContaining('no task writePoem') });
    expect(await models.embedder.embed(['still here'])).toHaveLength(1);
    expect(thread.starts).toBe(1);
  });

  it.runIf(process.platform === 'linux')('runs at a lower priority (nice 10) than the thread serving requests', () => {
    const niceOf = (tid: string) => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ')[16]);
    const tasks = readdirSync('/proc/self/task');
    expect(niceOf(String(process.pid))).toBe(0);
    expect(tasks.filter((tid) => niceOf(tid) === 10)).toHaveLength(1); // the model thread, started by the tests above
  });

  it('given the thread was closed, then calls reject saying so', async () => {
    const closed = new ModelThread();
    await closed.close();
    await expect(closed.embed(['x'])).rejects.toMatchObject({ code: 'internal', message: expect.stringContaining('closed') });
    expect(closed.starts).toBe(0);
  });
});

describe('ModelThread with a stand-in worker', () => {
  const stub = new URL('../support/model-worker-stub.ts', import.meta.url);

  it('given the thread dies with an uncaught error mid-request, then the request rejects naming it, and the next call starts a new thread', async () => {
    const thread = new ModelThread({ entry: stub });
    try {
      expect(await thread.embed(['ab', 'c'])).toEqual([
        [2, 1],
        [1, 1],
      ]);
      await expect(thread.embed(['crash'])).rejects.toMatchObject({ code: 'internal', message: expect.stringMatching(/thread stopped \(Error: stub model exploded\).*next call starts a new one/) });
      expect(await thread.embed(['abc'])).toEqual([[3, 1]]);
      expect(thread.starts).toBe(2);
      await expect(thread.embed(['exit'])).rejects.toMatchObject({ message: expect.stringContaining('exit code 7') });
      expect(await thread.embed(['a'])).toEqual([[1, 1]]);
      expect(thread.starts).toBe(3);
    } finally {
      await thread.close();
    }
  });

  it('given resource limits, then the thread runs with them (a parse-only thread\'s small young generation), and without, with V8\'s', async () => {
    const limited = new ModelThread({ entry: stub, resourceLimits: { maxYoungGenerationSizeMb: 8 } });
    const unlimited = new ModelThread({ entry: stub });
    try {
      expect(await limited.solve('resourceLimits' as never, {} as never)).toMatchObject({ maxYoungGenerationSizeMb: 8 });
      expect(await unlimited.solve('resourceLimits' as never, {} as never)).not.toMatchObject({ maxYoungGenerationSizeMb: 8 });
    } finally {
      await Promise.all([limited.close(), unlimited.close()]);
    }
  });

  it('given a request in flight when the thread is closed, then it rejects instead of hanging', async () => {
    const thread = new ModelThread({ entry: stub });
    await thread.embed(['warm']);
    const inFlight = expect(thread.embed(['crash'])).rejects.toMatchObject({ message: expect.stringContaining('closed') }); // never answered
    await thread.close();
    await inFlight;
  });
});

describe('ModelThreadPool with stand-in workers', () => {
  const stub = new URL('../support/model-worker-stub.ts', import.meta.url);

  it('given two threads, then batches and chat tasks in flight together go to different threads, and a crash in one leaves the other serving', async () => {
    const pool = new ModelThreadPool(2, { entry: stub });
    try {
      const encoder = await pool.encoder();
      expect(pool.starts).toBe(2); // the model loads in every thread up front
      const served = pool.threads.map((t) => {
        const embed = t.embed.bind(t);
        const calls: string[][] = [];
        vi.spyOn(t, 'embed').mockImplementation((texts) => (calls.push([...texts]), embed(texts)));
        return calls;
      });
      const solved = pool.threads.map((t) => vi.spyOn(t, 'solve'));
      expect(await Promise.all([encoder.embed(['aa']), encoder.embed(['bbb'])])).toEqual([[[2, 1]], [[3, 1]]]);
      expect(served.map((calls) => calls.length)).toEqual([1, 1]);
      await Promise.all([pool.solve('sessionSummary', { conversation: 'user: hi' }), pool.solve('sessionSummary', { conversation: 'user: ho' })]);
      expect(solved.map((spy) => spy.mock.calls.length)).toEqual([1, 1]);

      const [crashed, alongside] = await Promise.allSettled([encoder.embed(['crash']), encoder.embed(['cc'])]);
      expect(crashed).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('thread stopped') } });
      expect(alongside).toEqual({ status: 'fulfilled', value: [[2, 1]] });
      expect(await Promise.all([encoder.embed(['d']), encoder.embed(['ee'])])).toEqual([[[1, 1]], [[2, 1]]]);
      expect(pool.starts).toBe(3); // the crashed thread was started again, the other kept
    } finally {
      await pool.close();
    }
    await expect(pool.solve('sessionSummary', { conversation: 'x' })).rejects.toMatchObject({ message: expect.stringContaining('closed') });
  });

  it('given a warm-up, then the model is loaded and run on every thread before it resolves, and no call is metered', async () => {
    const pool = new ModelThreadPool(2, { entry: stub });
    const meter = new UsageMeter();
    try {
      const embedder = new EmbeddingBatcher(new SentenceEncoderEmbedder({ meter, load: pool.encoder, concurrency: pool.size }), { maxTexts: 32, concurrency: 4 });
      const ran = pool.threads.map((t) => vi.spyOn(t, 'embed'));
      await embedder.warmUp();
      expect(pool.starts).toBe(2);
      expect(ran.map((spy) => spy.mock.calls.length)).toEqual([1, 1]);
      expect(meter.snapshot().embed).toBeUndefined();
    } finally {
      await pool.close();
    }
  });
});
