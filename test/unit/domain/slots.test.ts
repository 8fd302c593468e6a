import { describe, expect, it } from 'vitest';
import { GLOBAL_SLOT_PARTITION, SLOT_VALUE_MAX_BYTES, type SlotEvent } from '../../../shared/contracts/slots.js';
import { buildContext, type ContextInput } from '../../../shared/domain/context.js';
import { MemoryError } from '../../../shared/domain/errors.js';
import { canSee } from '../../../shared/domain/scopes.js';
import { decideDelete, decideWrite, liveSlot, scopedOf, slotKey, toSlot } from '../../../shared/domain/slots.js';
import { countTokens } from '../../../shared/domain/tokens.js';
import { turns } from '../../support/builders.js';

const now = new Date('2026-01-05T10:00:00.000Z');
const later = (minutes: number) => new Date(now.getTime() + minutes * 60_000);
const key = slotKey('alice', 'task_plan', 'user', {});
const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof MemoryError ? error.code : 'other';
  }
  return 'none';
};

describe('slotKey', () => {
  it('owns a private slot by the agent, a session slot by the session, a global one by nobody in the global partition', () => {
    expect(slotKey('alice', 'n', 'private', { agentId: 'a1', sessionId: 's1' })).toEqual({ partition: 'alice', scope: 'private', owner: 'a1', name: 'n' });
    expect(slotKey('alice', 'n', 'session', { agentId: 'a1', sessionId: 's1' })).toEqual({ partition: 'alice', scope: 'session', owner: 's1', name: 'n' });
    expect(slotKey('alice', 'n', 'user', { agentId: 'a1', sessionId: 's1' })).toEqual({ partition: 'alice', scope: 'user', owner: null, name: 'n' });
    expect(slotKey('alice', 'n', 'global', {})).toEqual({ partition: GLOBAL_SLOT_PARTITION, scope: 'global', owner: null, name: 'n' });
    expect(codeOf(() => slotKey('alice', 'n', 'private', { sessionId: 's1' }))).toBe('scope_owner_required');
    expect(codeOf(() => slotKey('alice', 'n', 'session', { agentId: 'a1' }))).toBe('scope_owner_required');
  });

  it('gives canSee what it needs: another agent does not see a private slot, another session not a session slot', () => {
    const mine = decideWrite(null, slotKey('alice', 'n', 'private', { agentId: 'a1' }), { value: 1 }, {}, now);
    expect(canSee(scopedOf(mine), { userId: 'alice', agentId: 'a1' })).toBe(true);
    expect(canSee(scopedOf(mine), { userId: 'alice', agentId: 'a2' })).toBe(false);
    const shared = decideWrite(null, slotKey('alice', 'n', 'session', { sessionId: 's1' }), { value: 1 }, {}, now);
    expect(canSee(scopedOf(shared), { userId: 'alice', agentId: 'a2', sessionId: 's1' })).toBe(true);
    expect(canSee(scopedOf(shared), { userId: 'alice', sessionId: 's2' })).toBe(false);
    const global = decideWrite(null, slotKey('alice', 'n', 'global', {}), { value: 1 }, {}, now);
    expect(canSee(scopedOf(global), { userId: 'bob' })).toBe(true);
  });
});

describe('decideWrite / decideDelete', () => {
  it('given no stream, when written, then version 1; given version 1, when written with If-Match 1, then version 2', () => {
    const v1 = decideWrite(null, key, { value: { steps: ['a'] }, agentId: 'planner' }, {}, now);
    expect(v1).toEqual({
      type: 'SlotWritten',
      data: { name: 'task_plan', scope: 'user', owner: null, value: { steps: ['a'] }, expiresAt: null, version: 1 },
      metadata: { schemaVersion: 1, userId: 'alice', agentId: 'planner', at: now.toISOString() },
    });
    expect(decideWrite(v1, key, { value: 2 }, { ifMatch: 1 }, now).data.version).toBe(2);
    expect(decideWrite(v1, key, { value: 2 }, { ifMatch: '*' }, now).data.version).toBe(2);
  });

  it('given a write id, when written or deleted, then the event records it', () => {
    const v1 = decideWrite(null, key, { value: 1, writeId: 'w-1' }, {}, now);
    expect(v1.metadata).toEqual({ schemaVersion: 1, userId: 'alice', at: now.toISOString(), writeId: 'w-1' });
    expect(decideDelete(v1, key, {}, now, { agentId: 'planner', writeId: 'w-2' }).metadata).toMatchObject({ agentId: 'planner', writeId: 'w-2' });
  });

  it('refuses a stale or impossible condition with precondition_failed', () => {
    const v1 = decideWrite(null, key, { value: 1 }, {}, now);
    expect(codeOf(() => decideWrite(v1, key, { value: 2 }, { ifMatch: 2 }, now))).toBe('precondition_failed');
    expect(codeOf(() => decideWrite(v1, key, { value: 2 }, { ifNoneMatch: '*' }, now))).toBe('precondition_failed');
    expect(codeOf(() => decideWrite(null, key, { value: 2 }, { ifMatch: '*' }, now))).toBe('precondition_failed');
    expect(codeOf(() => decideDelete(v1, key, { ifMatch: 3 }, now))).toBe('precondition_failed');
    expect(codeOf(() => decideDelete(null, key, {}, now))).toBe('not_found');
  });

  it('given a deleted slot, a write continues the stream (a version is never reused)', () => {
    const v1 = decideWrite(null, key, { value: 1 }, {}, now);
    const gone: SlotEvent = decideDelete(v1, key, { ifMatch: 1 }, now);
    expect(gone.data.version).toBe(2);
    expect(liveSlot(gone, now)).toBeNull();
    expect(codeOf(() => decideWrite(gone, key, { value: 2 }, { ifMatch: 1 }, now))).toBe('precondition_failed');
    expect(decideWrite(gone, key, { value: 2 }, { ifNoneMatch: '*' }, now).data.version).toBe(3);
  });

  it('given a working-class slot, it is live for 30 minutes and then gone', () => {
    const v1 = decideWrite(null, key, { value: 1, ttlClass: 'working' }, {}, now);
    expect(v1.data.expiresAt).toBe(later(30).toISOString());
    expect(liveSlot(v1, later(29))).toEqual(v1);
    expect(liveSlot(v1, later(30))).toBeNull();
    expect(decideWrite(v1, key, { value: 2 }, { ifNoneMatch: '*' }, later(31)).data.version).toBe(2);
  });

  it('refuses a value over SLOT_VALUE_MAX_BYTES of compact JSON (multi-byte characters counted as bytes)', () => {
    expect(decideWrite(null, key, { value: 'x'.repeat(SLOT_VALUE_MAX_BYTES - 2) }, {}, now).data.version).toBe(1);
    expect(codeOf(() => decideWrite(null, key, { value: 'é'.repeat(SLOT_VALUE_MAX_BYTES / 2) }, {}, now))).toBe('payload_too_large');
  });

  it('shows a global slot without a user, a private one with its agent', () => {
    expect(toSlot(decideWrite(null, slotKey('alice', 'g', 'global', {}), { value: 1 }, {}, now))).not.toHaveProperty('userId');
    expect(toSlot(decideWrite(null, slotKey('alice', 'p', 'private', { agentId: 'a1' }), { value: 1 }, {}, now))).toMatchObject({ userId: 'alice', agentId: 'a1' });
  });
});

describe('buildContext with slots', () => {
  const base: ContextInput = { profile: null, recentSessions: [], summary: '', threads: [{ coversThroughSeq: 0, turns: turns(1, 1) }], nActiveTurns: 5, countTokens };
  const slots = [
    { name: 'user_profile', scope: 'user' as const, value: { name: 'Ada' }, version: 3 },
    { name: 'plan', scope: 'private' as const, value: ['a', 'b'], version: 1 },
  ];

  it('renders them after the init block and before the summary, one compact line each', () => {
    const built = buildContext({ ...base, profile: 'Profile.', summary: 'Earlier.', slots });
    expect(built.text).toBe(
      '<session_initialization>\n### Key Insights\nProfile.\n</session_initialization>\n\n' +
        '### Slots\n- user_profile (user): {"name":"Ada"}\n- plan (private): ["a","b"]\n\n### Conversation Summary\nEarlier.\n\n### Active Conversation\nuser: turn 1',
    );
    expect(built.sections.slots).toEqual(slots);
  });

  it('drops the init block for the budget but never a slot: if slots and turns do not fit, context_budget_exceeded', () => {
    const fits = buildContext({ ...base, slots });
    const tight = buildContext({ ...base, profile: 'A long profile. '.repeat(20), slots, maxTokens: fits.tokens });
    expect(tight.sections.profile).toBeNull();
    expect(tight.sections.slots).toEqual(slots);
    expect(codeOf(() => buildContext({ ...base, slots, maxTokens: fits.tokens - 1 }))).toBe('context_budget_exceeded');
  });
});
