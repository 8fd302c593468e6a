import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { InsightStatus } from '../../../shared/contracts/insights.js';
import { TtlClass } from '../../../shared/contracts/artifacts.js';
import {
  ARTIFACT_BLOB_SWEEP_GRACE_SECONDS,
  artifactExpiresAt,
  artifactItemTtlSeconds,
  DAY_SECONDS,
  DEFAULT_ARTIFACT_TTL_CLASS,
  expiredInsightIds,
  expiresAt,
  insightExpiresAt,
  isExpired,
  itemTtlSeconds,
  MAX_ITEM_TTL_SECONDS,
  retentionPolicy,
  TTL_CLASSES,
} from '../../../shared/domain/retention.js';

const T0 = '2026-01-05T10:00:00.000Z';
const at = (iso: string) => new Date(iso);
const plus = (iso: string, seconds: number) => new Date(Date.parse(iso) + seconds * 1000);
const insight = (id: string, status: InsightStatus, updatedAt = T0) => ({ id, status, updatedAt });
const thirtyDays = retentionPolicy(30);

describe('TTL classes', () => {
  it('are the design’s: working 30 min, session 2 h, episodic 7 d, semantic permanent', () => {
    expect(TTL_CLASSES).toEqual({ working: 1_800, session: 7_200, episodic: 604_800, semantic: null });
  });

  it('given an item of a class, when its expiry is asked, then it is its write time plus the class ttl', () => {
    expect(expiresAt({ writtenAt: T0, ttlClass: 'working' })).toEqual(at('2026-01-05T10:30:00.000Z'));
    expect(expiresAt({ writtenAt: T0, ttlClass: 'session' })).toEqual(at('2026-01-05T12:00:00.000Z'));
    expect(expiresAt({ writtenAt: at(T0), ttlClass: 'episodic' })).toEqual(at('2026-01-12T10:00:00.000Z'));
    expect(expiresAt({ writtenAt: T0, ttlClass: 'semantic' })).toBeNull();
    expect(expiresAt({ writtenAt: T0 })).toBeNull();
  });

  it('given an item with its own ttl, then that wins over its class, and an own null means never', () => {
    expect(expiresAt({ writtenAt: T0, ttlClass: 'working', ttl: 60 })).toEqual(at('2026-01-05T10:01:00.000Z'));
    expect(expiresAt({ writtenAt: T0, ttlClass: 'working', ttl: null })).toBeNull();
    expect(expiresAt({ writtenAt: T0, ttlClass: 'semantic', ttl: 0 })).toEqual(at(T0));
  });

  it('rejects a negative ttl and a write time that is not a time', () => {
    expect(() => expiresAt({ writtenAt: T0, ttl: -1 })).toThrow(RangeError);
    expect(() => expiresAt({ writtenAt: 'yesterday', ttl: 5 })).toThrow(RangeError);
  });

  it('an item is expired from its expiry on, and never without one', () => {
    const expiry = at('2026-01-05T10:30:00.000Z');
    expect(isExpired(expiry, at('2026-01-05T10:29:59.999Z'))).toBe(false);
    expect(isExpired(expiry, expiry)).toBe(true);
    expect(isExpired(null, at('2999-01-01T00:00:00.000Z'))).toBe(false);
  });
});

describe('insight retention', () => {
  it('given the setting in days, then 0 keeps superseded insights for good', () => {
    expect(retentionPolicy(30)).toEqual({ supersededInsightTtl: 30 * DAY_SECONDS });
    expect(retentionPolicy(0)).toEqual({ supersededInsightTtl: null });
  });

  it('given live insights, then they never expire however old (semantic memory)', () => {
    const old = '2000-01-01T00:00:00.000Z';
    expect(insightExpiresAt(insight('a', 'pending', old), thirtyDays)).toBeNull();
    expect(insightExpiresAt(insight('b', 'processed', old), thirtyDays)).toBeNull();
  });

  it('given superseded and merged insights, then they expire the audit period after they stopped being live', () => {
    expect(insightExpiresAt(insight('a', 'superseded'), thirtyDays)).toEqual(at('2026-02-04T10:00:00.000Z'));
    expect(insightExpiresAt(insight('b', 'merged'), thirtyDays)).toEqual(at('2026-02-04T10:00:00.000Z'));
    expect(insightExpiresAt(insight('a', 'superseded'), retentionPolicy(0))).toBeNull();
  });

  it('when retention runs, then only the superseded and merged insights past their period are due, in order', () => {
    const insights = [
      insight('live', 'processed', '2025-01-01T00:00:00.000Z'),
      insight('old-merged', 'merged', '2025-12-01T00:00:00.000Z'),
      insight('recent-superseded', 'superseded', '2026-01-01T00:00:00.000Z'),
      insight('old-superseded', 'superseded', '2025-12-06T10:00:00.000Z'),
      insight('pending', 'pending', '2025-01-01T00:00:00.000Z'),
    ];
    expect(expiredInsightIds(insights, at(T0), thirtyDays)).toEqual(['old-merged', 'old-superseded']);
    expect(expiredInsightIds(insights, at(T0), retentionPolicy(0))).toEqual([]);
  });

  it('property: an insight is due exactly when it is superseded or merged and its period is over', () => {
    const status = fc.constantFrom<InsightStatus>('pending', 'processed', 'superseded', 'merged');
    const time = fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2030-01-01T00:00:00Z') });
    fc.assert(
      fc.property(status, time, time, fc.integer({ min: 0, max: 3650 }), (s, updated, now, days) => {
        const due = expiredInsightIds([insight('x', s, new Date(updated).toISOString())], new Date(now), retentionPolicy(days)).length === 1;
        const dead = s === 'superseded' || s === 'merged';
        expect(due).toBe(dead && days > 0 && now >= updated + days * DAY_SECONDS * 1000);
      }),
    );
  });

  it('property: once due, an insight stays due at every later time (a sweep never brings one back)', () => {
    const time = fc.integer({ min: 0, max: 400 * DAY_SECONDS * 1000 });
    fc.assert(
      fc.property(time, time, (a, b) => {
        const base = Date.parse('2026-01-01T00:00:00Z');
        const items = [insight('x', 'superseded', '2026-01-01T00:00:00.000Z')];
        const [early, late] = [Math.min(a, b), Math.max(a, b)];
        if (expiredInsightIds(items, new Date(base + early), thirtyDays).length === 1) {
          expect(expiredInsightIds(items, new Date(base + late), thirtyDays)).toEqual(['x']);
        }
      }),
    );
  });
});

describe('Cosmos per-item ttl', () => {
  it('given an expiry, then the ttl is the whole seconds left from now, at least 1', () => {
    const now = at(T0);
    expect(itemTtlSeconds(plus(T0, 30 * DAY_SECONDS), now)).toBe(30 * DAY_SECONDS);
    expect(itemTtlSeconds(new Date(now.getTime() + 1_500), now)).toBe(2);
    expect(itemTtlSeconds(now, now)).toBe(1);
    expect(itemTtlSeconds(at('2020-01-01T00:00:00.000Z'), now)).toBe(1);
  });

  it('given no expiry, then no ttl; given one beyond Cosmos’s limit, then the limit', () => {
    expect(itemTtlSeconds(null, at(T0))).toBeUndefined();
    expect(itemTtlSeconds(at('2200-01-01T00:00:00.000Z'), at(T0))).toBe(MAX_ITEM_TTL_SECONDS);
  });
});

describe('artifact TTLs (detail memory)', () => {
  it('the API accepts exactly the design’s classes', () => {
    expect(TtlClass.options).toEqual(Object.keys(TTL_CLASSES));
  });

  it('given a class, own seconds or neither, then the expiry is from the class, the seconds, or the default class', () => {
    expect(artifactExpiresAt(T0, { ttlClass: 'working' }, 'semantic')).toEqual(at('2026-01-05T10:30:00.000Z'));
    expect(artifactExpiresAt(T0, { ttlSeconds: 90 }, 'semantic')).toEqual(plus(T0, 90));
    expect(artifactExpiresAt(T0, {}, 'episodic')).toEqual(plus(T0, 7 * DAY_SECONDS));
    expect(artifactExpiresAt(T0, {}, 'semantic')).toBeNull();
    expect(artifactExpiresAt(T0, { ttlClass: 'semantic' }, 'episodic')).toBeNull();
  });

  it('defaults: offloaded tool outputs are episodic, offloaded messages and stored memories permanent', () => {
    expect(DEFAULT_ARTIFACT_TTL_CLASS).toEqual({ offloadedToolOutput: 'episodic', offloadedMessage: 'semantic', stored: 'semantic' });
  });

  it('given an expiring inline artifact, then its Cosmos ttl ends at the expiry; a blob-backed one lasts the sweep grace longer', () => {
    const expiry = plus(T0, 2 * 3600);
    expect(artifactItemTtlSeconds(expiry, 'inline', at(T0))).toBe(7200);
    expect(artifactItemTtlSeconds(expiry, 'blob', at(T0))).toBe(7200 + ARTIFACT_BLOB_SWEEP_GRACE_SECONDS);
    expect(artifactItemTtlSeconds(null, 'blob', at(T0))).toBeUndefined();
    expect(ARTIFACT_BLOB_SWEEP_GRACE_SECONDS).toBeGreaterThanOrEqual(DAY_SECONDS);
  });
});
