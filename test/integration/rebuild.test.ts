import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { getContext } from '../../shared/application/get-context.js';
import { getSessionStatus } from '../../shared/application/get-session-status.js';
import { getProfile, listInsights, mergeNearDuplicateInsights, synthesiseLongTermProfile } from '../../shared/application/long-term-reflection.js';
import { projectSession } from '../../shared/application/project-session.js';
import { rebuildProjections } from '../../shared/application/rebuild.js';
import { retrieveWithAgent } from '../../shared/application/retrieval-agent.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import { listSessionEvents } from '../../shared/application/session-events.js';
import { aggregateNoInsightSessions, completeSession, finalPrune, reflectSession, summariseSession } from '../../shared/application/session-end.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { FactSearchBody } from '../../shared/contracts/facts.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { memoryRuntime } from '../support/runtime.js';

const USER = 'rebuild-user';

/** Three sessions of a user's life, each with facts a later question asks about. */
const SESSIONS: Record<string, string[]> = {
  s1: [
    'I just adopted a golden retriever puppy named Max.',
    'Max chewed my running shoes this morning.',
    'I am training for the Lisbon half marathon in October.',
    'My knee hurts after long runs, so I see a physio on Tuesdays.',
    'I work as a nurse at the children hospital.',
    'Night shifts make it hard to keep a training plan.',
    'My sister Ana lives in Porto and runs too.',
    'We want to run the Porto 10k together next spring.',
    'I switched to a plant based diet last month.',
    'Lentil soup is my new favourite dinner.',
    'I am saving for a new road bike.',
    'The bike I want costs about two thousand euros.',
  ],
  s2: [
    'The physio said my knee is healing well.',
    'I ran twelve kilometres on Sunday without pain.',
    'Max graduated from puppy school.',
    'Ana sent me a training plan for the half marathon.',
    'I bought the road bike after all.',
    'My first bike ride was along the river.',
    'I am worried about the night shifts in December.',
  ],
  s3: ['Hello again.', 'Thanks, that is all.', 'Bye.'],
};
const CURRENT = { s4: ['I ran the Lisbon half marathon in two hours!', 'Max waited at the finish line with Ana.', 'Next goal: a full marathon.'] };

const chatCalls = (runtime: Runtime) =>
  Object.entries(runtime.meter.snapshot())
    .filter(([operation]) => operation !== 'embed')
    .reduce((n, [, t]) => n + t.calls, 0);

async function ingest(runtime: Runtime, sessions: Record<string, string[]>, start: number) {
  for (const [i, [sessionId, said]] of Object.entries(sessions).entries()) {
    const at = (n: number) => new Date(Date.UTC(2026, 0, start + i, 9, n)).toISOString();
    const turns = said.flatMap((content, n) => [
      { role: 'user' as const, content, turnId: `${sessionId}-u${n}`, timestamp: at(2 * n) },
      { role: 'assistant' as const, content: `Noted: ${content.toLowerCase()}`, turnId: `${sessionId}-a${n}`, timestamp: at(2 * n + 1) },
    ]);
    // Two appends, projected in between, as a live session would be.
    const half = Math.ceil(turns.length / 2);
    await appendTurns(runtime, { userId: USER, sessionId }, { turns: turns.slice(0, half) });
    await projectSession(runtime, { userId: USER, sessionId });
    await appendTurns(runtime, { userId: USER, sessionId }, { turns: turns.slice(half) });
    await projectSession(runtime, { userId: USER, sessionId });
  }
}

/** The session-end workflow's steps, in the orchestration's order. */
async function end(runtime: Runtime, key: SessionKey) {
  await runtime.events.append(key, [{ type: 'SessionEndRequested', data: { reason: 'client' } }], runtime.clock.now());
  await finalPrune(runtime, key);
  await summariseSession(runtime, key);
  if ((await reflectSession(runtime, key)).reflectionFlag === 'no-insight') await aggregateNoInsightSessions(runtime, key.userId);
  await completeSession(runtime, key);
}

const QUESTIONS = ['What pet does the user have?', 'Where does the sister live?', 'Which race is the user training for?', 'What does the user eat for dinner?', 'knee injury physio'];

/** Every read API's answer for the user. */
async function readEverything(runtime: Runtime) {
  const keys = Object.keys({ ...SESSIONS, ...CURRENT }).map((sessionId) => ({ userId: USER, sessionId }));
  return {
    sessions: await Promise.all(keys.map((key) => getSessionStatus(runtime, key))),
    contexts: await Promise.all(keys.map((key) => getContext(runtime, key, {}))),
    budgeted: await Promise.all(keys.map((key) => getContext(runtime, key, { maxTokens: 300 }))),
    events: await Promise.all(keys.map((key) => listSessionEvents(runtime, key, { after: 0, limit: 1000 }))),
    facts: await Promise.all(QUESTIONS.map((query) => searchFacts(runtime, USER, FactSearchBody.parse({ query, topK: 8 })))),
    scoped: await searchFacts(runtime, USER, FactSearchBody.parse({ query: 'bike', sessionId: 's2' })),
    agent: await retrieveWithAgent(runtime, USER, FactSearchBody.parse({ query: 'What happened with the knee?', mode: 'agent' })),
    insights: await listInsights(runtime, USER, {}),
    profile: await getProfile(runtime, USER),
    interactions: await Promise.all(keys.map(async (key) => (await runtime.interactions.listBySession(key)).map(withoutVectors))),
  };
}

/**
 * Vectors are embedded again on rebuild, in other batches: the offline encoder pads a batch to its longest text, so
 * the last digits may differ. They are compared by direction (cosine ≈ 1), everything else field for field.
 */
const withoutVectors = <T extends { contentVector?: number[]; summaryVector?: number[] }>({ contentVector: _c, summaryVector: _s, ...rest }: T) => rest;
const cosine = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0) / Math.hypot(...a) / Math.hypot(...b);

describe('rebuild from the events (PGlite)', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime({ MIN_SESSIONS_FOR_AGGREGATION: '1' });
  });
  afterAll(() => runtime.close());

  it('drops the projections and rebuilds them: every read API answers the same, with no chat-model call', async () => {
    await ingest(runtime, SESSIONS, 5);
    for (const sessionId of Object.keys(SESSIONS)) await end(runtime, { userId: USER, sessionId });
    await mergeNearDuplicateInsights(runtime, USER);
    await synthesiseLongTermProfile(runtime, USER);
    await ingest(runtime, CURRENT, 20); // a session still running: its init block shows the profile, its tail is verbatim

    const before = await readEverything(runtime);
    expect(before.contexts[3]!.sections.profile).toBeTruthy();
    expect(before.contexts[3]!.sections.recentSessions.map((s) => s.sessionId)).toEqual(['s2', 's3']);
    expect(before.sessions.map((s) => s.status)).toEqual(['completed', 'completed', 'completed', 'active']);
    expect(before.facts.every((f) => f.facts.length > 0)).toBe(true);

    const calls = chatCalls(runtime);
    const report = await rebuildProjections(runtime, USER);
    expect(chatCalls(runtime)).toBe(calls);
    expect(report).toMatchObject({ users: 1, sessions: 4 });
    expect(await readEverything(runtime)).toEqual(before);
  });

  it('rebuilds a dropped projection, not merely one left in place', async () => {
    const key = { userId: USER, sessionId: 's1' };
    const before = await runtime.sessions.get(key);
    await runtime.projections.dropUser(USER);
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(await runtime.interactions.listBySession(key)).toEqual([]);
    await rebuildProjections(runtime);
    const after = (await runtime.sessions.get(key))!.doc;
    expect(withoutVectors(after)).toEqual(withoutVectors(before!.doc));
    expect(cosine(after.summaryVector!, before!.doc.summaryVector!)).toBeGreaterThan(0.9999);
  });
});

describe('rebuild from the events (Cosmos DB wire fake)', () => {
  const cosmos = useCosmosFake(512);

  it('rebuilds session documents and interactions of a user with no chat-model call', async () => {
    const models = await memoryRuntime();
    const runtime = { ...models, ...cosmosStores(await cosmos(), { atomicBatches: false }) } as Runtime;
    try {
      const key = { userId: USER, sessionId: 's1' };
      const said = SESSIONS.s1!.map((content, n) => ({ role: 'user' as const, content, turnId: `t${n}` }));
      await appendTurns(runtime, key, { turns: said });
      await projectSession(runtime, key);
      await runtime.events.append(key, [{ type: 'SessionEndRequested', data: { reason: 'client' } }], runtime.clock.now());
      await finalPrune(runtime, key);
      await summariseSession(runtime, key);
      await completeSession(runtime, key);
      const read = async () => {
        const interactions = await runtime.interactions.listBySession(key);
        return { session: withoutVectors((await runtime.sessions.get(key))!.doc), interactions: interactions.map(withoutVectors), vectors: interactions.map((i) => i.contentVector), status: await getSessionStatus(runtime, key) };
      };
      const before = await read();
      expect(before.session).toMatchObject({ status: 'completed', chunkedThroughSeq: 12 });

      const calls = chatCalls(runtime);
      expect(await rebuildProjections(runtime, USER)).toMatchObject({ users: 1, sessions: 1 });
      expect(chatCalls(runtime)).toBe(calls);
      const after = await read();
      expect({ ...after, vectors: [] }).toEqual({ ...before, vectors: [] });
      after.vectors.forEach((v, i) => expect(cosine(v, before.vectors[i]!)).toBeGreaterThan(0.9999));
    } finally {
      await runtime.close();
    }
  });
});
