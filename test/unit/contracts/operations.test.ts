import { describe, expect, it } from 'vitest';
import { Id } from '../../../shared/contracts/ids.js';
import { MAX_INSTANCE_ID_LENGTH, nightlyInstanceId, OperationId, reflectionInstanceId, sessionEndInstanceId } from '../../../shared/contracts/operations.js';

const longest = (c: string) => c.repeat(128);

describe('orchestration instance ids', () => {
  it('keep the readable form when it fits', () => {
    expect(sessionEndInstanceId('u1', 's1')).toBe('session-end:u1:s1');
    expect(reflectionInstanceId('u1', 'manual-20260105T100000')).toBe('reflection:u1:manual-20260105T100000');
    expect(nightlyInstanceId('20260105T03')).toBe('nightly:20260105T03');
    // 12 + 120 + 1 + 123 = 256: the longest readable id.
    const edge = sessionEndInstanceId('u'.repeat(120), 's'.repeat(123));
    expect(edge).toHaveLength(MAX_INSTANCE_ID_LENGTH);
    expect(edge).toBe(`session-end:${'u'.repeat(120)}:${'s'.repeat(123)}`);
  });

  it('given the longest user and session ids, when derived, then the id is the hashed form, within the limit, and a valid operation id', () => {
    const userId = Id.parse(longest('u'));
    const sessionId = Id.parse(longest('s'));
    const id = sessionEndInstanceId(userId, sessionId);
    expect(`session-end:${userId}:${sessionId}`.length).toBeGreaterThan(MAX_INSTANCE_ID_LENGTH);
    expect(id).toMatch(/^session-end:[0-9a-f]{64}$/);
    expect(id.length).toBeLessThanOrEqual(MAX_INSTANCE_ID_LENGTH);
    expect(OperationId.safeParse(id).success).toBe(true);
    expect(reflectionInstanceId(longest('u'), 'r'.repeat(64)).length).toBeLessThanOrEqual(MAX_INSTANCE_ID_LENGTH);
  });

  it('are stable: the same key gives the same id (also across a new process: a fixed digest)', () => {
    expect(sessionEndInstanceId(longest('u'), longest('s'))).toBe(sessionEndInstanceId(longest('u'), longest('s')));
    // sha256 of `${'u' x 128}\n${'s' x 128}`: changing the derivation would orphan running instances.
    expect(sessionEndInstanceId(longest('u'), longest('s'))).toBe('session-end:7c315eb8fc7cd71d684dfcfa9a1b2e75f0903771a10b3e17569d3c9bccae176e');
  });

  it('never exceed the limit for any pair of valid ids, and different keys give different ids', () => {
    const ids = new Set<string>();
    for (const u of [1, 64, 120, 127, 128]) {
      for (const s of [1, 64, 123, 124, 128]) {
        const id = sessionEndInstanceId('u'.repeat(u), 's'.repeat(s));
        expect(id.length, `${u}+${s}`).toBeLessThanOrEqual(MAX_INSTANCE_ID_LENGTH);
        ids.add(id);
      }
    }
    expect(ids.size).toBe(25);
  });

  it('do not confuse keys whose ids contain `:` (a user id may hold one)', () => {
    const a = sessionEndInstanceId('a:b', 'c');
    const b = sessionEndInstanceId('a', 'b:c');
    expect(a).not.toBe(b);
    expect(b).toBe('session-end:a:b:c');
    expect(a).toMatch(/^session-end:[0-9a-f]{64}$/);
  });
});
