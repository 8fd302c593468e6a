import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COSMOS_CONTAINERS } from '../../shared/adapters/cosmos/containers.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import type { SessionDirectory, SessionStore } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { embedderWith, memoryRuntime } from '../support/runtime.js';

const cosmos = useCosmosFake();

const BACKENDS: { name: string; open: () => Promise<Runtime> }[] = [
  { name: 'PostgreSQL (PGlite)', open: () => memoryRuntime() },
  {
    name: 'Cosmos DB (wire fake)',
    open: async () => {
      const base = await memoryRuntime();
      const database = await cosmos();
      const runtime: Runtime = {
        ...base,
        ...cosmosStores(database, { atomicBatches: false }),
        backend: 'cosmos',
        detail: { ...base.detail, artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)) },
        forgets: new CosmosForgetStore(database),
        close: () => base.close(),
      };
      delete (runtime as Partial<Runtime>).changeFeed;
      return runtime;
    },
  },
];

/** Holds the first caller that reaches it until released. */
function gate() {
  let release!: () => void;
  let entered!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  let used = false;
  const hold = async () => {
    if (used) return;
    used = true;
    entered();
    await open;
  };
  return { hold, reached, release };
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

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
    const embedding = gate();
    const written = gate();
    const embedder = embedderWith(runtime.embedder, async (texts) => (await embedding.hold(), runtime.embedder.embed(texts)));
    const sessions: SessionStore = Object.assign(Object.create(runtime.sessions) as SessionStore, {
      put: async (...args: Parameters<SessionStore['put']>) => {
        const result = await runtime.sessions.put(...args);
        await written.hold();
        return result;
      },
    });
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
