import { createHash } from 'node:crypto';
import type { ArtifactRecord, ArtifactSummary, ContentKind, CreateSnapshotBody, GetMemoryQuery, ListMemoriesQuery, RestoreSnapshotBody, StoreMemoryBody } from '../contracts/artifacts.js';
import { describeContent, detectContentKind } from '../domain/compaction.js';
import { MemoryError, notFound } from '../domain/errors.js';
import { countContentTokens } from '../domain/memory-ref.js';
import { countTokens } from '../domain/tokens.js';
import { applyTransform } from '../domain/transforms.js';
import type { DetailMemory } from './artifact-ports.js';
import type { ChatModel, Clock, Ids } from './ports.js';

export interface ArtifactDeps {
  detail: DetailMemory;
  clock: Clock;
  ids: Ids;
}

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
 */
export async function storeArtifact(deps: ArtifactDeps, userId: string, input: NewArtifact, options: { reuseExisting?: boolean } = {}): Promise<ArtifactRecord> {
  const { limits, artifacts, blobs } = deps.detail;
  const bytes = Buffer.from(input.content, 'utf8');
  if (bytes.length > limits.maxBytes) {
    throw new MemoryError('payload_too_large', `The content has ${bytes.length} bytes; the maximum is ${limits.maxBytes}`, { maxBytes: limits.maxBytes, bytes: bytes.length });
  }
  const key = input.key ?? `mem-${deps.ids.newId()}`;
  const contentHash = sha256(bytes);
  const existing = await artifacts.get(userId, key);
  if (existing) {
    if (existing.contentHash === contentHash || options.reuseExisting) return existing;
    throw new MemoryError('conflict', `Memory ${key} already exists with different content`);
  }
  const contentKind = input.contentKind ?? detectContentKind(input.content);
  let storage: ArtifactRecord['storage'];
  if (bytes.length <= limits.inlineMaxBytes) storage = { kind: 'inline', content: input.content };
  else {
    if (!blobs) throw new MemoryError('upstream_unavailable', `Blob Storage is not configured; contents above ${limits.inlineMaxBytes} bytes need it`);
    // The hash in the name: a racing writer of other content under the same key never overwrites this blob.
    const blobName = `${userId}/${key}/${contentHash}`;
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
    createdAt: deps.clock.now().toISOString(),
    storage,
    ...(input.source && { source: input.source }),
    ...(input.sessionId && { sessionId: input.sessionId }),
    ...(input.agentId && { agentId: input.agentId }),
    ...(input.turnId && { turnId: input.turnId }),
    ...(input.restoredFrom && { restoredFrom: input.restoredFrom }),
  };
  const { record: stored, created } = await artifacts.putIfAbsent(record);
  if (!created && stored.contentHash !== contentHash && !options.reuseExisting) throw new MemoryError('conflict', `Memory ${key} already exists with different content`);
  return stored;
}

/** The content of an artifact, from the store or Blob Storage. */
export async function readContent(detail: DetailMemory, record: ArtifactRecord): Promise<string> {
  if (record.storage.kind === 'inline') return record.storage.content;
  if (!detail.blobs) throw new MemoryError('upstream_unavailable', 'Blob Storage is not configured');
  return (await detail.blobs.get(record.storage.blobName)).toString('utf8');
}

async function mustGet(detail: DetailMemory, userId: string, key: string): Promise<ArtifactRecord> {
  const record = await detail.artifacts.get(userId, key);
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

export async function storeMemory(deps: ArtifactDeps & { chat?: ChatModel }, userId: string, body: StoreMemoryBody): Promise<ArtifactSummary> {
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

export async function retrieveMemory(deps: Pick<ArtifactDeps, 'detail'>, userId: string, key: string, query: GetMemoryQuery): Promise<RetrievedMemory> {
  const record = await mustGet(deps.detail, userId, key);
  const content = await readContent(deps.detail, record);
  const view = applyTransform(content, record.contentKind, query);
  return { ...summarise(record), transform: query.transform, ...view };
}

export async function listMemories(deps: Pick<ArtifactDeps, 'detail'>, userId: string, query: ListMemoriesQuery): Promise<{ items: ArtifactSummary[]; nextCursor: string | null }> {
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
    cursor,
  );
  return { items: page.items.map(summarise), nextCursor: page.nextCursor };
}

export async function deleteMemory(deps: Pick<ArtifactDeps, 'detail'>, userId: string, key: string): Promise<{ key: string; deleted: true }> {
  const removed = await deps.detail.artifacts.delete(userId, key);
  if (!removed) throw notFound(`Memory ${key}`);
  if (removed.storage.kind === 'blob' && deps.detail.blobs) await deps.detail.blobs.delete(removed.storage.blobName);
  return { key, deleted: true };
}

export interface MemoryHit extends ArtifactSummary {
  score: number;
  excerpt: string;
}

/** Text search over the user's artifacts (descriptions and inline contents): every query word that matches scores. */
export async function searchMemories(deps: Pick<ArtifactDeps, 'detail'>, userId: string, query: string, limit = 5): Promise<MemoryHit[]> {
  const terms = [...new Set(query.toLowerCase().split(/[^\p{L}\p{N}_.-]+/u).filter((t) => t.length >= 2))].slice(0, 16);
  const candidates = await deps.detail.artifacts.search(userId, terms, 200);
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
  const missing = (await Promise.all(keys.map(async (k) => ((await deps.detail.artifacts.get(userId, k)) ? null : k)))).filter((k) => k !== null);
  if (missing.length > 0) throw new MemoryError('not_found', `Unknown memory keys: ${missing.join(', ')}`, { missing });
  const snapshot = { userId, snapshotId: `snap-${deps.ids.newId()}`, keys, createdAt: deps.clock.now().toISOString(), ...(body.agentId && { agentId: body.agentId }) };
  await deps.detail.artifacts.putSnapshot(snapshot);
  return { snapshotId: snapshot.snapshotId, keys, createdAt: snapshot.createdAt };
}

/**
 * Copies a snapshot's artifacts into `agentId`'s view (listable with `agentId=`). The copies' keys derive from
 * snapshot, key and agent, so restoring twice is harmless. An artifact deleted since the snapshot is reported missing.
 */
export async function restoreSnapshot(deps: ArtifactDeps, userId: string, snapshotId: string, body: RestoreSnapshotBody) {
  const snapshot = await deps.detail.artifacts.getSnapshot(userId, snapshotId);
  if (!snapshot) throw notFound(`Snapshot ${snapshotId}`);
  const restored: { from: string; key: string }[] = [];
  const missing: string[] = [];
  for (const key of snapshot.keys) {
    const source = await deps.detail.artifacts.get(userId, key);
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
        ...(source.source && { source: source.source }),
        ...((body.sessionId ?? source.sessionId) && { sessionId: body.sessionId ?? source.sessionId }),
      },
      { reuseExisting: true },
    );
    restored.push({ from: key, key: copy.key });
  }
  return { snapshotId, agentId: body.agentId, restored, missing };
}
