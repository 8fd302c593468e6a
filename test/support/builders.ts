import type { EventDraft } from '../../shared/application/ports.js';
import { SCHEMA_VERSION, type TurnAppended } from '../../shared/contracts/events.js';

const T0 = Date.parse('2026-01-05T09:00:00Z');

export function turnDraft(turnId: string, content = `content of ${turnId}`, role: 'user' | 'assistant' = 'user'): EventDraft {
  return { type: 'TurnAppended', data: { turnId, role, content, timestamp: new Date(T0).toISOString() } };
}

/** A recorded turn event, as the store would return it. */
export function turn(seq: number, content = `turn ${seq}`, overrides: Partial<TurnAppended['data']> = {}): TurnAppended {
  return {
    type: 'TurnAppended',
    data: { turnId: `t${seq}`, role: seq % 2 ? 'user' : 'assistant', content, timestamp: new Date(T0 + seq * 1000).toISOString(), ...overrides },
    metadata: { schemaVersion: SCHEMA_VERSION, userId: 'u1', sessionId: 's1', seq, recordedAt: new Date(T0 + seq * 1000).toISOString() },
  };
}

export const turns = (from: number, to: number): TurnAppended[] => Array.from({ length: to - from + 1 }, (_, i) => turn(from + i));
