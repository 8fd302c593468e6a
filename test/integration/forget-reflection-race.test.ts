import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import { mergeNearDuplicateInsights, synthesiseLongTermProfile } from '../../shared/application/long-term-reflection.js';
import type { ChatModel, InsightStore } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import { aggregateNoInsightSessions, reflectSession } from '../../shared/application/session-end.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { InsightDocument } from '../../shared/contracts/insights.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { gate, raceBackends, total } from '../support/forget-race.js';

const cosmos = useCosmosFake();

/** A chat model whose `task` answers `answer` (after `before`); every other task is the runtime's. */
function chatWith(chat: ChatModel, task: 'sessionInsights' | 'longTermProfile', answer: unknown, before: () => Promise<void> = async () => {}): ChatModel {
  return Object.assign(Object.create(chat) as ChatModel, {
    run: async (name: string, input: never) => (name === task ? (await before(), answer) : chat.run(name as never, input)),
  });
}

describe.each(raceBackends(cosmos))('a reflection that read a session before its forget and writes after it: $name', ({ open }) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await open();
  }, 120_000);
  afterAll(() => runtime?.close());

  /** A pending insight of the session, in the category `concern`, with the same vector as every other one here. */
  const insightOf = async ({ userId, sessionId }: { userId: string; sessionId: string }, id: string, createdAt: string): Promise<InsightDocument> => ({
    schemaVersion: SCHEMA_VERSION,
    id,
    userId,
    type: 'session',
    sessionId,
    sourceSessionIds: [sessionId],
    category: 'concern',
    text: `FORGOTTEN-INSIGHT ${id} about the pension`,
    confidence: 0.9,
    importance: 'high',
    status: 'pending',
    embeddingModel: runtime.embedder.model,
    insightVector: (await runtime.embedder.embed(['the pension']))[0]!,
    createdAt,
    updatedAt: createdAt,
  });

  /** The whole forget of one session, its scan clean. */
  async function forgetWhole(scope: { userId: string; sessionId: string }) {
    await beginForget(runtime, scope);
    await purgeStores(runtime, scope);
    expect(total(await runtime.forgets.scan(scope))).toBe(0);
    await finishForget(runtime, { ...scope, removed: 0, tombstone: null });
  }

  it('an aggregate insight over a session forgotten while the model was called goes, and the sessions left stay to aggregate', async () => {
    const userId = 'u-aggregate-race';
    const noInsight = chatWith(runtime.chat, 'sessionInsights', { reflectionFlag: 'no-insight', insights: [] });
    for (const sessionId of ['kept', 'gone']) {
      await appendTurns(runtime, { userId, sessionId }, { turns: [{ role: 'user', content: `a quiet chat in ${sessionId}` }] });
      await projectSession(runtime, { userId, sessionId });
      await reflectSession({ ...runtime, chat: noInsight }, { userId, sessionId });
    }
    const model = gate();
    const aggregate = chatWith(runtime.chat, 'sessionInsights', { reflectionFlag: 'insight', insights: [{ category: 'concern', text: 'DERIVED-FROM-GONE worries', confidence: 0.9, importance: 'high' }] }, model.hold);
    const aggregating = aggregateNoInsightSessions({ ...runtime, chat: aggregate, reflection: { ...runtime.reflection, minSessionsForAggregation: 2 } }, userId);
    await model.reached;
    await forgetWhole({ userId, sessionId: 'gone' });
    model.release();
    expect(await aggregating).toMatchObject({ aggregated: false, insightIds: [] });
    expect(JSON.stringify(await runtime.insights.list(userId))).not.toContain('DERIVED-FROM-GONE');
    expect(total(await runtime.forgets.scan({ userId, sessionId: 'gone' }))).toBe(0);
    expect((await runtime.sessions.get({ userId, sessionId: 'kept' }))?.doc.reflectionStatus).toBe('no-insight');
  });

  it("a profile synthesised from a session's insight forgotten while the model was called goes, and the insight is not written back", async () => {
    const userId = 'u-profile-race';
    const key = { userId, sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'my pension worries' }] });
    await runtime.insights.upsert([await insightOf(key, 'gone-insight', new Date().toISOString())]);
    const model = gate();
    const synthesis = chatWith(runtime.chat, 'longTermProfile', { profile: 'PROFILE-FROM-GONE: worries about the pension', supersededInsightIds: [] }, model.hold);
    const reflecting = synthesiseLongTermProfile({ ...runtime, chat: synthesis }, userId);
    await model.reached;
    await forgetWhole(key);
    model.release();
    await reflecting;
    expect(await runtime.insights.getProfile(userId)).toBeNull();
    expect(await runtime.insights.list(userId)).toEqual([]);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
  });

  it('a near-duplicate flagged merged is not written back after its session was forgotten', async () => {
    const userId = 'u-merge-race';
    const key = { userId, sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'my pension worries' }] });
    await runtime.insights.upsert([await insightOf(key, 'older', '2026-01-01T10:00:00.000Z'), await insightOf(key, 'newer', '2026-01-02T10:00:00.000Z')]);
    // The merge is held right before it writes its flags back, while the whole forget runs.
    const write = gate();
    const insights: InsightStore = Object.assign(Object.create(runtime.insights) as InsightStore, {
      upsert: async (docs: InsightDocument[]) => (await write.hold(), runtime.insights.upsert(docs)),
    });
    const merging = mergeNearDuplicateInsights({ ...runtime, insights }, userId);
    await write.reached;
    await forgetWhole(key);
    write.release();
    expect(await merging).toEqual({ merged: 1 });
    expect(await runtime.insights.list(userId)).toEqual([]);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
  });
});
