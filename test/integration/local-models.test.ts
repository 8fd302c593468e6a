import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalModels, SentenceEncoderEmbedder } from '../../shared/adapters/local-models/index.js';
import { UsageMeter } from '../../shared/application/metering.js';
import type { ChatMessage, ToolDefinition } from '../../shared/application/ports.js';

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
    const { chat, embedder } = createLocalModels(meter);
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
