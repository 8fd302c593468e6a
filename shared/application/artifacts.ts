import { createHash } from 'node:crypto';
import type { ArtifactRecord, ArtifactSummary, ContentKind, CreateSnapshotBody, GetMemoryQuery, ListMemoriesQuery, RestoreSnapshotBody, StoreMemoryBody } from '../contracts/artifacts.js';
import { describeContent, detectContentKind } from '../domain/compaction.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { countContentTokens } from '../domain/memory-ref.js';
import { artifactExpiresAt, DEFAULT_ARTIFACT_TTL_CLASS, isExpired, type TtlClass } from '../domain/retention.js';
import { countTokens } from '../domain/tokens.js';
import { applyTransform } from '../domain/transforms.js';
import type { DetailMemory } from './artifact-ports.js';
import type { ChatModel, Clock, Ids } from './ports.js';
import { refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';

export interface ArtifactDeps {
  detail: DetailMemory;
  clock: Clock;
  ids: Ids;
}

/** What the readers need: the store, and the clock that says what has expired (the system's time when none is given). */
type ReadDeps = Pick<ArtifactDeps, 'detail'> & Partial<Pick<ArtifactDeps, 'clock'>>;
const nowOf = (deps: ReadDeps) => deps.clock?.now() ?? new Date();

const expiryOf = (record: Pick<ArtifactRecord, 'expiresAt'>) => (record.expiresAt === null ? null : new Date(record.expiresAt));

export interface NewArtifact {
  content: string;
  key?: string;
  type: string;
  source?: string;
  tags?: string[];
  description?: string;
  contentKind?: ContentKind;
  sessionId?: string;
  agentId?: string;
  turnId?: string;
  restoredFrom?: ArtifactRecord['restoredFrom'];
  /** Already counted by the caller (offload counts to decide). */
  tokens?: number;
  /** The TTL class (default `semantic`, permanent) or own seconds (wins over the class). */
  ttlClass?: TtlClass;
  ttlSeconds?: number;
  /** An expiry fixed by the caller (a restored copy keeps its source's); wins over ttlClass and ttlSeconds. */
  expiresAt?: string | null;
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

export function summarise(record: ArtifactRecord): ArtifactSummary {
  const { storage, ...meta } = record;
  return { ...meta, storage: storage.kind };
}

/**
 * Stores an artifact: inline up to the inline limit, in Blob Storage above it; refused over the maximum (413).
 * Idempotent per key: storing the same content under an existing key returns the stored artifact; different content
 * under an existing key is a conflict unless `reuseExisting` (offload retries keep the first recording, like the event).
 * An expired artifact under the key counts as none: it is swept (row and blob) and the new one takes the key.
 */
export async function storeArtifact(deps: ArtifactDeps, userId: string, input: NewArtifact, options: { reuseExisting?: boolean } = {}): Promise<ArtifactRecord> {
  const { limits, artifacts, blobs } = deps.detail;
  const bytes = Buffer.from(input.content, 'utf8');
  if (bytes.length > limits.maxBytes) {
    throw new MemoryError('payload_too_large', `The content has ${bytes.length} bytes; the maximum is ${limits.maxBytes}`, { maxBytes: limits.maxBytes, bytes: bytes.length });
  }
  const key = input.key ?? `mem-${deps.ids.newId()}`;
  const contentHash = sha256(bytes);
  const now = deps.clock.now();
  const existing = await artifacts.get(userId, key, now);
  if (existing) {
    if (existing.contentHash === contentHash || options.reuseExisting) return existing;
    throw new MemoryError('conflict', `Memory ${key} already exists with different content`);
  }
  const expiry = expiryFor(input, now);
  const contentKind = input.contentKind ?? detectContentKind(input.content);
  let storage: ArtifactRecord['storage'];
  if (bytes.length <= limits.inlineMaxBytes) storage = { kind: 'inline', content: input.content };
  else {
    if (!blobs) throw new MemoryError('upstream_unavailable', `Blob Storage is not configured; contents above ${limits.inlineMaxBytes} bytes need it`);
    // The hash in the name: a racing writer of other content under the same key never overwrites this blob. The expiry
    // too, when there is one: a later artifact under the key never writes to a blob name the sweep may be deleting.
    const blobName = `${userId}/${key}/${contentHash}${expiry ? `~${expiry.getTime()}` : ''}`;
    await blobs.put(blobName, bytes);
    storage = { kind: 'blob', blobName };
  }
  const record: ArtifactRecord = {
    userId,
    key,
    type: input.type,
    tags: input.tags ?? [],
    description: input.description ?? describeContent(input.content, contentKind, input.source),
    contentKind,
    tokens: input.tokens ?? countContentTokens(input.content, countTokens),
    bytes: bytes.length,
    contentHash,
    createdAt: now.toISOString(),
    expiresAt: expiry?.toISOString() ?? null,
    storage,
    ...(input.source && { source: input.source }),
    ...(input.sessionId && { sessionId: input.sessionId }),
    ...(input.agentId && { agentId: input.agentId }),
    ...(input.turnId && { turnId: input.turnId }),
    ...(input.restoredFrom && { restoredFrom: input.restoredFrom }),
  };
  let put = await artifacts.putIfAbsent(record);
  if (!put.created && isExpired(expiryOf(put.record), now)) {
    // An expired artifact still holds the key until the nightly sweep: sweep it now (row, then its blob), then write.
    await deleteExpired(deps.detail, userId, now, { key });
    put = await artifacts.putIfAbsent(record);
  }
  const { record: stored, created } = put;
  if (!created && blobs && storage.kind === 'blob' && (stored.storage.kind !== 'blob' || stored.storage.blobName !== storage.blobName)) {
    // A racing writer won the key: the blob written above is referenced by nothing.
    await blobs.delete(storage.blobName);
  }
  if (!created && isExpired(expiryOf(stored), now)) throw new MemoryError('conflict', `Memory ${key} is being replaced; retry`);
  if (!created && stored.contentHash !== contentHash && !options.reuseExisting) throw new MemoryError('conflict', `Memory ${key} already exists with different content`);
  return stored;
}

/** A fixed expiry when the caller gives one, else from the TTL class or seconds (permanent by default). */
function expiryFor(input: NewArtifact, now: Date): Date | null {
  if (input.expiresAt !== undefined) return input.expiresAt === null ? null : new Date(input.expiresAt);
  const ttl = { ...(input.ttlClass && { ttlClass: input.ttlClass }), ...(input.ttlSeconds !== undefined && { ttlSeconds: input.ttlSeconds }) };
  return artifactExpiresAt(now, ttl, 'semantic');
}

/** Artifacts expired and blob deletions confirmed per round trip of the sweep. */
const SWEEP_BATCH = 100;

/**
 * The TTL sweep for one user at `now`: removes the expired artifacts (all, or only `key`) and deletes their blobs. Each
 * artifact leaves the store together with a queue entry for its blob; the blobs are then deleted and their entries
 * dropped. A crash midway leaves either an expired (invisible) artifact or a queued blob, and the next run finishes
 * both; a blob is never deleted while an artifact still points at it. Returns how many artifacts this run removed.
 * On Cosmos, inline artifacts usually went at their expiry through the item's own `ttl` and are not counted here.
 */
export async function deleteExpired(detail: DetailMemory, userId: string, now: Date, options: { key?: string } = {}): Promise<number> {
  let removed = 0;
  for (;;) {
    const n = await detail.artifacts.expire(userId, now, { limit: SWEEP_BATCH, ...(options.key && { key: options.key }) });
    removed += n;
    if (n < SWEEP_BATCH) break;
  }
  // Without Blob Storage no blob-backed artifact could have been written here; any queued names wait for it.
  if (!detail.blobs) return removed;
  const deleted = new Set<string>();
  for (;;) {
    const names = await detail.artifacts.pendingBlobDeletions(userId, SWEEP_BATCH);
    // Deleting a missing blob is fine, so a blob deleted before a crash is simply deleted again.
    for (const name of names) await detail.blobs.delete(name);
    if (names.length > 0) await detail.artifacts.blobDeletionsDone(userId, names);
    // A full batch means there may be more; a batch of names already done means the queue is not draining: stop.
    if (names.length < SWEEP_BATCH || names.every((n) => deleted.has(n))) break;
    names.forEach((n) => deleted.add(n));
  }
  return removed;
}

/** The content of an artifact, from the store or Blob Storage. */
export async function readContent(detail: DetailMemory, record: ArtifactRecord): Promise<string> {
  if (record.storage.kind === 'inline') return record.storage.content;
  if (!detail.blobs) throw new MemoryError('upstream_unavailable', 'Blob Storage is not configured');
  return (await detail.blobs.get(record.storage.blobName)).toString('utf8');
}

/** A live artifact; an expired one is not_found exactly like an unknown key. */
async function mustGet(deps: ReadDeps, userId: string, key: string): Promise<ArtifactRecord> {
  const record = await deps.detail.artifacts.get(userId, key, nowOf(deps));
  if (!record) throw notFound(`Memory ${key}`);
  return record;
}

// --- the use cases behind the artifacts API and the MCP tools ---

/** Characters of the content a goal-aware compaction model sees. */
const COMPACTION_EXCERPT_CHARS = 12_000;

/**
 * Goal-aware compaction: with a goal and a chat model, the model writes the description from the plugin's structural
 * description and an excerpt; otherwise the plugin's description stands.
 */
async function describeForGoal(chat: ChatModel | undefined, content: string, kind: ContentKind, goal: string | undefined, source?: string): Promise<string | undefined> {
  if (!chat || !goal?.trim()) return undefined;
  const pluginDescription = describeContent(content, kind, source);
  const { description } = await chat.run('compactArtifact', { goal, contentKind: kind, excerpt: content.slice(0, COMPACTION_EXCERPT_CHARS), pluginDescription });
  return description.replace(/\s+/g, ' ').replace(/\[|\]/g, '').trim();
}

export async function storeMemory(deps: ArtifactDeps & { chat?: ChatModel; forgets?: ForgetStore }, userId: string, body: StoreMemoryBody): Promise<ArtifactSummary> {
  // Nothing is stored for a user (or session) being forgotten: 409 forget_in_progress.
  await refuseWhileForgetting(deps, { userId, sessionId: body.sessionId ?? '' }, 'before');
  const content = typeof body.content === 'string' ? body.content : JSON.stringify(body.content, null, 2);
  if (content.trim() === '') throw new MemoryError('validation_failed', 'content must not be empty', { errors: [{ path: 'body.content', message: 'must not be empty' }] });
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > deps.detail.limits.maxBytes) {
    throw new MemoryError('payload_too_large', `The content has ${bytes} bytes; the maximum is ${deps.detail.limits.maxBytes}`, { maxBytes: deps.detail.limits.maxBytes, bytes });
  }
  const contentKind = body.contentKind ?? (typeof body.content === 'string' ? detectContentKind(content) : 'json');
  const description = body.description ?? (await describeForGoal(deps.chat, content, contentKind, body.goal, body.source));
  const record = await storeArtifact(deps, userId, {
    content,
    type: body.type,
    tags: body.tags,
    ttlClass: body.ttlClass ?? DEFAULT_ARTIFACT_TTL_CLASS.stored,
    ...(body.ttlSeconds !== undefined && { ttlSeconds: body.ttlSeconds }),
    ...(body.key && { key: body.key }),
    ...(body.source && { source: body.source }),
    ...(description && { description }),
    contentKind,
    ...(body.sessionId && { sessionId: body.sessionId }),
    ...(body.agentId && { agentId: body.agentId }),
  });
  return summarise(record);
}

export interface RetrievedMemory extends ArtifactSummary {
  transform: GetMemoryQuery['transform'];
  content: string;
  partial: boolean;
  lines?: { kept: number; total: number };
}

export async function retrieveMemory(deps: ReadDeps, userId: string, key: string, query: GetMemoryQuery): Promise<RetrievedMemory> {
  const record = await mustGet(deps, userId, key);
  const content = await readContent(deps.detail, record);
  const view = applyTransform(content, record.contentKind, query);
  return { ...summarise(record), transform: query.transform, ...view };
}

export async function listMemories(deps: ReadDeps, userId: string, query: ListMemoriesQuery): Promise<{ items: ArtifactSummary[]; nextCursor: string | null }> {
  const { limit, cursor, ...filter } = query;
  if (filter.from && filter.to && Date.parse(filter.from) > Date.parse(filter.to)) {
    throw new MemoryError('validation_failed', 'from must not be after to', { errors: [{ path: 'query.from', message: 'after to' }] });
  }
  const page = await deps.detail.artifacts.list(
    userId,
    {
      ...filter,
      ...(filter.from && { from: new Date(filter.from).toISOString() }),
      ...(filter.to && { to: new Date(filter.to).toISOString() }),
    },
    limit,
    nowOf(deps),
    cursor,
  );
  return { items: page.items.map(summarise), nextCursor: page.nextCursor };
}

/** Deletes a live artifact and its blob; an expired one is not_found like an unknown key (the sweep removes it). */
export async function deleteMemory(deps: ReadDeps, userId: string, key: string): Promise<{ key: string; deleted: true }> {
  await mustGet(deps, userId, key);
  const removed = await deps.detail.artifacts.delete(userId, key);
  if (!removed) throw notFound(`Memory ${key}`);
  if (removed.storage.kind === 'blob' && deps.detail.blobs) await deps.detail.blobs.delete(removed.storage.blobName);
  return { key, deleted: true };
}

export interface MemoryHit extends ArtifactSummary {
  score: number;
  excerpt: string;
}

/** Text search over the user's live artifacts (descriptions and inline contents): every query word that matches scores. */
export async function searchMemories(deps: ReadDeps, userId: string, query: string, limit = 5): Promise<MemoryHit[]> {
  const terms = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}_.-]+/u).filter((t) => t.length >= 2))].slice(0, 16);
  const candidates = await deps.detail.artifacts.search(userId, terms, 200, nowOf(deps));
  const scored = candidates.map((record) => {
    const description = record.description.toLowerCase();
    const content = record.storage.kind === 'inline' ? record.storage.content.toLowerCase() : '';
    const score = terms.reduce((s, t) => s + (description.includes(t) ? 2 : 0) + (content.includes(t) ? 1 : 0), 0) / (3 * terms.length);
    const at = content.indexOf(terms.find((t) => content.includes(t)) ?? '\u0000');
    const source = record.storage.kind === 'inline' ? record.storage.content : '';
    const excerpt = at >= 0 ? source.slice(Math.max(0, at - 80), at + 160).replace(/\s+/g, ' ').trim() : '';
    return { ...summarise(record), score: Math.round(score * 1000) / 1000, excerpt };
  });
  return scored.sort((a, b) => b.score - a.score).slice(0, limit);
}

// --- snapshot / restore: hand chosen artifacts to a sub-agent ---

export async function createSnapshot(deps: ArtifactDeps, userId: string, body: CreateSnapshotBody): Promise<{ snapshotId: string; keys: string[]; createdAt: string }> {
  const keys = [...new Set(body.keys)];
  const now = deps.clock.now();
  const missing = (await Promise.all(keys.map(async (k) => ((await deps.detail.artifacts.get(userId, k, now)) ? null : k)))).filter((k) => k !== null);
  if (missing.length > 0) throw new MemoryError('not_found', `Unknown memory keys: ${missing.join(', ')}`, { missing });
  const snapshot = { userId, snapshotId: `snap-${deps.ids.newId()}`, keys, createdAt: now.toISOString(), ...(body.agentId && { agentId: body.agentId }) };
  await deps.detail.artifacts.putSnapshot(snapshot);
  return { snapshotId: snapshot.snapshotId, keys, createdAt: snapshot.createdAt };
}

/**
 * Copies a snapshot's artifacts into `agentId`'s view (listable with `agentId=`). The copies' keys derive from
 * snapshot, key and agent, so restoring twice is harmless. An artifact deleted or expired since the snapshot is reported
 * missing; a copy expires when its source does.
 */
export async function restoreSnapshot(deps: ArtifactDeps, userId: string, snapshotId: string, body: RestoreSnapshotBody) {
  const snapshot = await deps.detail.artifacts.getSnapshot(userId, snapshotId);
  if (!snapshot) throw notFound(`Snapshot ${snapshotId}`);
  const restored: { from: string; key: string }[] = [];
  const missing: string[] = [];
  for (const key of snapshot.keys) {
    const source = await deps.detail.artifacts.get(userId, key, deps.clock.now());
    if (!source) {
      missing.push(key);
      continue;
    }
    const copyKey = `r-${createHash('sha256').update(`${snapshotId}\n${key}\n${body.agentId}`).digest('hex').slice(0, 24)}`;
    const copy = await storeArtifact(
      deps,
      userId,
      {
        content: await readContent(deps.detail, source),
        key: copyKey,
        type: source.type,
        tags: source.tags,
        description: source.description,
        contentKind: source.contentKind,
        tokens: source.tokens,
        agentId: body.agentId,
        restoredFrom: { snapshotId, key },
        expiresAt: source.expiresAt,
        ...(source.source && { source: source.source }),
        ...((body.sessionId ?? source.sessionId) && { sessionId: body.sessionId ?? source.sessionId }),
      },
      { reuseExisting: true },
    );
    restored.push({ from: key, key: copy.key });
  }
  return { snapshotId, agentId: body.agentId, restored, missing };
}
