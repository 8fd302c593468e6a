import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import type { SessionDirectory } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { gate, heldProjector, raceBackends, total } from '../support/forget-race.js';

const cosmos = useCosmosFake();

const BACKENDS = raceBackends(cosmos);

describe.each(BACKENDS)('a session forgotten while a later session fixes its init block: $name', ({ open }) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await open();
  }, 120_000);
  afterAll(() => runtime?.close());

  /** An ended session of `userId` with a summary: what a later session's init block cites. */
  async function endedSession(userId: string, sessionId: string, summary: string) {
    const key = { userId, sessionId };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'an earlier conversation', timestamp: '2026-01-01T10:00:00.000Z' }] });
    await runtime.events.append(key, [{ type: 'SessionSummarised', data: { summary, keyTopics: [], endedAt: '2026-01-01T11:00:00.000Z', model: 'test' } }], new Date());
    await projectSession(runtime, key);
    expect((await runtime.sessions.get(key))?.doc.summary).toBe(summary);
  }

  /**
   * The later session's projector reads the summaries, then the whole forget of `forgotten` runs (purge, erasure,
   * a clean scan, the tombstone cleared), then `meanwhile`, then the projector appends its init block and writes.
   */
  async function forgetBetweenReadAndAppend(userId: string, forgotten: string, meanwhile: () => Promise<unknown> = async () => {}) {
    const later = { userId, sessionId: 'later' };
    await appendTurns(runtime, later, { turns: [{ role: 'user', content: 'back again' }] });
    // The decider between its read of the summaries and its append.
    const read = gate();
    const directory: SessionDirectory = Object.assign(Object.create(runtime.directory!) as SessionDirectory, {
      recentSummaries: async (...args: Parameters<SessionDirectory['recentSummaries']>) => {
        const found = await runtime.directory!.recentSummaries(...args);
        await read.hold();
        return found;
      },
    });
    const projecting = projectSession({ ...runtime, directory }, later);
    await read.reached;
    const scope = { userId, sessionId: forgotten };
    await beginForget(runtime, scope);
    await purgeStores(runtime, scope);
    expect(total(await runtime.forgets.scan(scope))).toBe(0);
    await finishForget(runtime, { ...scope, removed: 0 });
    await meanwhile();
    read.release();
    await projecting;
    return later;
  }

  /** Every event and document of the user's sessions, as stored. */
  async function everything(userId: string, sessionIds: string[]): Promise<string> {
    const stored = await Promise.all(sessionIds.map(async (sessionId) => [await runtime.events.read({ userId, sessionId }, 0), (await runtime.sessions.get({ userId, sessionId }))?.doc ?? null]));
    return JSON.stringify(stored);
  }

  it('the forgotten summary is in no event or document afterwards; the summary of a session kept stays', async () => {
    const userId = 'u-init-race';
    await endedSession(userId, 'kept', 'KEPT-SUMMARY about the garden');
    await endedSession(userId, 'gone', 'FORGOTTEN-SUMMARY about the pension');
    const later = await forgetBetweenReadAndAppend(userId, 'gone');
    const stored = await everything(userId, ['kept', 'gone', 'later']);
    expect(stored).not.toContain('FORGOTTEN-SUMMARY');
    expect((await runtime.sessions.get(later))?.doc.init?.recentSessions.map((r) => r.sessionId)).toEqual(['kept']);
    expect(total(await runtime.forgets.scan({ userId, sessionId: 'gone' }))).toBe(0);
  });

  it('a forgotten session written again before the init block is appended: its old summary does not survive either', async () => {
    const userId = 'u-init-race-again';
    await endedSession(userId, 'gone', 'FORGOTTEN-SUMMARY of the first life');
    await forgetBetweenReadAndAppend(userId, 'gone', () => appendTurns(runtime, { userId, sessionId: 'gone' }, { turns: [{ role: 'user', content: 'a second life' }] }).then(() => projectSession(runtime, { userId, sessionId: 'gone' })));
    expect(await everything(userId, ['gone', 'later'])).not.toContain('FORGOTTEN-SUMMARY');
    expect((await runtime.events.read({ userId, sessionId: 'gone' }, 0)).some((e) => e.type === 'TurnAppended')).toBe(true);
  });

  it('a projector the forget overtook writes the summary, a later session cites it, then the projector forgets what it wrote: the citation goes too', async () => {
    const userId = 'u-init-race-overtaken';
    const gone = { userId, sessionId: 'gone' };
    await appendTurns(runtime, gone, { turns: [{ role: 'user', content: 'an earlier conversation', timestamp: '2026-01-01T10:00:00.000Z' }] });
    await runtime.events.append(gone, [{ type: 'SessionSummarised', data: { summary: 'FORGOTTEN-SUMMARY written late', keyTopics: [], endedAt: '2026-01-01T11:00:00.000Z', model: 'test' } }], new Date());
    // The projector of `gone` is held before its embeddings (the forget runs), then right after its document is written.
    const { embedding, written, embedder, sessions } = heldProjector(runtime);
    const projecting = projectSession({ ...runtime, embedder, sessions }, gone);
    await embedding.reached;
    await beginForget(runtime, gone);
    await purgeStores(runtime, gone);
    await finishForget(runtime, { ...gone, removed: 0 });
    embedding.release();
    await written.reached;
    const later = { userId, sessionId: 'later' };
    await appendTurns(runtime, later, { turns: [{ role: 'user', content: 'back again' }] });
    await projectSession(runtime, later);
    expect(JSON.stringify((await runtime.sessions.get(later))?.doc.init)).toContain('FORGOTTEN-SUMMARY');
    written.release();
    await projecting;
    expect(await everything(userId, ['gone', 'later'])).not.toContain('FORGOTTEN-SUMMARY');
    expect(total(await runtime.forgets.scan(gone))).toBe(0);
  });
});
