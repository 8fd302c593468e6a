import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { createSnapshot, restoreSnapshot, storeMemory } from '../../shared/application/artifacts.js';
import type { BlobStore } from '../../shared/application/artifact-ports.js';
import { beginForget, purgeBlobs, purgeStores } from '../../shared/application/forget.js';
import type { ForgetStore } from '../../shared/application/forget-ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import { recordHandoff } from '../../shared/application/handoff.js';
import type { OrchestrationClient } from '../../shared/application/operation-ports.js';
import { endIdleSessions, endSession } from '../../shared/application/session-end.js';
import { getSlot, putSlot } from '../../shared/application/slots.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import { sessionEndInstanceId } from '../../shared/contracts/operations.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { LOCAL_PRINCIPAL } from '../../shared/platform/auth.js';
import { useCosmosFake } from '../support/cosmos-fake.js';
import { finishRounds, forgetToEnd, gate, heldProjector, projectorHeldAtItsTombstone, purgeAndScan, raceBackends, scanSession, total } from '../support/forget-race.js';

const cosmos = useCosmosFake();

/** Session end's orchestrations: starting one writes nothing of the session here. */
const orchestrations: Pick<OrchestrationClient, 'start'> = { start: async (_name, instanceId) => ({ instanceId, started: true }) };

/** A turn the session holds before a handoff or an end request (neither is taken by a session without events). */
const opened = (runtime: Runtime, key: SessionKey, text: string) => appendTurns(runtime, key, { turns: [{ role: 'user', content: `${text} opened`, turnId: `t-${text}-opened` }] });

/**
 * A client's write of the session: an append of turns, a memory (artifact) of the session, a snapshot restored into the
 * session (its source is the user's, of no session), a session slot, a handoff (its note the client's text), an end
 * request (the session opened first).
 */
const WRITERS = {
  append: (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) =>
    appendTurns({ ...runtime, forgets }, key, { turns: [{ role: 'user', content: text, turnId: `t-${text}` }] }),
  memory: (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) =>
    storeMemory({ ...runtime, forgets }, LOCAL_PRINCIPAL, key.userId, { content: text, key: `m-${text}`, type: 'note', tags: [], sessionId: key.sessionId }),
  restore: async (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) => {
    await storeMemory(runtime, LOCAL_PRINCIPAL, key.userId, { content: text, key: `src-${text}`, type: 'note', tags: [] });
    await runtime.detail.artifacts.putSnapshot({ userId: key.userId, snapshotId: `snap-${text}`, keys: [`src-${text}`], createdAt: new Date().toISOString() });
    return restoreSnapshot({ ...runtime, forgets }, key.userId, `snap-${text}`, { agentId: 'a', sessionId: key.sessionId });
  },
  slot: (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) =>
    putSlot({ ...runtime, forgets }, LOCAL_PRINCIPAL, key.userId, `s-${text}`, { scope: 'session', sessionId: key.sessionId }, { value: text }, {}),
  handoff: async (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) => {
    await opened(runtime, key, text);
    return recordHandoff({ ...runtime, forgets }, key, { handoffId: `h-${text}`, fromAgentId: 'a', toAgentId: 'b', note: text, memoryKeys: [] });
  },
  end: async (runtime: Runtime, key: SessionKey, forgets: ForgetStore, text: string) => {
    await opened(runtime, key, text);
    return endSession({ ...runtime, forgets }, orchestrations, key, 'client');
  },
};
type Writer = keyof typeof WRITERS;

/**
 * A client's write of a user's item of no session: a snapshot of one of the user's memories (ids only), `snap-<text>`.
 * Only the user's forget covers it.
 */
async function snapshot(runtime: Runtime, userId: string, forgets: ForgetStore, text: string) {
  await storeMemory(runtime, LOCAL_PRINCIPAL, userId, { content: text, key: `snapped-${text}`, type: 'note', tags: [] });
  return createSnapshot({ ...runtime, forgets, ids: { newId: () => text } }, { userId }, { keys: [`snapped-${text}`] });
}

const snapshotHeld = async (runtime: Runtime, userId: string, text: string) => (await runtime.detail.artifacts.getSnapshot(userId, `snap-${text}`)) !== null;

/** Whether the client's write of `text` is there to read. */
async function readable(runtime: Runtime, key: SessionKey, writer: Writer, text: string): Promise<boolean> {
  const events = await runtime.events.read(key, 0);
  if (writer === 'append') return events.some((e) => e.type === 'TurnAppended' && e.data.content === text);
  if (writer === 'handoff') return events.some((e) => e.type === 'SessionHandoff' && e.data.handoffId === `h-${text}`);
  if (writer === 'end') return events.some((e) => e.type === 'TurnAppended' && e.data.turnId === `t-${text}-opened`) && events.some((e) => e.type === 'SessionEndRequested');
  if (writer === 'memory') return (await runtime.detail.artifacts.get(key.userId, `m-${text}`, new Date())) !== null;
  if (writer === 'restore') {
    const { items } = await runtime.detail.artifacts.list({ ...key, agentId: 'a' }, {}, 10, new Date());
    return items.some((a) => a.restoredFrom?.snapshotId === `snap-${text}`);
  }
  return getSlot(runtime, LOCAL_PRINCIPAL, key.userId, `s-${text}`, { scope: 'session', sessionId: key.sessionId }).then(
    () => true,
    () => false,
  );
}

/**
 * The writer's view of the tombstones: `beforeWrite` runs right after its first look (the check before it writes:
 * the write is yet to land), and every later look (its check after the write: `enlist`, or on main's code a second
 * `forgetting`) is held at `look`, before or after the look itself.
 */
function watchedForgets(runtime: Runtime, beforeWrite: () => Promise<unknown>, hold: 'before the look' | 'after the look') {
  const look = gate();
  let looks = 0;
  const held = async <T>(see: () => Promise<T>): Promise<T> => {
    if (hold === 'before the look') await look.hold();
    const seen = await see();
    if (hold === 'after the look') await look.hold();
    return seen;
  };
  const forgets: ForgetStore = Object.assign(Object.create(runtime.forgets) as ForgetStore, {
    forgetting: async (key: SessionKey) => {
      if (++looks > 1) return held(() => runtime.forgets.forgetting(key));
      const seen = await runtime.forgets.forgetting(key);
      await beforeWrite();
      return seen;
    },
    enlist: (...args: Parameters<ForgetStore['enlist']>) => held(() => runtime.forgets.enlist(...args)),
  });
  return { forgets, look };
}

/** Blob Storage in memory: the names it holds. */
function heldBlobs(): BlobStore & { names: () => string[] } {
  const held = new Map<string, Buffer>();
  return {
    put: async (name, content) => void held.set(name, content),
    get: async (name) => held.get(name)!,
    delete: async (name) => void held.delete(name),
    existing: async (query) => ('prefix' in query ? [...held.keys()].filter((n) => n.startsWith(query.prefix)) : query.names.filter((n) => held.has(n))),
    names: () => [...held.keys()],
  };
}

const settled = (writing: Promise<unknown>) =>
  writing.then(
    () => null,
    (error: unknown) => error,
  );

describe.each(raceBackends(cosmos))("a client's write across a session forget: $name", ({ name, open }) => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await open();
  }, 120_000);
  afterAll(() => runtime?.close());
  const postgres = name.startsWith('PostgreSQL');

  it.each(Object.keys(WRITERS) as Writer[])(
    "%s: the forget's tombstone comes after the write's first check and its scan before the write lands: 409, the forget purges it in another round, and nothing is left",
    async (writer) => {
      const key = { userId: `u-late-${writer}`, sessionId: 'gone' };
      let tombstone: string | null = null;
      const { forgets, look } = watchedForgets(
        runtime,
        async () => {
          await beginForget(runtime, key);
          tombstone = await purgeAndScan(runtime, key);
        },
        'after the look',
      );
      const writing = settled(WRITERS[writer](runtime, key, forgets, 'late'));
      // PostgreSQL's guard refuses the write under the tombstone, so it never looks again.
      await Promise.race([look.reached, writing]);
      look.release();
      expect(await writing).toMatchObject({ code: 'forget_in_progress' });
      // Cosmos DB: the write enlisted with the tombstone, so the clear under the scan's version fails and the forget
      // purges and scans again (on main's code the memory and the slot survived the forget, the append purged itself).
      expect(await finishRounds(runtime, key, tombstone)).toBe(postgres ? 1 : 2);
      expect(total(await runtime.forgets.scan(key))).toBe(0);
      expect(await runtime.forgets.forgetting(key)).toBe(false);
    },
  );

  // An end request's key is the session's one `@end`: a session written anew and ended again holds it at the same seq,
  // and is taken for kept (the session is ended, as asked; pinned below). The end's own cases follow.
  it.each((Object.keys(WRITERS) as Writer[]).filter((w) => w !== 'end'))(
    '%s: the write lands under the tombstone and the forget purges it and clears its tombstone before the check after the write: 409, not an answer for what is gone',
    async (writer) => {
      const key = { userId: `u-gone-${writer}`, sessionId: 'gone' };
      const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, key), 'before the look');
      const writing = settled(WRITERS[writer](runtime, key, forgets, 'purged'));
      await Promise.race([look.reached, writing]);
      expect(await forgetToEnd(runtime, key)).toBe(1);
      // Another client writes the session anew (an append takes seq 1 again, the seq the purged turn had).
      await WRITERS[writer](runtime, key, runtime.forgets, 'anew');
      look.release();
      expect(await writing).toMatchObject({ code: 'forget_in_progress' });
      expect(await readable(runtime, key, writer, 'purged')).toBe(false);
      expect(await readable(runtime, key, writer, 'anew')).toBe(true);
    },
  );

  // A slot's stream starts at version 1 again after a forget: another client's writes of the same slot may take the
  // refused write's version, or go past it, before its check. Its identity, not its version or its time, tells it.
  it.each([1, 2])(
    "slot: written under the tombstone, purged with its tombstone cleared before the check after the write, and the same slot written %i time(s) anew in the same millisecond: 409, and the new value is kept",
    async (writes) => {
      const key = { userId: `u-slot-anew-${writes}`, sessionId: 'gone' };
      const sameTime = { ...runtime, clock: { now: () => new Date('2026-03-01T09:00:00.000Z') } };
      const slot = (forgets: ForgetStore, value: string) =>
        putSlot({ ...sameTime, forgets }, LOCAL_PRINCIPAL, key.userId, 'plan', { scope: 'session', sessionId: key.sessionId }, { value }, {});
      const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, key), 'before the look');
      const writing = settled(slot(forgets, 'purged'));
      await Promise.race([look.reached, writing]);
      expect(await forgetToEnd(runtime, key)).toBe(1);
      for (let n = 1; n <= writes; n++) expect((await slot(runtime.forgets, 'anew')).slot.version).toBe(n);
      look.release();
      // On main's code (Cosmos DB) the check read the head, at the refused write's version (same time) or past it: 200.
      expect(await writing).toMatchObject({ code: 'forget_in_progress' });
      expect(await getSlot(runtime, LOCAL_PRINCIPAL, key.userId, 'plan', { scope: 'session', sessionId: key.sessionId })).toMatchObject({ value: 'anew', version: writes });
    },
  );

  it("append: its check after the write finds the tombstone; the forget completes and a client's next append is accepted before the check answers: that append is kept", async () => {
    const key = { userId: 'u-next', sessionId: 'gone' };
    const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, key), 'after the look');
    const writing = settled(WRITERS.append(runtime, key, forgets, 'refused'));
    await Promise.race([look.reached, writing]);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    const next = await WRITERS.append(runtime, key, runtime.forgets, 'next');
    expect(next.accepted).toEqual([{ turnId: 't-next', seq: 1 }]);
    look.release();
    expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    // On main's code the refused append purged the session here, the acknowledged turn with it.
    expect(await readable(runtime, key, 'append', 'next')).toBe(true);
    expect(await readable(runtime, key, 'append', 'refused')).toBe(false);
  });

  it("end: the request lands under the tombstone and the forget purges it and clears its tombstone before the check after the write: 409, and a client's append meanwhile is kept", async () => {
    const key = { userId: 'u-gone-end-append', sessionId: 'gone' };
    const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, key), 'before the look');
    const writing = settled(WRITERS.end(runtime, key, forgets, 'purged'));
    await Promise.race([look.reached, writing]);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    await opened(runtime, key, 'anew');
    look.release();
    expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    const events = await runtime.events.read(key, 0);
    expect(events.map((e) => e.type)).toEqual(['TurnAppended']);
  });

  // Kept on purpose: the answer is the one the request gets arriving after the forget (ending an ended session records
  // nothing and answers the same operation), and what it asked for, the session ended, holds.
  it('end: the request lands under the tombstone, the forget purges it and clears its tombstone, and the session is written anew and ended again (its `@end` at the same seq) before the check: answered as the end of the ended session', async () => {
    const key = { userId: 'u-gone-end-again', sessionId: 'gone' };
    const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, key), 'before the look');
    const writing = WRITERS.end(runtime, key, forgets, 'purged').catch((error: unknown) => error);
    await Promise.race([look.reached, writing]);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    await WRITERS.end(runtime, key, runtime.forgets, 'anew');
    const ended = (await runtime.events.read(key, 0)).find((e) => e.type === 'SessionEndRequested');
    look.release();
    // PostgreSQL's guard refuses the request under the tombstone: it was never written.
    if (postgres) expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    else expect(await writing).toEqual(await endSession(runtime, orchestrations, key, 'client'));
    expect(await readable(runtime, key, 'end', 'purged')).toBe(false);
    expect(await readable(runtime, key, 'end', 'anew')).toBe(true);
    expect((await runtime.events.read(key, 0)).filter((e) => e.type === 'SessionEndRequested')).toEqual([ended]);
  });

  it("snapshot: a user forget's tombstone comes after the snapshot's first check and its scan before the write lands: 409, the forget purges it in another round, and nothing is left", async () => {
    const user = { userId: 'u-snapshot-late' };
    let tombstone: string | null = null;
    const { forgets, look } = watchedForgets(
      runtime,
      async () => {
        await beginForget(runtime, user);
        tombstone = await purgeAndScan(runtime, user);
      },
      'after the look',
    );
    const writing = settled(snapshot(runtime, user.userId, forgets, 'late'));
    await Promise.race([look.reached, writing]);
    look.release();
    expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    // On main's code the snapshot was written after the scan (Cosmos DB) and survived the forget.
    expect(await finishRounds(runtime, user, tombstone)).toBe(postgres ? 1 : 2);
    expect(total(await runtime.forgets.scan(user))).toBe(0);
  });

  it('snapshot: written under the tombstone, purged with its tombstone cleared before the check after the write: 409, and a snapshot made meanwhile is kept', async () => {
    const user = { userId: 'u-snapshot-gone' };
    const { forgets, look } = watchedForgets(runtime, () => beginForget(runtime, user), 'before the look');
    const writing = settled(snapshot(runtime, user.userId, forgets, 'purged'));
    await Promise.race([look.reached, writing]);
    expect(await forgetToEnd(runtime, user)).toBe(1);
    await snapshot(runtime, user.userId, runtime.forgets, 'anew');
    look.release();
    expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    expect(await snapshotHeld(runtime, user.userId, 'purged')).toBe(false);
    expect(await snapshotHeld(runtime, user.userId, 'anew')).toBe(true);
  });

  it('the idle timeout skips a session being forgotten and ends the others', async () => {
    const [gone, kept] = [{ userId: 'u-idle', sessionId: 'gone' }, { userId: 'u-idle', sessionId: 'kept' }];
    // Idle by the service's clock: the turns were recorded long ago.
    const longAgo = { ...runtime, clock: { now: () => new Date('2020-01-01T00:00:00Z') } };
    for (const key of [gone, kept]) {
      await opened(longAgo, key, key.sessionId);
      await projectSession(runtime, key);
    }
    await beginForget(runtime, gone);
    // On main's code the sweep failed at the forgotten session (PostgreSQL) or ended it (Cosmos DB).
    expect(await endIdleSessions(runtime, orchestrations, 60)).toEqual({ ended: [sessionEndInstanceId(kept.userId, kept.sessionId)] });
    expect((await runtime.events.read(gone, 0)).map((e) => e.type)).not.toContain('SessionEndRequested');
    expect((await runtime.events.read(kept, 0)).map((e) => e.type)).toContain('SessionEndRequested');
  });

  // PostgreSQL only: Cosmos DB writes the row (the next case: the purge deletes its blob with it).
  it.runIf(postgres)("memory in Blob Storage: the row refused under a session forget begun after the write's check leaves no blob", async () => {
    const key = { userId: 'u-blob', sessionId: 'gone' };
    const blobs = heldBlobs();
    const withBlobs: Runtime = { ...runtime, detail: { ...runtime.detail, blobs, limits: { ...runtime.detail.limits, inlineMaxBytes: 2 } } };
    const { forgets } = watchedForgets(
      withBlobs,
      async () => {
        await beginForget(runtime, key);
        await purgeBlobs(withBlobs, key);
      },
      'after the look',
    );
    expect(await settled(WRITERS.memory(withBlobs, key, forgets, 'blob'))).toMatchObject({ code: 'forget_in_progress' });
    // On main's code the blob stayed, named by no row.
    expect(blobs.names()).toEqual([]);
    expect(await forgetToEnd(runtime, key)).toBe(1);
  });

  it("memory in Blob Storage: its blob and row land after the session forget's blob step and before its store step: the purge deletes the blob with the row", async () => {
    const key = { userId: 'u-blob-late', sessionId: 'gone' };
    const blobs = heldBlobs();
    const withBlobs: Runtime = { ...runtime, detail: { ...runtime.detail, blobs, limits: { ...runtime.detail.limits, inlineMaxBytes: 2 } } };
    const { forgets, look } = watchedForgets(
      withBlobs,
      async () => {
        await beginForget(withBlobs, key);
        await purgeBlobs(withBlobs, key);
      },
      'before the look',
    );
    const writing = settled(WRITERS.memory(withBlobs, key, forgets, 'blob'));
    // Cosmos DB: the blob and the row are written, the check after the write held; PostgreSQL's guard refuses the row.
    await Promise.race([look.reached, writing]);
    const { removed } = await purgeStores(withBlobs, key);
    const scan = await scanSession(withBlobs, key);
    expect(scan.total).toBe(0);
    look.release();
    expect(await writing).toMatchObject({ code: 'forget_in_progress' });
    expect(await finishRounds(withBlobs, key, scan.tombstone)).toBe(postgres ? 1 : 2);
    // On main's code (Cosmos DB) the blob stayed, named by no row, and the proof said zero.
    expect(blobs.names().filter((n) => n.startsWith(`${key.userId}/`))).toEqual([]);
    expect(removed.blobs).toBe(postgres ? 0 : 1);
  });

  it.each(['memory', 'restore', 'slot'] as const)(
    "%s: written after the forget, its check after the write while only an overtaken projector's own tombstone is there: accepted and kept (that projector's purge keeps a client's items)",
    async (writer) => {
      const key = { userId: `u-overtaken-${writer}`, sessionId: 'gone' };
      await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
      const { projecting, embedding, ownTombstone } = await projectorHeldAtItsTombstone(runtime, key);
      await beginForget(runtime, key);
      expect(await forgetToEnd(runtime, key)).toBe(1);
      // The client's write lands, and its check after the write is held until the projector has recorded its tombstone
      // (PostgreSQL: the writer does not look after its write).
      const { forgets, look } = watchedForgets(runtime, async () => {}, 'before the look');
      const writing = settled(WRITERS[writer](runtime, key, forgets, 'beside'));
      await Promise.race([look.reached, writing]);
      embedding.release();
      await ownTombstone.reached;
      look.release();
      // On main's code (Cosmos DB) it enlisted with the projector's tombstone: 409, and kept all the same.
      expect(await writing).toBeNull();
      ownTombstone.release();
      await projecting;
      expect(await readable(runtime, key, writer, 'beside')).toBe(true);
      expect(await runtime.forgets.forgetting(key)).toBe(false);
    },
  );

  it("memory, restore and slot: written after the forget, before a projector the forget overtook forgets what it wrote: kept", async () => {
    const key = { userId: 'u-overtaken', sessionId: 'gone' };
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'FORGOTTEN-TURN about the pension' }] });
    const { embedding, written, embedder, sessions } = heldProjector(runtime);
    const projecting = projectSession({ ...runtime, embedder, sessions }, key);
    await embedding.reached;
    await beginForget(runtime, key);
    expect(await forgetToEnd(runtime, key)).toBe(1);
    const clientWrites = ['memory', 'restore', 'slot'] as const;
    for (const writer of clientWrites) await WRITERS[writer](runtime, key, runtime.forgets, 'after');
    embedding.release();
    written.release();
    await projecting;
    // The projector forgot what it wrote (its session document), not what the client wrote since (on main's code its
    // purge of the session deleted them).
    expect(await runtime.sessions.get(key)).toBeNull();
    for (const writer of clientWrites) expect(await readable(runtime, key, writer, 'after')).toBe(true);
  });
});
