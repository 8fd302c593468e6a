import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Embedder } from '../../shared/application/ports.js';
import { applyEvents, WRITE_UNIT_EVENTS } from '../../shared/application/project-session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { turnDraft } from '../support/builders.js';
import { embedderWith, memoryRuntime } from '../support/runtime.js';

/** A fast embedder of the runtime's model and size that counts the texts it embeds and fails the call `failAt` (1-based). */
function countingEmbedder(like: Embedder, failAt = Infinity) {
  const seen = { calls: 0, texts: 0 };
  const embedder = embedderWith(like, async (texts) => {
    if (++seen.calls === failAt) throw new Error('embedding service unavailable');
    seen.texts += texts.length;
    return texts.map((_, i) => Array.from({ length: like.dimensions }, (_, d) => (d === i % like.dimensions ? 1 : 0)));
  });
  return { embedder, seen };
}

describe('a long backlog is projected in units', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  }, 60_000);
  afterAll(() => runtime?.close());

  it('given a failure in the second unit, then the first unit stays written and the rerun embeds only what is left', async () => {
    const key = { userId: 'u-backlog', sessionId: 's1' };
    const turns = 2 * WRITE_UNIT_EVENTS + 76;
    const drafts = Array.from({ length: turns }, (_, i) => turnDraft(`t-${i + 1}`));
    for (let i = 0; i < drafts.length; i += 100) await runtime.events.append(key, drafts.slice(i, i + 100), new Date('2026-01-05T10:00:00Z'));

    const failing = countingEmbedder(runtime.embedder, 2);
    await expect(applyEvents({ ...runtime, embedder: failing.embedder }, key)).rejects.toThrow('embedding service unavailable');
    expect((await runtime.sessions.get(key))?.doc).toMatchObject({ projectedThroughSeq: WRITE_UNIT_EVENTS, turnCount: WRITE_UNIT_EVENTS });

    const working = countingEmbedder(runtime.embedder);
    const { session } = await applyEvents({ ...runtime, embedder: working.embedder }, key);
    expect(session).toMatchObject({ projectedThroughSeq: turns, turnCount: turns });
    expect(working.seen).toEqual({ calls: 2, texts: turns - WRITE_UNIT_EVENTS });
    expect((await runtime.sessions.get(key))?.doc.projectedThroughSeq).toBe(turns);
  });
});
