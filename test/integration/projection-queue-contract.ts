import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ProjectionQueue } from '../../shared/application/projection-ports.js';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
/** A time `s` seconds after T0: the queue takes its times from the caller. */
const at = (s: number) => new Date(T0 + s * 1000);
const key = (userId: string, sessionId = 's1') => ({ userId, sessionId });
const keys = (entries: { key: { userId: string; sessionId: string } }[]) => entries.map((e) => `${e.key.userId}/${e.key.sessionId}`);

/** The behaviour every projection queue adapter shares; run against PostgreSQL (PGlite) and Cosmos DB (wire fake). */
export function describeProjectionQueueContract(name: string, open: () => Promise<{ queue: ProjectionQueue; close: () => Promise<void> }>) {
  describe(`projection queue contract: ${name}`, () => {
    let queue: ProjectionQueue;
    let close: (() => Promise<void>) | undefined;
    beforeEach(async () => {
      ({ queue, close } = await open());
    }, 60_000);
    afterEach(() => close?.());

    it('queues each session once and reports only the sessions that were not queued', async () => {
      expect(await queue.enqueue([key('a'), key('b'), key('a')], at(0))).toEqual([key('a'), key('b')]);
      expect(await queue.enqueue([key('b'), key('c')], at(1))).toEqual([key('c')]);
      expect(await queue.size()).toBe(3);
    });

    it('claims the least recently served first, and a leased session not again until its lease ends', async () => {
      await queue.enqueue([key('a')], at(0));
      await queue.enqueue([key('b')], at(1));
      const [first] = await queue.claim(1, at(2), at(32));
      expect(keys([first!])).toEqual(['a/s1']);
      // a is leased: the next claim takes b, then nothing is left to claim until a's lease ends.
      expect(keys(await queue.claim(5, at(3), at(33)))).toEqual(['b/s1']);
      expect(await queue.claim(5, at(4), at(34))).toEqual([]);
      expect(keys(await queue.claim(5, at(32), at(62)))).toEqual(['a/s1']);
    });

    it('round-robin: a session never served comes first, then the served ones, least recently served first', async () => {
      await queue.enqueue([key('busy'), key('older')], at(0));
      const [busy, older] = await queue.claim(2, at(1), at(31));
      await queue.requeue(older!, at(2));
      await queue.requeue(busy!, at(3));
      await queue.enqueue([key('new')], at(4));
      expect(keys(await queue.claim(3, at(5), at(35)))).toEqual(['new/s1', 'older/s1', 'busy/s1']);
    });

    it('done removes a served session, but not one queued again while it was served', async () => {
      await queue.enqueue([key('a'), key('b')], at(0));
      const claimed = await queue.claim(2, at(1), at(31));
      expect(claimed).toHaveLength(2);
      await queue.enqueue([key('b')], at(2)); // b's new events arrived while it was served
      for (const entry of claimed) await queue.done(entry, at(3));
      expect(await queue.size()).toBe(1);
      const [again] = await queue.claim(5, at(4), at(34));
      expect(keys([again!])).toEqual(['b/s1']);
      await queue.done(again!, at(5));
      expect(await queue.size()).toBe(0);
    });

    it('a failed session counts its failures and waits for its retry time; a served one starts again from none', async () => {
      await queue.enqueue([key('a')], at(0));
      let [entry] = await queue.claim(1, at(1), at(31));
      expect(entry!.failures).toBe(0);
      await queue.failed(entry!, at(2), at(10));
      expect(await queue.claim(1, at(9), at(39))).toEqual([]);
      [entry] = await queue.claim(1, at(10), at(40));
      expect(entry!.failures).toBe(1);
      await queue.failed(entry!, at(11), at(12));
      [entry] = await queue.claim(1, at(12), at(42));
      expect(entry!.failures).toBe(2);
      await queue.requeue(entry!, at(13));
      [entry] = await queue.claim(1, at(14), at(44));
      expect(entry!.failures).toBe(0);
    });

    it('claims named sessions only when they are queued, due and not leased', async () => {
      await queue.enqueue([key('a'), key('b'), key('c')], at(0));
      await queue.claimSessions([key('b')], at(1), at(31));
      const [c] = await queue.claimSessions([key('c')], at(1), at(31));
      await queue.failed(c!, at(2), at(60));
      expect(keys(await queue.claimSessions([key('a'), key('b'), key('c'), key('unknown')], at(3), at(33)))).toEqual(['a/s1']);
    });

    it('extends only the lease the claim still holds', async () => {
      await queue.enqueue([key('a')], at(0));
      const [claimed] = await queue.claim(1, at(1), at(31));
      expect(claimed!.leasedUntil).toBe(at(31).getTime());
      const extended = await queue.extend(claimed!, at(50));
      expect(extended).toEqual({ ...claimed, leasedUntil: at(50).getTime() });
      expect(await queue.claim(1, at(40), at(70))).toEqual([]);
      // The entry as first claimed no longer names the lease: nothing changes.
      expect(await queue.extend(claimed!, at(90))).toBeNull();
      // The lease ran out and another scheduler claimed the session: the first claim cannot take it back.
      const [again] = await queue.claim(1, at(51), at(81));
      expect(await queue.extend(extended!, at(100))).toBeNull();
      expect(await queue.claim(1, at(60), at(90))).toEqual([]);
      // Served (to the back of the queue): the claim holds no lease any more.
      await queue.requeue(again!, at(61));
      expect(await queue.extend(again!, at(120))).toBeNull();
      expect(await queue.claim(1, at(62), at(92))).toHaveLength(1);
    });

    it('a session lost from the queue while it was served is queued again by requeue and failed', async () => {
      await queue.enqueue([key('a'), key('b')], at(0));
      const [a, b] = await queue.claim(2, at(1), at(31));
      // Another scheduler, after the lease ran out, found nothing pending and removed them.
      await queue.done(a!, at(40));
      await queue.done(b!, at(40));
      expect(await queue.size()).toBe(0);
      await queue.requeue(a!, at(41));
      await queue.failed(b!, at(41), at(50));
      expect(await queue.size()).toBe(2);
      expect(keys(await queue.claim(5, at(42), at(72)))).toEqual(['a/s1']);
    });
  });
}
