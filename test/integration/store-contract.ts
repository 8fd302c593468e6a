import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stores } from '../../shared/application/ports.js';
import { SCHEMA_VERSION } from '../../shared/contracts/events.js';
import type { InteractionDocument } from '../../shared/contracts/interactions.js';
import { MemoryError } from '../../shared/domain/errors.js';
import { newSession } from '../../shared/domain/session.js';
import { turnDraft } from '../support/builders.js';

const at = new Date('2026-01-05T10:00:00Z');
let counter = 0;
/** Every test works in its own user, so one store instance serves the whole suite. */
const freshKey = () => ({ userId: `user-${++counter}-${Date.now()}`, sessionId: 'sess.1' });

/** The behaviour every store adapter must share; run against PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeStoreContract(name: string, open: () => Promise<Stores>) {
  describe(`store contract: ${name}`, () => {
    let stores: Stores;
    beforeAll(async () => {
      stores = await open();
    }, 60_000);
    afterAll(() => stores?.close());

    describe('event store', () => {
      it('gives consecutive seqs from 1 and reads them back in order', async () => {
        const key = freshKey();
        const outcomes = await stores.events.append(key, [turnDraft('a'), turnDraft('b'), turnDraft('c')], at);
        expect(outcomes).toEqual([
          { seq: 1, turnId: 'a', duplicate: false },
          { seq: 2, turnId: 'b', duplicate: false },
          { seq: 3, turnId: 'c', duplicate: false },
        ]);
        const events = await stores.events.read(key, 0);
        expect(events.map((e) => [e.metadata.seq, e.type === 'TurnAppended' && e.data.turnId])).toEqual([[1, 'a'], [2, 'b'], [3, 'c']]);
        expect(events[0]!.metadata).toEqual({ schemaVersion: SCHEMA_VERSION, ...key, seq: 1, recordedAt: at.toISOString() });
        expect(await stores.events.lastSeq(key)).toBe(3);
        expect((await stores.events.read(key, 1, 1)).map((e) => e.metadata.seq)).toEqual([2]);
      });

      it('returns the original seq for a retried turnId and writes nothing twice', async () => {
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a'), turnDraft('b')], at);
        const retry = await stores.events.append(key, [turnDraft('b'), turnDraft('c')], at);
        expect(retry).toEqual([
          { seq: 2, turnId: 'b', duplicate: true },
          { seq: 3, turnId: 'c', duplicate: false },
        ]);
        expect((await stores.events.read(key, 0)).length).toBe(3);
      });

      it('records a lifecycle event once: a second writer of the same decision gets the first seq back', async () => {
        const key = freshKey();
        const summary = (text: string) => ({ type: 'SessionSummarised' as const, data: { summary: text, keyTopics: [], endedAt: at.toISOString(), model: 'm' } });
        await stores.events.append(key, [turnDraft('a')], at);
        expect(await stores.events.append(key, [summary('first')], at)).toEqual([{ seq: 2, duplicate: false }]);
        expect(await stores.events.append(key, [summary('second')], at)).toEqual([{ seq: 2, duplicate: true }]);
        expect((await stores.events.read(key, 0)).map((e) => e.type === 'SessionSummarised' && e.data.summary)).toEqual([false, 'first']);
      });

      it('refuses turns once the end request is recorded (session_ended), yet answers a repeated turn and takes lifecycle events', async () => {
        const key = freshKey();
        const end = { type: 'SessionEndRequested' as const, data: { reason: 'client' as const } };
        await stores.events.append(key, [turnDraft('a'), end], at);
        await expect(stores.events.append(key, [turnDraft('late')], at)).rejects.toMatchObject({ code: 'session_ended' });
        await expect(stores.events.append(key, [end, turnDraft('late')], at)).rejects.toMatchObject({ code: 'session_ended' });
        expect(await stores.events.append(key, [turnDraft('a')], at)).toEqual([{ seq: 1, turnId: 'a', duplicate: true }]);
        expect(await stores.events.append(key, [end], at)).toEqual([{ seq: 2, duplicate: true }]);
        expect(await stores.events.append(key, [{ type: 'SessionCompleted', data: { endedAt: at.toISOString() } }], at)).toEqual([{ seq: 3, duplicate: false }]);
        expect(await stores.events.lastSeq(key)).toBe(3);
      });

      it('lists the sessions that have events, of one user or of all', async () => {
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a')], at);
        await stores.events.append({ ...key, sessionId: 'sess.2' }, [turnDraft('b')], at);
        expect(await stores.events.sessions(key.userId)).toEqual([key, { ...key, sessionId: 'sess.2' }]);
        expect(await stores.events.sessions()).toEqual(expect.arrayContaining([key, { ...key, sessionId: 'sess.2' }]));
      });

      it('reads the last turns before a seq, skipping lifecycle events', async () => {
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a'), turnDraft('b'), { type: 'SessionEndRequested', data: { reason: 'idle' } }, { type: 'SessionCompleted', data: { endedAt: at.toISOString() } }], at);
        expect((await stores.events.readLastTurns(key, 2, 5)).map((t) => t.data.turnId)).toEqual(['a', 'b']);
        expect((await stores.events.readLastTurns(key, 5, 2)).map((t) => t.data.turnId)).toEqual(['a']);
      });

      it('keeps seqs gapless and unique under concurrent appends to one session', async () => {
        const key = freshKey();
        const clients = Array.from({ length: 8 }, (_, c) =>
          (async () => {
            for (let i = 0; i < 5; i++) await stores.events.append(key, [turnDraft(`c${c}-${i}`)], at);
          })(),
        );
        await Promise.all(clients);
        const seqs = (await stores.events.read(key, 0)).map((e) => e.metadata.seq);
        expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      }, 60_000);

      it('keeps sessions and users apart', async () => {
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a')], at);
        await stores.events.append({ ...key, sessionId: 'other' }, [turnDraft('a')], at);
        await stores.events.append({ ...key, userId: `${key.userId}-x` }, [turnDraft('a')], at);
        expect(await stores.events.lastSeq(key)).toBe(1);
        expect(await stores.events.read(key, 0)).toHaveLength(1);
        expect(await stores.events.lastSeq({ ...key, sessionId: 'never' })).toBe(0);
      });

      it('reads the last turns, skipping session events', async () => {
        const key = freshKey();
        await stores.events.append(key, [turnDraft('a'), turnDraft('b'), turnDraft('c')], at);
        await stores.events.append(key, [{ type: 'SessionEndRequested', data: { reason: 'client' } }], at);
        const last = await stores.events.readLastTurns(key, 2);
        expect(last.map((t) => t.data.turnId)).toEqual(['b', 'c']);
        expect((await stores.events.read(key, 3)).map((e) => e.type)).toEqual(['SessionEndRequested']);
      });
    });

    describe('session store', () => {
      it('creates once, then updates only from the current version', async () => {
        const key = freshKey();
        expect(await stores.sessions.get(key)).toBeNull();
        const doc = newSession(key, at);
        const v1 = await stores.sessions.put(doc, null);
        await expect(stores.sessions.put(doc, null)).rejects.toMatchObject({ code: 'conflict' });
        const v2 = await stores.sessions.put({ ...doc, turnCount: 3 }, v1);
        await expect(stores.sessions.put({ ...doc, turnCount: 4 }, v1)).rejects.toBeInstanceOf(MemoryError);
        const stored = await stores.sessions.get(key);
        expect(stored).toEqual({ doc: { ...doc, turnCount: 3 }, version: v2 });
      });

      it("reads sessions' projection checkpoints in one call, in the order asked, 0 for a session without a document", async () => {
        const key = freshKey();
        const other = { ...key, sessionId: 'sess.2' };
        await stores.sessions.put({ ...newSession(key, at), projectedThroughSeq: 7 }, null);
        await stores.sessions.put({ ...newSession(other, at), projectedThroughSeq: 2 }, null);
        const missing = { ...key, sessionId: 'sess.3' };
        expect(await stores.sessions.projectedThrough([other, missing, key, other])).toEqual([2, 0, 7, 2]);
        expect(await stores.sessions.projectedThrough([{ ...key, userId: `${key.userId}-x` }])).toEqual([0]);
        expect(await stores.sessions.projectedThrough([])).toEqual([]);
      });
    });

    describe('interaction store', () => {
      it('upserts by id and lists a session in seq order', async () => {
        const key = freshKey();
        const doc = (fromSeq: number, summary: string): InteractionDocument => ({
          schemaVersion: SCHEMA_VERSION,
          id: `${key.sessionId}:${fromSeq}`,
          ...key,
          agentIds: [],
          turnIds: [`t${fromSeq}`],
          seqRange: [fromSeq, fromSeq + 1],
          startedAt: at.toISOString(),
          endedAt: at.toISOString(),
          content: 'user: hi',
          summary,
          topics: ['greeting'],
          entities: [],
          embeddingModel: 'test-3',
          contentVector: [0.5, 0.25, -1],
          summaryVector: [1, 0, 0],
          createdAt: at.toISOString(),
        });
        await stores.interactions.upsert([doc(11, 'second'), doc(1, 'first')]);
        await stores.interactions.upsert([doc(11, 'second, again')]);
        const listed = await stores.interactions.listBySession(key);
        expect(listed.map((d) => d.summary)).toEqual(['first', 'second, again']);
        expect(listed[0]).toEqual(doc(1, 'first'));
      });
    });

  });
}
