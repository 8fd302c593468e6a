import type { TtlClass as TtlClassName } from '../contracts/artifacts.js';
import type { InsightStatus } from '../contracts/insights.js';

export const MINUTE_SECONDS = 60;
export const HOUR_SECONDS = 60 * MINUTE_SECONDS;
export const DAY_SECONDS = 24 * HOUR_SECONDS;

/**
 * The TTL classes of the design (seconds; null = permanent): working memory lives for the active call, session memory
 * for the session context, episodic memory (what happened recently) a week, semantic memory (learned knowledge) for good.
 */
export const TTL_CLASSES = {
  working: 30 * MINUTE_SECONDS,
  session: 2 * HOUR_SECONDS,
  episodic: 7 * DAY_SECONDS,
  semantic: null,
} as const satisfies Record<TtlClassName, number | null>;
export type TtlClass = keyof typeof TTL_CLASSES;

/** Cosmos DB's largest per-item `ttl` (a 32-bit signed integer of seconds). */
export const MAX_ITEM_TTL_SECONDS = 2_147_483_647;

/** What the operator chose to keep, and for how long (seconds; null = for good). */
export interface RetentionPolicy {
  /** How long a superseded or merged insight is kept for audit after it stopped being live. */
  supersededInsightTtl: number | null;
}

/** The policy from a setting in days, where 0 means keep for good. */
export const retentionPolicy = (supersededInsightDays: number): RetentionPolicy => ({
  supersededInsightTtl: supersededInsightDays > 0 ? supersededInsightDays * DAY_SECONDS : null,
});

/** An item's lifetime: its own `ttl` (seconds, null = never) when it has one, else its class's; neither = permanent. */
export interface Lifetime {
  writtenAt: string | Date;
  ttlClass?: TtlClass;
  ttl?: number | null;
}

/** When the item expires, or null when it never does. */
export function expiresAt(item: Lifetime): Date | null {
  const ttl = item.ttl !== undefined ? item.ttl : item.ttlClass ? TTL_CLASSES[item.ttlClass] : null;
  if (ttl === null) return null;
  if (!Number.isFinite(ttl) || ttl < 0) throw new RangeError(`A ttl is a non-negative number of seconds, got ${ttl}`);
  const written = new Date(item.writtenAt).getTime();
  if (Number.isNaN(written)) throw new RangeError(`Not a time: ${String(item.writtenAt)}`);
  return new Date(written + ttl * 1000);
}

export const isExpired = (expiry: Date | null, now: Date): boolean => expiry !== null && expiry.getTime() <= now.getTime();

/**
 * Live insights (pending, processed) are semantic memory and never expire. A superseded or merged one stays for the
 * policy's audit period, counted from its `updatedAt` (when it stopped being live).
 */
export function insightTtl(status: InsightStatus, policy: RetentionPolicy): number | null {
  return status === 'superseded' || status === 'merged' ? policy.supersededInsightTtl : TTL_CLASSES.semantic;
}

type InsightLifetime = { id: string; status: InsightStatus; updatedAt: string };

export const insightExpiresAt = (insight: InsightLifetime, policy: RetentionPolicy): Date | null =>
  expiresAt({ writtenAt: insight.updatedAt, ttl: insightTtl(insight.status, policy) });

/** The ids of the insights whose retention is over at `now`, in input order. */
export function expiredInsightIds(insights: readonly InsightLifetime[], now: Date, policy: RetentionPolicy): string[] {
  return insights.filter((i) => isExpired(insightExpiresAt(i, policy), now)).map((i) => i.id);
}

/**
 * A Cosmos DB per-item `ttl` for an expiry: whole seconds from `now` (Cosmos counts from the item's last write), at least
 * 1 (0 is not a valid ttl, and an item already due should go at once), at most Cosmos's limit; undefined = no expiry.
 */
export function itemTtlSeconds(expiry: Date | null, now: Date): number | undefined {
  if (expiry === null) return undefined;
  return Math.min(MAX_ITEM_TTL_SECONDS, Math.max(1, Math.ceil((expiry.getTime() - now.getTime()) / 1000)));
}

// --- detail memory (artifacts) ---

/**
 * The class an artifact gets when its writer names none: a tool output offloaded at append is episodic (what happened
 * recently, re-fetchable from its tool); an offloaded user, assistant or system message is part of what was said and
 * stays; an artifact stored through the API or MCP is what the agent chose to keep, so it is semantic (permanent).
 */
export const DEFAULT_ARTIFACT_TTL_CLASS = { offloadedToolOutput: 'episodic', offloadedMessage: 'semantic', stored: 'semantic' } as const satisfies Record<string, TtlClass>;

/** What a writer asks for: a class or its own seconds (at most one), else the default class. */
export interface ArtifactTtl {
  ttlClass?: TtlClass;
  ttlSeconds?: number;
}

/** When an artifact written at `createdAt` expires (null = never). */
export const artifactExpiresAt = (createdAt: string | Date, ttl: ArtifactTtl, defaultClass: TtlClass): Date | null =>
  ttl.ttlSeconds !== undefined ? expiresAt({ writtenAt: createdAt, ttl: ttl.ttlSeconds }) : expiresAt({ writtenAt: createdAt, ttlClass: ttl.ttlClass ?? defaultClass });

/**
 * How long a blob-backed artifact's Cosmos item outlives its expiry. Readers stop seeing it at the expiry; the item stays
 * (invisible) so the retention sweep can find the blob it points at and delete it before the item goes. Cosmos's own ttl
 * removes the item after this grace even if no sweep ran for the user (the blob is then left behind).
 */
export const ARTIFACT_BLOB_SWEEP_GRACE_SECONDS = 30 * DAY_SECONDS;

/**
 * The Cosmos per-item `ttl` of an artifact written at `now`: an inline one goes at its expiry (nothing else to clean up),
 * a blob-backed one after the sweep grace; undefined = permanent.
 */
export function artifactItemTtlSeconds(expiry: Date | null, storage: 'inline' | 'blob', now: Date): number | undefined {
  if (expiry === null) return undefined;
  return itemTtlSeconds(storage === 'blob' ? new Date(expiry.getTime() + ARTIFACT_BLOB_SWEEP_GRACE_SECONDS * 1000) : expiry, now);
}
