import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, finishForget, purgeStores } from '../../shared/application/forget.js';
import type { Embedder } from '../../shared/application/ports.js';
import { projectSession } from '../../shared/application/project-session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { embedderWith, memoryRuntime } from '../support/runtime.js';

/** An embedder that holds its next call until released: a projector caught between its load and its writes. */
function gated(embedder: Embedder) {
  let release!: () => void;
  let entered!: () => void;
  const open = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (entered = r));
  const wrapped = embedderWith(embedder, async (texts) => {
    entered();
    await open;
    return embedder.embed(texts);
  });
  return { wrapped, reached, release };
}

const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

describe('a forget that overtakes a projector in flight', () => {
  let runtime: Runtime;
  beforeAll(async () => {
    runtime = await memoryRuntime();
  }, 60_000);
  afterAll(() => runtime?.close());

  /** Projects the session's first turn while the whole forget of the session runs, then `meanwhile`, then lets it write. */
  async function forgetOvertakes(key: { userId: string; sessionId: string }, meanwhile: () => Promise<void> = async () => {}) {
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: 'the first life' }] });
    const gate = gated(runtime.embedder);
    const projecting = projectSession({ ...runtime, embedder: gate.wrapped }, key);
    await gate.reached;
    await beginForget(runtime, key);
    await purgeStores(runtime, key);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    await finishForget(runtime, { ...key, removed: 0 });
    await meanwhile();
    gate.release();
    await projecting;
  }

  it('the projector forgets what it wrote after the purge: no session, turn or event is left, and the scan finds nothing', async () => {
    const key = { userId: 'u-race', sessionId: 'gone' };
    await forgetOvertakes(key);
    expect(await runtime.sessions.get(key)).toBeNull();
    expect(await runtime.events.lastSeq(key)).toBe(0);
    expect(total(await runtime.forgets.scan(key))).toBe(0);
    expect(await runtime.forgets.forgetting(key)).toBe(false);
  });

  it('a session appended to again after its forget keeps its new turns: nothing acknowledged is lost', async () => {
    const key = { userId: 'u-race', sessionId: 'again' };
    await forgetOvertakes(key, () => appendTurns(runtime, key, { turns: [{ role: 'user', content: 'the second life' }] }).then(() => undefined));
    const events = await runtime.events.read(key, 0);
    expect(events.filter((e) => e.type === 'TurnAppended').map((e) => (e.data as { content: string }).content)).toEqual(['the second life']);
  });
});
