import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendTurns } from '../../shared/application/append-turns.js';
import { searchMemories, storeMemory } from '../../shared/application/artifacts.js';
import { getContext } from '../../shared/application/get-context.js';
import { recordHandoff } from '../../shared/application/handoff.js';
import { findFacts } from '../../shared/application/retrieval-agent.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import { putSlot } from '../../shared/application/slots.js';
import { LOCAL_PRINCIPAL } from '../../shared/platform/auth.js';
import { StoreMemoryBody } from '../../shared/contracts/artifacts.js';
import { load, projectSession } from '../../shared/application/project-session.js';
import { findThread } from '../../shared/domain/session.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { memoryRuntime } from '../support/runtime.js';

const N = 2;
let runtime: Runtime;
beforeAll(async () => {
  runtime = await memoryRuntime({ K_TURN_BUFFER: '3', N_ACTIVE_TURNS: String(N) });
});
afterAll(() => runtime.close());

const AGENTS = ['a', 'b', 'c'] as const;
let run = 0;

describe('threads (property, PGlite and the offline models)', () => {
  it('for random interleavings of agents, every turn is in exactly its agent\'s thread, each thread keeps the context invariant, and no agent\'s context or search returns another\'s private item', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom<string | undefined>(...AGENTS, undefined), { minLength: 1, maxLength: 24 }),
        fc.boolean(), // project before reading, or read while nothing is projected
        fc.boolean(), // one agent hands its private notes to another
        async (speakers, projected, handoff) => {
          const key = { userId: `prop-${++run}`, sessionId: 's' };
          const turns = speakers.map((agentId, i) => ({ role: 'assistant' as const, content: `turn ${i + 1} by ${agentId ?? 'nobody'}`, turnId: `t${i + 1}`, ...(agentId && { agentId }) }));
          await appendTurns(runtime, key, { turns });
          if (projected) await projectSession(runtime, key);
          const { session } = await load(runtime, key);
          const seqOf = new Map((await runtime.events.read(key, 0)).flatMap((e) => (e.type === 'TurnAppended' ? [[e.data.turnId, e.metadata.seq] as const] : [])));

          // Every turn is counted in exactly its agent's thread.
          for (const agentId of [...AGENTS, undefined]) {
            expect(findThread(session, agentId)?.turnCount ?? 0).toBe(speakers.filter((s) => s === agentId).length);
          }
          for (const agentId of AGENTS) {
            const context = await getContext(runtime, key, { agentId });
            // Only its own turns and the shared ones; none of another agent's.
            expect(context.sections.turns.every((t) => t.agentId === undefined || t.agentId === agentId)).toBe(true);
            for (const thread of [agentId, undefined]) {
              const mine = turns.filter((t) => t.agentId === thread);
              const verbatim = new Set(context.sections.turns.filter((t) => t.agentId === thread).map((t) => t.turnId));
              const covered = findThread(session, thread)?.chunkedThroughSeq ?? 0;
              // Per thread: every turn verbatim or covered by the summary, and at least N verbatim.
              for (const t of mine) expect(verbatim.has(t.turnId) || seqOf.get(t.turnId)! <= covered).toBe(true);
              expect(verbatim.size).toBeGreaterThanOrEqual(Math.min(N, mine.length));
            }
          }
          // Each agent keeps a private artifact and a private slot; no other agent's context or search returns them,
          // except what a handoff passed along (to its receiver only).
          const secret = (agentId: string) => `secret-${run}-${agentId}`;
          for (const agentId of AGENTS) {
            await storeMemory(runtime, LOCAL_PRINCIPAL, key.userId, StoreMemoryBody.parse({ key: secret(agentId), content: `private notes of ${agentId} about reefs`, scope: 'private', agentId, sessionId: key.sessionId }));
            await putSlot(runtime, LOCAL_PRINCIPAL, key.userId, secret(agentId), { scope: 'private', agentId }, { value: `${agentId} only` }, {});
          }
          const [from, to] = [AGENTS[run % 3]!, AGENTS[(run + 1) % 3]!];
          if (handoff) await recordHandoff(runtime, key, { fromAgentId: from, toAgentId: to, memoryKeys: [secret(from), `slot:${secret(from)}`] });
          const passed = (reader: string, owner: string) => handoff && reader === to && owner === from;
          for (const reader of AGENTS) {
            const context = await getContext(runtime, key, { agentId: reader });
            const viewer = { userId: key.userId, agentId: reader, sessionId: key.sessionId };
            const memoryHits = (await searchMemories(runtime, { ...viewer, grants: new Set(handoff && reader === to ? [secret(from)] : []) }, 'private notes reefs', 50)).map((h) => h.key);
            const facts = await searchFacts(runtime, key.userId, { query: 'private notes about reefs', topK: 50, sources: ['artifacts'], mode: 'search' }, viewer);
            for (const owner of AGENTS.filter((a) => a !== reader)) {
              const visible = passed(reader, owner);
              expect((context.sections.slots ?? []).some((slot) => slot.name === secret(owner)), `${reader} sees ${owner}'s slot`).toBe(visible);
              expect(context.text.includes(`${owner} only`)).toBe(visible);
              expect(memoryHits.includes(secret(owner))).toBe(visible);
              expect(facts.facts.some((f) => f.memoryKey === secret(owner))).toBe(false);
            }
            expect(memoryHits).toContain(secret(reader));
            expect(facts.facts.some((f) => f.memoryKey === secret(reader))).toBe(true);
          }

          const whole = await getContext(runtime, key, {});
          const shown = new Set(whole.sections.turns.map((t) => t.turnId));
          for (const t of turns) expect(shown.has(t.turnId) || seqOf.get(t.turnId)! <= whole.summaryCoversThroughSeq).toBe(true);
        },
      ),
      { numRuns: 25 },
    );
  }, 300_000);

  it('fact search as an agent-bound principal (no agentId in the body) reads as its agent: its private memory, not another agent\'s', async () => {
    const userId = `fact-principal-${++run}`;
    for (const agentId of ['a', 'b']) {
      await storeMemory(runtime, LOCAL_PRINCIPAL, userId, StoreMemoryBody.parse({ key: `notes-${agentId}`, content: `private notes of ${agentId} about reefs`, scope: 'private', agentId }));
    }
    const boundToA = { via: 'apikey' as const, subject: 'key-a', allUsers: false as const, userId, agentId: 'a' };
    const { facts } = await findFacts(runtime, boundToA, userId, { query: 'private notes about reefs', topK: 20, sources: ['artifacts'], mode: 'search' });
    expect(facts.map((f) => f.memoryKey)).toContain('notes-a');
    expect(facts.map((f) => f.memoryKey)).not.toContain('notes-b');
  });
});
