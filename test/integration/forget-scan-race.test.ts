import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FORGET_IN_PROGRESS } from '../../shared/adapters/postgres/forget.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, DEAD_PROJECTOR_MS, purgeStores } from '../../shared/application/forget.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import type { ChatModel } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { finishRounds, forgetToEnd, gate, heldAtOwnTombstone, heldProjector, projectorHeldAtItsTombstone, raceBackends, scanSession, total } from '../support/forget-race.js';
import { newSession } from '../../shared/domain/session.js';

const cosmos = useCosmosFake();

describe.each(raceBackends(cosmos))("a projector the forget overtook writes after the forget's last scan: $name", ({ name, open }) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await open();
  }, 120_000);
  afterAll(() => runtime?.close());

  /**
   * The session's projector is held before its embeddings while the forget records its tombstone, purges and makes
   * its scan (clean), then `beforeWrite`; then it writes, and is held again right after its session document is written. Returns the
   * scan's tombstone version, the projection, and the gate after the write.
   */
  async function writeAfterTheScan(key: { userId: string; sessionId: string }, { forgets = runtime.forgets, beforeWrite = async () => {} }: { forgets?: ForgetStore; beforeWrite?: (tombstone: string | null) => Promise<unknown> } = {}) {
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
    const { embedding, written, embedder, sessions } = heldProjector(runtime);
    const projecting = projectSession({ ...runtime, embedder, sessions, forgets }, key).then(
      () => null,
      (error: unknown) => error,
    );
    await embedding.reached;
    await beginForget(runtime, key);
    await purgeStores(runtime, key);
    const scan = await scanSession(runtime, key);
    expect(scan.total).toBe(0);
    await beforeWrite(scan.tombstone);
    embedding.release();
    // PostgreSQL's guard refuses the projector's writes under the tombstone, so it never reaches the document's write.
    await Promise.race([written.reached, projecting]);
    return { scan, projecting, written };
  }

  const finish = (key: { userId: string; sessionId: string }, tombstone: string | null) => finishRounds(runtime, key, tombstone);

  it('its check comes before the tombstone is cleared: it enlists, the clear fails, the forget purges and scans again, and nothing is left', async () => {
    const key = { userId: 'u-scan-race', sessionId: 'gone' };
    const { scan, projecting, written } = await writeAfterTheScan(key);
    written.release();
    const failure = await projecting;
    const rounds = await finish(key, scan.tombstone);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    if (name.startsWith('PostgreSQL')) {
      // Unchanged there: the write is refused, nothing enlists, and the first clear succeeds.
      expect(failure).toMatchObject({ code: FORGET_IN_PROGRESS });
      expect(rounds).toBe(1);
    } else {
      expect(failure).toBeNull();
      expect(rounds).toBe(2);
    }
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });

  it('the tombstone is cleared between its write and its check: it finds no tombstone to enlist with and forgets what it wrote itself', async () => {
    const key = { userId: 'u-scan-race-cleared', sessionId: 'gone' };
    const { scan, projecting, written } = await writeAfterTheScan(key);
    expect(await finish(key, scan.tombstone)).toBe(1);
    written.release();
    await projecting;
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    // A client's append after the forget is kept.
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'a second life' }] });
    await projectSession(runtime, key);
    expect((await runtime.events.read(key, 0)).map((e) => e.type)).toContain('TurnAppended');
  });

  it("a forget that records its tombstone between the projector's look and its own tombstone keeps it: the projector clears only its own", async () => {
    const key = { userId: 'u-scan-race-second', sessionId: 'gone' };
    let looks = 0;
    const forgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
      enlist: async (k: typeof key) => {
        const found = await runtime.forgets.enlist(k);
        // A second forget of the session begins right after the projector's first look found nothing.
        if (++looks === 1) await beginForget(runtime, key);
        return found;
      },
    });
    // The first forget runs to its end before the projector writes.
    const { projecting, written } = await writeAfterTheScan(key, { forgets, beforeWrite: async (tombstone) => expect(await finish(key, tombstone)).toBe(1) });
    written.release();
    expect(await projecting).toBeNull();
    // The projector recorded its own tombstone beside the second forget's and cleared it; the forget's stays until it
    // has purged and scanned.
    expect(looks).toBe(1);
    expect(await runtime.forgets.tombstoneVersion(key, 'projector')).toBeNull();
    expect(await runtime.forgets.forgetting(key)).toBe(true);
    await purgeStores(runtime, key);
    const second = await scanSession(runtime, key);
    expect(second.total).toBe(0);
    expect(await finish(key, second.tombstone)).toBe(1);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });

  it("a writer that enlists with the projector's own tombstone after its purge: the projector purges again before it clears it", async () => {
    const key = { userId: 'u-scan-race-own', sessionId: 'gone' };
    let purges = 0;
    const forgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
      purge: async (...args: Parameters<ForgetStore['purge']>) => {
        const counts = await runtime.forgets.purge(...args);
        // Another projector of the session, overtaken too, writes its document after this purge and enlists with the
        // tombstone (PostgreSQL refuses that write under the tombstone, so there it never happens).
        if (++purges === 1 && !runtime.forgets.refusesWritesItself) {
          await runtime.sessions.put(newSession(key, new Date()), null);
          expect(await runtime.forgets.enlist(key)).toBe(true);
        }
        return counts;
      },
    });
    const { projecting, written } = await writeAfterTheScan(key, { forgets, beforeWrite: async (tombstone) => expect(await finish(key, tombstone)).toBe(1) });
    written.release();
    expect(await projecting).toBeNull();
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(purges).toBe(runtime.forgets.refusesWritesItself ? 1 : 2);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });

  it("a DELETE of the session that begins while the projector holds its own tombstone keeps its own: an append after the projector cleared it is refused, not acknowledged and then purged", async () => {
    const key = { userId: 'u-scan-race-delete', sessionId: 'gone' };
    const { forgets, ownTombstone } = heldAtOwnTombstone(runtime);
    // The first forget runs to its end before the projector writes, so the projector records a tombstone of its own.
    const { projecting, written } = await writeAfterTheScan(key, { forgets, beforeWrite: async (tombstone) => expect(await finish(key, tombstone)).toBe(1) });
    written.release();
    await ownTombstone.reached;
    // A DELETE of the session begins; then the projector purges what it wrote and clears its tombstone.
    await beginForget(runtime, key);
    ownTombstone.release();
    expect(await projecting).toBeNull();
    const outcome = await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'ACKNOWLEDGED', turnId: 't-acknowledged' }] }).then(
      () => 'accepted',
      (error: { code?: string }) => error.code,
    );
    await forgetToEnd(runtime, key);
    const kept = (await runtime.events.read(key, 0)).some((e) => e.type === 'TurnAppended' && e.data.turnId === 't-acknowledged');
    // Never acknowledged and then purged: the DELETE's own tombstone refuses the append until its clean scan.
    expect({ outcome, kept }).not.toEqual({ outcome: 'accepted', kept: false });
    expect(outcome).toBe('forget_in_progress');
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    expect(await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'ACKNOWLEDGED', turnId: 't-acknowledged' }] })).toEqual({ accepted: [{ turnId: 't-acknowledged', seq: 1 }] });
  });

  it("two projectors both overtaken, the later one having recorded decisions and enlisted with the earlier one's tombstone: the earlier one's purge takes them, and nothing is left", async () => {
    const key = { userId: 'u-scan-race-two', sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
    // The earlier projector is held before its embeddings, then right after it recorded its own tombstone.
    const { projecting: earlier, embedding, ownTombstone } = await projectorHeldAtItsTombstone(runtime, key);
    // The later projector (a final prune, which summarises the partial window) is held in its window's model call, and
    // later before it enlists.
    const modelCall = gate();
    const chat: ChatModel = Object.assign(Object.create(runtime.chat) as ChatModel, {
      run: (async (task, input) => (task === 'windowMetadata' && (await modelCall.hold()), runtime.chat.run(task, input))) as ChatModel['run'],
    });
    const laterEnlists = gate();
    const laterForgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
      enlist: async (k: typeof key) => (await laterEnlists.hold(), runtime.forgets.enlist(k)),
    });
    const later = projectSession({ ...runtime, chat, forgets: laterForgets }, key, { final: true });
    await modelCall.reached;
    await beginForget(runtime, key);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    // The later one records its window's summary as the start of a new stream and finds its event gone; the earlier one
    // writes, finds its event gone and records its own tombstone.
    modelCall.release();
    await laterEnlists.reached;
    embedding.release();
    await ownTombstone.reached;
    // The later one enlists with the earlier one's tombstone and leaves the purge to it.
    laterEnlists.release();
    await later;
    ownTombstone.release();
    await earlier;
    // On main's code the earlier one took the later one's decisions for a client's and left them: the summary of a
    // forgotten turn, in the stream and the session's rows.
    expect(await runtime.events.read(key, 0)).toEqual([]);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });

  // Left as it is (README, Forget, Races left): neither the append nor the projector can tell, when it must, whether
  // the projector's purge takes the turns, so the 409 means what a timeout means, and the retry gets their seqs back.
  it("an append written before an overtaken projector's look at the stream and enlisting with its own tombstone: 409 on Cosmos DB, its turns stay, and the retry with the same ids gets their seqs", async () => {
    const key = { userId: 'u-scan-race-refused', sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
    const { projecting, embedding, ownTombstone } = await projectorHeldAtItsTombstone(runtime, key);
    await beginForget(runtime, key);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    // A client's append lands on the new stream and is held before it enlists (PostgreSQL: it never enlists).
    const enlisting = gate();
    const appendForgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
      enlist: async (...args: Parameters<ForgetStore['enlist']>) => (await enlisting.hold(), runtime.forgets.enlist(...args)),
    });
    const turns = [{ role: 'user' as const, content: 'a second life', turnId: 't-second' }];
    const appending = appendTurns({ ...runtime, forgets: appendForgets }, key, { turns }).catch((error: unknown) => error);
    await Promise.race([enlisting.reached, appending]);
    // The projector writes, finds its event gone and records its own tombstone; the append enlists with it.
    embedding.release();
    await ownTombstone.reached;
    enlisting.release();
    const answer = await appending;
    ownTombstone.release();
    await projecting;
    // The projector found a client's turn in the stream and left it; on PostgreSQL the append was answered 202.
    const kept = (await runtime.events.read(key, 0)).filter((e) => e.type === 'TurnAppended').map((e) => e.data.turnId);
    expect(kept).toEqual(['t-second']);
    if (runtime.forgets.refusesWritesItself) expect(answer).toEqual({ accepted: [{ turnId: 't-second', seq: 1 }] });
    else expect(answer).toMatchObject({ code: 'forget_in_progress' });
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    expect(await appendTurns(runtime, key, { turns })).toEqual({ accepted: [{ turnId: 't-second', seq: 1 }] });
  });

  it("a projector's tombstone older than any invocation (one that died holding it) is cleared by the session's DELETE; a live one's is left to its projector", async () => {
    const key = { userId: 'u-scan-race-dead', sessionId: 'gone' };
    const now = runtime.clock.now().getTime();
    await runtime.forgets.markForgetting(key, 'projector', new Date(now - DEAD_PROJECTOR_MS - 1000));
    await beginForget(runtime, key);
    await forgetToEnd(runtime, key);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
    await runtime.forgets.markForgetting(key, 'projector', new Date(now - DEAD_PROJECTOR_MS + 60_000));
    await beginForget(runtime, key);
    await forgetToEnd(runtime, key);
    expect(await runtime.forgets.tombstoneVersion(key, 'forget')).toBeNull();
    expect(await runtime.forgets.forgetting(key)).toBe(true);
    await runtime.forgets.clearForgetting(key, 'projector');
  });
});
