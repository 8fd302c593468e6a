import { z } from 'zod';
import { SCHEMA_VERSION } from '../contracts/events.js';
import type { InsightDocument, InsightsQuery, InsightView, ProfileDocument } from '../contracts/insights.js';
import { notFound } from '../domain/errors.js';
import { nearDuplicates } from '../domain/reflection.js';
import type { Deps, ReflectionConfig } from './ports.js';
import { eraseInsightsOfForgotten, readOrigins, type SourceOrigins } from './reflection-sources.js';

export type ReflectionDeps = Pick<Deps, 'events' | 'insights' | 'directory' | 'chat' | 'clock'> & { reflection: ReflectionConfig };

export const MergeResult = z.object({ merged: z.number().int().nonnegative() });
export const ProfileResult = z.object({
  updated: z.boolean(),
  version: z.number().int().nonnegative(),
  processed: z.array(z.string()),
  superseded: z.array(z.string()),
});
export const ActiveUsersResult = z.object({ userIds: z.array(z.string()) });

/**
 * Merges near-duplicate insights (same category, cosine similarity of their vectors at least the threshold): the
 * newest of a group stays, the others are flagged `merged` with `mergedInto`. Superseded and merged insights are
 * never compared again. Idempotent. A flagged insight whose session is forgotten meanwhile is not written back
 * (reflection-sources.ts).
 */
export async function mergeNearDuplicateInsights(deps: ReflectionDeps, userId: string): Promise<z.infer<typeof MergeResult>> {
  const live = (await deps.insights.list(userId)).filter((i) => i.status === 'pending' || i.status === 'processed');
  const merged = nearDuplicates(
    live.map((i) => ({ id: i.id, category: i.category, createdAt: i.createdAt, confidence: i.confidence, vector: i.insightVector, embeddingModel: i.embeddingModel })),
    deps.reflection.similarityThreshold,
  );
  if (merged.size === 0) return { merged: 0 };
  const now = deps.clock.now().toISOString();
  const flagged = live.filter((i) => merged.has(i.id)).map((i): InsightDocument => ({ ...i, status: 'merged', mergedInto: merged.get(i.id)!, updatedAt: now }));
  const sources = await readOrigins(deps, userId, flagged.flatMap((i) => i.sourceSessionIds));
  await deps.insights.upsert(flagged);
  await eraseInsightsOfForgotten(deps, userId, sources, flagged);
  return { merged: merged.size };
}

/**
 * Long-term reflection: the current profile plus the user's pending insights (oldest first) → the new profile, with
 * every source insight id. Insights become `processed`; those the newer information contradicts become `superseded`
 * (kept). Insights already listed in the profile (a crash after the profile was written) are only marked, not sent to
 * the model again. A session the profile's text comes from that is forgotten while the model is called: see
 * `eraseIfSourceForgotten`.
 */
export async function synthesiseLongTermProfile(deps: ReflectionDeps, userId: string): Promise<z.infer<typeof ProfileResult>> {
  const [current, pending] = await Promise.all([deps.insights.getProfile(userId), deps.insights.list(userId, { status: 'pending' })]);
  const known = new Set(current?.sourceInsightIds ?? []);
  const fresh = pending.filter((i) => !known.has(i.id));
  let profile = current;
  let superseded: string[] = [];
  let sources: SourceOrigins = new Map();
  if (fresh.length > 0) {
    // Processed insights of the categories the new ones touch go along, so a contradiction can name what it supersedes.
    const categories = new Set(fresh.map((i) => i.category));
    const all = await deps.insights.list(userId);
    const related = all.filter((i) => i.status === 'processed' && categories.has(i.category));
    // The sessions whose text the new profile carries: the insights sent, and those the current profile was built from.
    const carried = [...fresh, ...related, ...all.filter((i) => known.has(i.id))];
    sources = await readOrigins(deps, userId, carried.flatMap((i) => i.sourceSessionIds));
    const out = await deps.chat.run('longTermProfile', {
      currentProfile: current?.profile ?? '',
      insights: [...related, ...fresh].map((i) => ({ id: i.id, category: i.category, text: i.text, createdAt: i.createdAt })),
    });
    const validIds = new Set([...known, ...pending.map((i) => i.id), ...related.map((i) => i.id)]);
    superseded = out.supersededInsightIds.filter((id) => validIds.has(id));
    profile = {
      schemaVersion: SCHEMA_VERSION,
      id: 'profile',
      userId,
      type: 'long_term',
      profile: out.profile,
      sourceInsightIds: [...new Set([...(current?.sourceInsightIds ?? []), ...fresh.map((i) => i.id)])],
      version: (current?.version ?? 0) + 1,
      updatedAt: deps.clock.now().toISOString(),
    } satisfies ProfileDocument;
    await deps.insights.putProfile(profile);
  }
  const now = deps.clock.now().toISOString();
  const supersededSet = new Set(superseded);
  const byId = new Map((await deps.insights.list(userId)).map((i) => [i.id, i]));
  const updates: InsightDocument[] = [];
  for (const i of pending) updates.push({ ...i, status: supersededSet.has(i.id) ? 'superseded' : 'processed', updatedAt: now });
  for (const id of superseded) {
    const older = byId.get(id);
    if (older && older.status === 'processed') updates.push({ ...older, status: 'superseded', updatedAt: now });
  }
  await deps.insights.upsert(updates);
  if (profile && sources.size > 0) await eraseIfSourceForgotten(deps, userId, sources, profile, updates);
  return { updated: fresh.length > 0, version: profile?.version ?? 0, processed: pending.map((i) => i.id), superseded };
}

/**
 * After the profile and the status updates are written: a source session forgotten since it was read (see
 * reflection-sources.ts) means the profile carries its text, and the status updates wrote its insights back after
 * their purge. Both go, as the forget would have removed them: the insights of the forgotten sessions that this run
 * wrote, and the profile if it is still this one or one built on it (a later version); the next long-term reflection
 * writes a new profile from what is left.
 */
async function eraseIfSourceForgotten(deps: ReflectionDeps, userId: string, sources: SourceOrigins, written: ProfileDocument, updates: readonly InsightDocument[]): Promise<void> {
  if ((await eraseInsightsOfForgotten(deps, userId, sources, updates)).size === 0) return;
  const stored = await deps.insights.getProfile(userId);
  if (stored && stored.version >= written.version) await deps.insights.deleteProfile(userId);
}

/** Users whose sessions changed since `since` (the nightly consolidation's fan-out list). */
export async function usersActiveSince(deps: Pick<Deps, 'directory'>, since: string, limit = 10_000): Promise<z.infer<typeof ActiveUsersResult>> {
  return { userIds: await deps.directory.usersActiveSince(new Date(since), limit) };
}

const view = ({ insightVector: _v, ...rest }: InsightDocument): InsightView => rest;

/** GET /users/{u}/insights */
export async function listInsights(deps: Pick<Deps, 'insights'>, userId: string, query: InsightsQuery): Promise<{ insights: InsightView[] }> {
  return { insights: (await deps.insights.list(userId, query)).map(view) };
}

/** GET /users/{u}/profile */
export async function getProfile(deps: Pick<Deps, 'insights'>, userId: string): Promise<ProfileDocument> {
  const profile = await deps.insights.getProfile(userId);
  if (!profile) throw notFound(`The profile of ${userId}`);
  return profile;
}
