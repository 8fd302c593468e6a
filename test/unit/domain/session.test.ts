import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, type EventDraft, type MemoryEvent } from '../../../shared/contracts/events.js';
import {
  decideAggregation,
  decideCompletion,
  decideEnd,
  decideInit,
  decideInteraction,
  decideReflection,
  decideSummary,
  foldSession,
  newSession,
  sessionOf,
  threadSummary,
  windowsToSummarise,
  withBookmark,
  withDecidedAhead,
} from '../../../shared/domain/session.js';
import { turn, turns } from '../../support/builders.js';

const key = { userId: 'u1', sessionId: 's1' };
const now = new Date('2026-01-01T00:00:00Z');

/** A recorded lifecycle event at `seq`. */
const recorded = (seq: number, draft: EventDraft): MemoryEvent =>
  ({ ...draft, metadata: { schemaVersion: SCHEMA_VERSION, ...key, seq, recordedAt: new Date(Date.parse('2026-02-01T00:00:00Z') + seq * 1000).toISOString() } }) as MemoryEvent;

const given = (...events: MemoryEvent[]) => sessionOf(key, events);
const window = (fromSeq: number, toSeq: number) => ({ fromSeq, toSeq, turns: turns(fromSeq, toSeq) });
const metadata = (n: number) => ({ summary: `summary ${n}`, topics: ['t'], entities: ['e'], cumulativeSummary: `so far ${n}` });
const summarised = (seq: number, fromSeq: number, toSeq: number) => recorded(seq, decideInteraction(given(), window(fromSeq, toSeq), metadata(fromSeq), 'm')[0]!);
const endRequested = (seq: number) => recorded(seq, { type: 'SessionEndRequested', data: { reason: 'client' } });

describe('evolve (the session document as a fold of its events)', () => {
  it('given turns from two agents, counts them and records the agents once, in order of appearance', () => {
    const s = given(turn(1, 'a', { agentId: 'planner' }), turn(2, 'b', { agentId: 'coder' }), turn(3, 'c', { agentId: 'planner' }));
    expect(s).toMatchObject({ projectedThroughSeq: 3, turnCount: 3, agentIds: ['planner', 'coder'], startedAt: turn(1).data.timestamp, lastTurnAt: turn(3).data.timestamp });
  });

  it('given imported turns with old client timestamps, records activity by the service clock, not by the timestamps', () => {
    const imported = { ...turn(1, 'from 2023', { timestamp: '2023-05-08T13:56:00.000Z' }), metadata: { ...turn(1).metadata, recordedAt: '2026-01-01T10:00:00.000Z' } };
    expect(given(imported)).toMatchObject({ lastTurnAt: '2023-05-08T13:56:00.000Z', lastActivityAt: '2026-01-01T10:00:00.000Z' });
  });

  it('given events it has already folded, changes nothing (re-delivery is harmless)', () => {
    const once = given(turn(1), turn(2));
    expect(foldSession(once, [turn(1), turn(2)])).toEqual(once);
  });

  it('given the same stream twice, gives the same document, times included (a rebuild reproduces it)', () => {
    const stream = [...turns(1, 3), summarised(4, 1, 3), endRequested(5)];
    expect(sessionOf(key, stream)).toEqual(sessionOf(key, stream));
    expect(sessionOf(key, stream).updatedAt).toBe(stream.at(-1)!.metadata.recordedAt);
  });

  it('given the whole lifecycle, the session is summarised, reflected and completed with the recorded outputs', () => {
    const s = given(
      ...turns(1, 3),
      recorded(4, { type: 'SessionInitFixed', data: { profile: { text: 'likes tea', version: 2 }, recentSessions: [] } }),
      summarised(5, 1, 3),
      endRequested(6),
      recorded(7, { type: 'SessionSummarised', data: { summary: 'all of it', keyTopics: ['tea'], endedAt: turn(3).data.timestamp, model: 'm' } }),
      recorded(8, { type: 'SessionReflected', data: { outcome: 'no-insight', insightIds: [], dropped: 0, model: 'm' } }),
      recorded(9, { type: 'SessionAggregated', data: { sessionIds: ['s0', 's1'], insightIds: ['i1'] } }),
      recorded(10, { type: 'SessionCompleted', data: { endedAt: '2030-01-01T00:00:00.000Z' } }),
    );
    expect(s).toMatchObject({
      status: 'completed',
      reflectionStatus: 'processed',
      chunkedThroughSeq: 3,
      cumulativeSummary: 'so far 1',
      summary: 'all of it',
      keyTopics: ['tea'],
      endedAt: turn(3).data.timestamp,
      init: { profile: 'likes tea', recentSessions: [] },
      projectedThroughSeq: 10,
    });
  });
});

describe('decisions (given events, when a command, then the events to append)', () => {
  it('end: an active session records the request; an ending or completed one records nothing', () => {
    expect(decideEnd(given(turn(1)), 'idle')).toEqual([{ type: 'SessionEndRequested', data: { reason: 'idle' } }]);
    expect(decideEnd(given(turn(1), endRequested(2)), 'client')).toEqual([]);
  });

  it('windows: full windows after the checkpoint; the trailing partial one only once the session ends', () => {
    const state = given(...turns(1, 12), summarised(13, 1, 5));
    const stream = turns(1, 12);
    expect(windowsToSummarise(state, stream, 5, false).map((w) => [w.fromSeq, w.toSeq])).toEqual([[6, 10]]);
    expect(windowsToSummarise(state, stream, 5, true).map((w) => [w.fromSeq, w.toSeq])).toEqual([[6, 10], [11, 12]]);
  });

  it('interaction: the model output is recorded with the window; a window already covered records nothing', () => {
    const state = given(...turns(1, 10), summarised(11, 1, 5));
    expect(decideInteraction(state, window(6, 10), metadata(6), 'gpt')).toEqual([
      { type: 'InteractionSummarised', data: { fromSeq: 6, toSeq: 10, summary: 'summary 6', topics: ['t'], entities: ['e'], cumulativeSummary: 'so far 6', agentId: null, model: 'gpt' } },
    ]);
    expect(decideInteraction(state, window(1, 5), metadata(1), 'gpt')).toEqual([]);
  });

  it('init: fixed once, when the session has a turn', () => {
    expect(decideInit(newSession(key, now), null, [])).toEqual([]);
    expect(decideInit(given(turn(1)), { text: 'p', version: 3 }, [])).toEqual([{ type: 'SessionInitFixed', data: { profile: { text: 'p', version: 3 }, recentSessions: [] } }]);
    expect(decideInit(given(turn(1), recorded(2, { type: 'SessionInitFixed', data: { profile: null, recentSessions: [] } })), null, [])).toEqual([]);
  });

  it('summary: ends at the last turn; recorded once', () => {
    const [event] = decideSummary(given(turn(1), turn(2), endRequested(3)), { summary: 's', keyTopics: [] }, 'm', now);
    expect(event).toEqual({ type: 'SessionSummarised', data: { summary: 's', keyTopics: [], endedAt: turn(2).data.timestamp, model: 'm' } });
    expect(decideSummary(given(turn(1), recorded(2, event!)), { summary: 'again', keyTopics: [] }, 'm', now)).toEqual([]);
  });

  it('reflection: insight ids make an insight outcome, none a no-insight one; recorded once; aggregation only after no-insight', () => {
    const ended = given(turn(1), endRequested(2));
    expect(decideReflection(ended, ['i1'], 1, 'm')).toEqual([{ type: 'SessionReflected', data: { outcome: 'insight', insightIds: ['i1'], dropped: 1, model: 'm' } }]);
    const noInsight = recorded(3, decideReflection(ended, [], 0, 'm')[0]!);
    expect(decideReflection(given(turn(1), endRequested(2), noInsight), ['i2'], 0, 'm')).toEqual([]);
    expect(decideAggregation(given(turn(1), endRequested(2), noInsight), ['s1', 's2'], ['a1'])).toHaveLength(1);
    expect(decideAggregation(ended, ['s1', 's2'], ['a1'])).toEqual([]);
  });

  it('completion: at the summary end time; nothing for a completed session', () => {
    const done = decideCompletion(given(turn(1), endRequested(2)), now);
    expect(done).toEqual([{ type: 'SessionCompleted', data: { endedAt: turn(1).data.timestamp } }]);
    expect(decideCompletion(given(turn(1), recorded(2, done[0]!)), now)).toEqual([]);
  });
});

describe('threads (each agent\'s turns chunked and summarised on their own)', () => {
  const planner = (seq: number) => turn(seq, `p${seq}`, { agentId: 'planner' });
  const researcher = (seq: number) => turn(seq, `r${seq}`, { agentId: 'researcher' });
  // planner 1 3 5 7, researcher 2 4 6, shared (no agent) 8
  const stream = [planner(1), researcher(2), planner(3), researcher(4), planner(5), researcher(6), planner(7), turn(8, 'to all')];
  const windowOf = (...ts: ReturnType<typeof turn>[]) => ({ fromSeq: ts[0]!.metadata.seq, toSeq: ts.at(-1)!.metadata.seq, turns: ts });
  const record = (state: ReturnType<typeof given>, seq: number, w: ReturnType<typeof windowOf>, n: number) =>
    recorded(seq, decideInteraction(state, w, metadata(n), 'm')[0]!);

  it('given interleaved agents, each thread has its own turns, in order of first appearance', () => {
    expect(given(...stream).threads).toEqual([
      { agentId: 'planner', turnCount: 4, lastSeq: 7, chunkedThroughSeq: 0, cumulativeSummary: '' },
      { agentId: 'researcher', turnCount: 3, lastSeq: 6, chunkedThroughSeq: 1, cumulativeSummary: '' },
      { turnCount: 1, lastSeq: 8, chunkedThroughSeq: 7, cumulativeSummary: '' },
    ]);
  });

  it('windows are cut per thread, in seq order of their first turns; the final one adds each thread\'s rest', () => {
    const state = given(...stream);
    expect(windowsToSummarise(state, stream, 2, false).map((w) => [w.fromSeq, w.toSeq])).toEqual([[1, 3], [2, 4], [5, 7]]);
    expect(windowsToSummarise(state, stream, 2, true).map((w) => [w.fromSeq, w.toSeq])).toEqual([[1, 3], [2, 4], [5, 7], [6, 6], [8, 8]]);
  });

  it('a window records its thread; it extends that thread\'s summary only, and coverage is what every thread has chunked', () => {
    let state = given(...stream);
    const first = record(state, 9, windowOf(planner(1), planner(3)), 1);
    expect(first.type === 'InteractionSummarised' && first.data.agentId).toBe('planner');
    state = foldSession(state, [first]);
    expect(state.chunkedThroughSeq).toBe(1); // the researcher's turn 2 is not chunked yet
    const second = record(state, 10, windowOf(researcher(2), researcher(4)), 2);
    state = foldSession(state, [second]);
    expect(threadSummary(state, windowOf(planner(5)))).toBe('so far 1');
    expect(threadSummary(state, windowOf(researcher(6)))).toBe('so far 2');
    expect(state.chunkedThroughSeq).toBe(3); // planner's 5 is next
    expect(state.cumulativeSummary).toBe('planner: so far 1\nresearcher: so far 2');
    expect(windowsToSummarise(state, stream, 2, false).map((w) => [w.fromSeq, w.toSeq])).toEqual([[5, 7]]);
    expect(decideInteraction(state, windowOf(planner(1), planner(3)), metadata(1), 'm')).toEqual([]);
  });

  it('a window recorded before threads (no agentId) covers every thread', () => {
    const legacy = recorded(9, { type: 'InteractionSummarised', data: { fromSeq: 1, toSeq: 8, summary: 's', topics: [], entities: [], cumulativeSummary: 'all', model: 'm' } });
    const state = given(...stream, legacy);
    expect(state.threads!.map((t) => t.chunkedThroughSeq)).toEqual([8, 8, 8]);
    expect(state.chunkedThroughSeq).toBe(8);
    expect(windowsToSummarise(state, stream, 2, true)).toEqual([]);
  });

  it('a session of one thread keeps its single summary unlabelled', () => {
    const state = given(...turns(1, 4));
    const next = foldSession(state, [recorded(5, decideInteraction(state, window(1, 4), metadata(1), 'm')[0]!)]);
    expect(next).toMatchObject({ chunkedThroughSeq: 4, cumulativeSummary: 'so far 1' });
  });

  it('a handoff makes the receiver the active agent and is listed in order', () => {
    const handoff = recorded(9, { type: 'SessionHandoff', data: { handoffId: 'h1', fromAgentId: 'planner', toAgentId: 'writer', note: 'draft it', memoryKeys: ['notes'] } });
    const state = given(...stream, handoff);
    expect(state).toMatchObject({ activeAgentId: 'writer', agentIds: ['planner', 'researcher', 'writer'] });
    expect(state.handoffs).toEqual([{ seq: 9, handoffId: 'h1', fromAgentId: 'planner', toAgentId: 'writer', note: 'draft it', memoryKeys: ['notes'], at: handoff.metadata.recordedAt }]);
  });
});

describe('the projector\'s bookmark: decisions recorded past the fold (a backlog projected in slices)', () => {
  // A slice folded turns 1..25 of a 100-turn backlog; its windows' decisions are recorded at the stream's end (101, 102).
  const slice = given(...turns(1, 25));
  const ahead = [summarised(101, 1, 10), recorded(102, { type: 'SessionInitFixed', data: { profile: null, recentSessions: [] } })];
  const second = recorded(103, decideInteraction(withDecidedAhead(withBookmark(slice, ahead)), window(11, 20), metadata(11), 'm')[0]!);

  it('given decisions recorded ahead, then the deciders see them: the next window is the one after, chained on the last summary', () => {
    const view = withDecidedAhead(withBookmark(slice, ahead));
    expect(windowsToSummarise(view, turns(1, 25), 10, false).map((w) => [w.fromSeq, w.toSeq])).toEqual([[11, 20]]);
    expect(threadSummary(view, window(11, 20))).toBe('so far 1');
    expect(withBookmark(slice, [...ahead, second]).decidedAhead).toEqual({ threads: [{ chunkedThroughSeq: 20, cumulativeSummary: 'so far 11' }], init: true, setAside: [] });
  });

  it('given the fold reaching the decisions, then the bookmark is gone and the document is the plain fold', () => {
    const bookmarked = withBookmark(slice, [...ahead, second]);
    const stream = [...turns(1, 100), ...ahead, second];
    const caughtUp = withBookmark(foldSession(bookmarked, stream.slice(25)), []);
    expect(caughtUp).toEqual(sessionOf(key, stream));
    // Half-way (the window 1..10 folded, 11..20 not yet), only what is still ahead is kept.
    const partly = withBookmark(foldSession(bookmarked, stream.slice(25, 101)), []);
    expect(partly.decidedAhead).toEqual({ threads: [{ chunkedThroughSeq: 20, cumulativeSummary: 'so far 11' }], init: true, setAside: [] });
  });

  it('leaves a document with nothing recorded ahead as it is', () => {
    expect(withBookmark(slice, [summarised(20, 1, 10)])).toEqual(slice);
    expect(withDecidedAhead(slice)).toBe(slice);
  });
});
