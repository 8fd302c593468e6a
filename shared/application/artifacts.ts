import { createHash } from 'node:crypto';
import { GLOBAL_OWNER, type ArtifactRecord, type ArtifactSummary, type ContentKind, type CreateSnapshotBody, type GetMemoryQuery, type ListMemoriesQuery, type RestoreSnapshotBody, type StoreMemoryBody } from '../contracts/artifacts.js';
import type { Scope } from '../contracts/scopes.js';
import { describeContent, detectContentKind } from '../domain/compaction.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { canSee, type Viewer } from '../domain/scopes.js';
import { countContentTokens } from '../domain/memory-ref.js';
import { artifactExpiresAt, DEFAULT_ARTIFACT_TTL_CLASS, isExpired, type TtlClass } from '../domain/retention.js';
import { countTokens } from '../domain/tokens.js';
import { applyTransform } from '../domain/transforms.js';
import type { DetailMemory } from './artifact-ports.js';
import type { ChatModel, Clock, Ids } from './ports.js';
import { refuseUnlessKept, refuseWhileForgetting } from './forget.js';
import type { ForgetStore } from './forget-ports.js';
import { forbidden, type Principal } from './auth.js';
import { isAdmin } from './viewer.js';

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
  /** Who may see it (default `user`); a `global` artifact is stored with the userId GLOBAL_OWNER. */
  scope?: Scope;
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
    scope: input.scope ?? 'user',
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
  let put: Awaited<ReturnType<typeof artifacts.putIfAbsent>>;
  try {
    put = await artifacts.putIfAbsent(record);
    if (!put.created && isExpired(expiryOf(put.record), now)) {
      // An expired artifact still holds the key until the nightly sweep: sweep it now (row, then its blob), then write.
      await deleteExpired(deps.detail, userId, now, { key });
      put = await artifacts.putIfAbsent(record);
    }
  } catch (error) {
    // PostgreSQL refused the row under a forget's tombstone (rolled back whole): the blob written above would be named
    // by no row, and a session's forget, which deletes the blobs its rows name, would leave it.
    if (blobs && storage.kind === 'blob' && error instanceof MemoryError && error.code === 'forget_in_progress') await deleteUnnamed(deps, userId, key, storage.blobName);
    throw error;
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

/** Deletes a blob just written unless a row of the key names it (a racing writer of the same content won the key). */
async function deleteUnnamed(deps: ArtifactDeps, userId: string, key: string, blobName: string): Promise<void> {
  const holder = await deps.detail.artifacts.get(userId, key, deps.clock.now());
  if (holder?.storage.kind !== 'blob' || holder.storage.blobName !== blobName) await deps.detail.blobs!.delete(blobName);
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

/**
 * The live artifact under `key` the viewer may see: the user's own, else the global one under that key (a user's key
 * shadows a global one for that user). One it may not see is not_found exactly like an unknown or expired key: the
 * answer does not reveal that it exists.
 */
export async function findVisible(deps: ReadDeps, viewer: Viewer, key: string): Promise<ArtifactRecord | null> {
  const now = nowOf(deps);
  const own = await deps.detail.artifacts.get(viewer.userId, key, now);
  if (own && canSee(own, viewer)) return own;
  const global = await deps.detail.artifacts.get(GLOBAL_OWNER, key, now);
  return global && canSee(global, viewer) ? global : null;
}

async function mustSee(deps: ReadDeps, viewer: Viewer, key: string): Promise<ArtifactRecord> {
  const record = await findVisible(deps, viewer, key);
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

/**
 * The scope of a new memory and the owner it is stored under: `private` needs an agent (the body's, else the
 * agent-bound principal's) and `session` a sessionId (422 scope_owner_required otherwise); `global` needs an admin
 * principal (403) and is stored under GLOBAL_OWNER, belonging to no user.
 */
function placeOf(principal: Principal, userId: string, body: Pick<StoreMemoryBody, 'agentId' | 'sessionId'> & { scope?: Scope | undefined }) {
  const scope = body.scope ?? 'user';
  const agentId = body.agentId ?? (scope === 'private' ? principal.agentId : undefined);
  const incomplete = (path: string, message: string) => new MemoryError('scope_owner_required', message, { errors: [{ path, message }] });
  if (scope === 'private' && agentId === undefined) throw incomplete('body.agentId', 'scope private needs the agentId it belongs to');
  if (scope === 'session' && body.sessionId === undefined) throw incomplete('body.sessionId', 'scope session needs the sessionId it belongs to');
  if (scope === 'global' && !isAdmin(principal)) throw forbidden('Only an admin principal (all users, bound to no agent) writes global memories');
  return { scope, owner: scope === 'global' ? GLOBAL_OWNER : userId, ...(agentId !== undefined && { agentId }) };
}

export async function storeMemory(
  deps: ArtifactDeps & { chat?: ChatModel; forgets?: ForgetStore },
  principal: Principal,
  userId: string,
  body: Omit<StoreMemoryBody, 'scope'> & { scope?: Scope | undefined },
): Promise<ArtifactSummary> {
  const { scope, owner, agentId } = placeOf(principal, userId, body);
  // Nothing is stored for a user (or session) being forgotten: 409 forget_in_progress. Global memory is no user's.
  const forgotten = scope === 'global' ? undefined : { userId, sessionId: body.sessionId ?? '' };
  if (forgotten) await refuseWhileForgetting(deps, forgotten);
  const content = typeof body.content === 'string' ? body.content : JSON.stringify(body.content, null, 2);
  if (content.trim() === '') throw new MemoryError('validation_failed', 'content must not be empty', { errors: [{ path: 'body.content', message: 'must not be empty' }] });
  const bytes = Buffer.byteLength(content, 'utf8');
  if (bytes > deps.detail.limits.maxBytes) {
    throw new MemoryError('payload_too_large', `The content has ${bytes} bytes; the maximum is ${deps.detail.limits.maxBytes}`, { maxBytes: deps.detail.limits.maxBytes, bytes });
  }
  const contentKind = body.contentKind ?? (typeof body.content === 'string' ? detectContentKind(content) : 'json');
  const description = body.description ?? (await describeForGoal(deps.chat, content, contentKind, body.goal, body.source));
  const record = await storeArtifact(deps, owner, {
    content,
    scope,
    type: body.type,
    tags: body.tags,
    ttlClass: body.ttlClass ?? DEFAULT_ARTIFACT_TTL_CLASS.stored,
    ...(body.ttlSeconds !== undefined && { ttlSeconds: body.ttlSeconds }),
    ...(body.key && { key: body.key }),
    ...(body.source && { source: body.source }),
    ...(description && { description }),
    contentKind,
    ...(body.sessionId && { sessionId: body.sessionId }),
    ...(agentId && { agentId }),
  });
  if (forgotten) await refuseUnlessKept(deps, forgotten, () => stillStored(deps, record));
  return summarise(record);
}

/** Whether the artifact is still stored as written: a forget may have purged it, and the key been written again since. */
async function stillStored(deps: Pick<ArtifactDeps, 'detail' | 'clock'>, record: ArtifactRecord): Promise<boolean> {
  const found = await deps.detail.artifacts.get(record.userId, record.key, deps.clock.now());
  return found?.createdAt === record.createdAt && found.contentHash === record.contentHash;
}

export interface RetrievedMemory extends ArtifactSummary {
  transform: GetMemoryQuery['transform'];
  content: string;
  partial: boolean;
  lines?: { kept: number; total: number };
}

export async function retrieveMemory(deps: ReadDeps, viewer: Viewer, key: string, query: Pick<GetMemoryQuery, 'transform' | 'n' | 'pattern'>): Promise<RetrievedMemory> {
  const record = await mustSee(deps, viewer, key);
  const content = await readContent(deps.detail, record);
  const view = applyTransform(content, record.contentKind, query);
  return { ...summarise(record), transform: query.transform, ...view };
}

/** The artifacts the viewer may see (its user's that their scope admits, and the global ones), newest first. */
export async function listMemories(deps: ReadDeps, viewer: Viewer, query: ListMemoriesQuery): Promise<{ items: ArtifactSummary[]; nextCursor: string | null }> {
  // agentId and sessionId name the viewer (already in `viewer`), not a filter.
  const { limit, cursor, type, source, tags, from, to, scope } = query;
  const filter = { ...(type && { type }), ...(source && { source }), ...(tags && { tags }), ...(from && { from }), ...(to && { to }), ...(scope && { scope }) };
  if (filter.from && filter.to && Date.parse(filter.from) > Date.parse(filter.to)) {
    throw new MemoryError('validation_failed', 'from must not be after to', { errors: [{ path: 'query.from', message: 'after to' }] });
  }
  const page = await deps.detail.artifacts.list(
    viewer,
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

/**
 * Deletes a live artifact the viewer may see, and its blob; one it may not see, or an expired one, is not_found like
 * an unknown key (the sweep removes expired ones). A global one only an admin principal deletes (403).
 */
export async function deleteMemory(deps: ReadDeps, principal: Principal, viewer: Viewer, key: string): Promise<{ key: string; deleted: true }> {
  const found = await mustSee(deps, viewer, key);
  if (found.scope === 'global' && !isAdmin(principal)) throw forbidden('Only an admin principal (all users, bound to no agent) deletes global memories');
  const removed = await deps.detail.artifacts.delete(found.userId, key);
  if (!removed) throw notFound(`Memory ${key}`);
  if (removed.storage.kind === 'blob' && deps.detail.blobs) await deps.detail.blobs.delete(removed.storage.blobName);
  return { key, deleted: true };
}

export interface MemoryHit extends ArtifactSummary {
  score: number;
  excerpt: string;
}

/** Text search over the live artifacts the viewer may see (descriptions and inline contents): every query word that matches scores. */
export async function searchMemories(deps: ReadDeps, viewer: Viewer, query: string, limit = 5): Promise<MemoryHit[]> {
  const terms = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}_.-]+/u).filter((t) => t.length >= 2))].slice(0, 16);
  const candidates = await deps.detail.artifacts.search(viewer, terms, 200, nowOf(deps));
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

/**
 * A snapshot of artifacts the viewer (its creator) may see; a key it may not see is reported unknown like a missing
 * one (404), so a snapshot never hands on more than its creator sees. Keys found in the global partition are recorded
 * as such, so a restore copies exactly what the creator saw. While the user is being forgotten: 409 `forget_in_progress`.
 */
export async function createSnapshot(deps: ArtifactDeps & { forgets?: ForgetStore }, viewer: Viewer, body: CreateSnapshotBody): Promise<{ snapshotId: string; keys: string[]; createdAt: string }> {
  const keys = [...new Set(body.keys)];
  const now = deps.clock.now();
  const found = await Promise.all(keys.map(async (key) => ({ key, record: await findVisible(deps, viewer, key) })));
  const missing = found.filter((f) => !f.record).map((f) => f.key);
  if (missing.length > 0) throw new MemoryError('not_found', `Unknown memory keys: ${missing.join(', ')}`, { missing });
  const globalKeys = found.filter((f) => f.record?.userId === GLOBAL_OWNER).map((f) => f.key);
  const snapshot = {
    userId: viewer.userId,
    snapshotId: `snap-${deps.ids.newId()}`,
    keys,
    createdAt: now.toISOString(),
    ...(body.agentId && { agentId: body.agentId }),
    ...(globalKeys.length > 0 && { globalKeys }),
  };
  // A snapshot is the user's (of no session): refused while the user is being forgotten, as a memory is.
  const forgotten = { userId: viewer.userId, sessionId: '' };
  await refuseWhileForgetting(deps, forgotten);
  await deps.detail.artifacts.putSnapshot(snapshot);
  await refuseUnlessKept(deps, forgotten, async () => (await deps.detail.artifacts.getSnapshot(viewer.userId, snapshot.snapshotId)) !== null);
  return { snapshotId: snapshot.snapshotId, keys, createdAt: snapshot.createdAt };
}

/**
 * Copies a snapshot's artifacts for `agentId`: each copy is `private` to that agent, so it sees exactly the restored
 * copies and no other agent does (a `sessionId` is recorded on the copies, as provenance; it does not widen them). The
 * copies' keys derive from snapshot, key and agent, so restoring twice is harmless. An artifact deleted or expired
 * since the snapshot is reported missing; a copy expires when its source does.
 */
export async function restoreSnapshot(deps: ArtifactDeps & { forgets?: ForgetStore }, userId: string, snapshotId: string, body: RestoreSnapshotBody) {
  const snapshot = await deps.detail.artifacts.getSnapshot(userId, snapshotId);
  if (!snapshot) throw notFound(`Snapshot ${snapshotId}`);
  const globalKeys = new Set(snapshot.globalKeys ?? []);
  const restored: { from: string; key: string }[] = [];
  const missing: string[] = [];
  for (const key of snapshot.keys) {
    const source = await deps.detail.artifacts.get(globalKeys.has(key) ? GLOBAL_OWNER : userId, key, deps.clock.now());
    if (!source) {
      missing.push(key);
      continue;
    }
    const copyKey = `r-${createHash('sha256').update(`${snapshotId}\n${key}\n${body.agentId}`).digest('hex').slice(0, 24)}`;
    const sessionId = body.sessionId ?? source.sessionId;
    // A copy is the user's memory (of its session, when it names one): refused while either is being forgotten.
    const forgotten = { userId, sessionId: sessionId ?? '' };
    await refuseWhileForgetting(deps, forgotten);
    const copy = await storeArtifact(
      deps,
      userId,
      {
        content: await readContent(deps.detail, source),
        key: copyKey,
        scope: 'private',
        type: source.type,
        tags: source.tags,
        description: source.description,
        contentKind: source.contentKind,
        tokens: source.tokens,
        agentId: body.agentId,
        restoredFrom: { snapshotId, key },
        expiresAt: source.expiresAt,
        ...(source.source && { source: source.source }),
        ...(sessionId && { sessionId }),
      },
      { reuseExisting: true },
    );
    await refuseUnlessKept(deps, forgotten, () => stillStored(deps, copy));
    restored.push({ from: key, key: copy.key });
  }
  return { snapshotId, agentId: body.agentId, restored, missing };
}
