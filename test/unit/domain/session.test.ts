import { describe, expect, it } from 'vitest';
import { evolveSession, newSession } from '../../../shared/domain/session.js';
import { turn } from '../../support/builders.js';

const key = { userId: 'u1', sessionId: 's1' };
const now = new Date('2026-01-01T00:00:00Z');

describe('evolveSession', () => {
  it('given turns from two agents, counts them and records the agents once, in order of appearance', () => {
    const s = evolveSession(newSession(key, now), [turn(1, 'a', { agentId: 'planner' }), turn(2, 'b', { agentId: 'coder' }), turn(3, 'c', { agentId: 'planner' })]);
    expect(s).toMatchObject({ projectedThroughSeq: 3, turnCount: 3, agentIds: ['planner', 'coder'], startedAt: turn(1).data.timestamp, lastTurnAt: turn(3).data.timestamp });
  });

  it('given imported turns with old client timestamps, records activity by the service clock, not by the timestamps', () => {
    const imported = { ...turn(1, 'from 2023', { timestamp: '2023-05-08T13:56:00.000Z' }), metadata: { ...turn(1).metadata, recordedAt: '2026-01-01T10:00:00.000Z' } };
    const s = evolveSession(newSession(key, now), [imported]);
    expect(s).toMatchObject({ lastTurnAt: '2023-05-08T13:56:00.000Z', lastActivityAt: '2026-01-01T10:00:00.000Z' });
  });

  it('given events it has already folded, changes nothing (re-delivery is harmless)', () => {
    const once = evolveSession(newSession(key, now), [turn(1), turn(2)]);
    expect(evolveSession(once, [turn(1), turn(2)])).toEqual(once);
  });

  it('given an end request, moves an active session to ending', () => {
    const end = { type: 'SessionEndRequested' as const, data: { reason: 'client' as const }, metadata: turn(2).metadata };
    expect(evolveSession(newSession(key, now), [turn(1), end]).status).toBe('ending');
  });
});
