import { GLOBAL_OWNER, type ArtifactRecord } from '../contracts/artifacts.js';
import type { Scope } from '../contracts/scopes.js';
import { MemoryError } from '../domain/errors.js';
import type { Viewer } from '../domain/scopes.js';

export interface ArtifactFilter {
  type?: string;
  source?: string;
  /** Every tag must be present. */
  tags?: string[];
  /** createdAt range, inclusive, ISO 8601. */
  from?: string;
  to?: string;
  /** Only this scope. */
  scope?: Scope;
}

/** A snapshot: the artifact keys handed to a sub-agent, restorable into another agent's view. */
export interface SnapshotRecord {
  userId: string;
  snapshotId: string;
  keys: string[];
  agentId?: string;
  createdAt: string;
  /** Keys of `keys` that name global artifacts (the creator saw the global one); the others are the user's. */
  globalKeys?: string[];
}

/**
 * Artifacts' metadata (and inline content). Every operation is scoped by userId: one user's artifacts are
 * invisible to every other user's requests. `global` artifacts are stored under the reserved owner GLOBAL_OWNER and
 * read by point (`get(GLOBAL_OWNER, key)`) or by the listing and search of any viewer. Readers take `now`: an
 * artifact whose `expiresAt` is not after it is gone for them (as if deleted) even while its row or item still waits
 * for the sweep.
 *
 * `list` and `search` return only what the viewer may see (`canSee`, shared/domain/scopes.ts): the user's artifacts
 * its scope admits, and the global ones. They filter in the query, so a page is never short because of visibility.
 */
export interface ArtifactStore {
  /**
   * Writes the record unless the user already has that key; returns what is stored and whether this call created it.
   * The stored record may be an expired one still awaiting the sweep: the caller decides (see `expire`).
   */
  putIfAbsent(record: ArtifactRecord): Promise<{ record: ArtifactRecord; created: boolean }>;
  /** The artifact, or null when there is none or it has expired at `now`. */
  get(userId: string, key: string, now: Date): Promise<ArtifactRecord | null>;
  /** Live artifacts at `now` the viewer may see, newest first (the sort key); `cursor` continues after the last item of a previous page. */
  list(viewer: Viewer, filter: ArtifactFilter, limit: number, now: Date, cursor?: string): Promise<{ items: ArtifactRecord[]; nextCursor: string | null }>;
  /** Removes the record whatever its expiry and returns it (null when there was none). */
  delete(userId: string, key: string): Promise<ArtifactRecord | null>;
  /** Live artifacts the viewer may see whose description or inline content contains any of the (lower-case) terms; at most `limit`, newest first. */
  search(viewer: Viewer, terms: readonly string[], limit: number, now: Date): Promise<ArtifactRecord[]>;
  /**
   * Removes the user's artifacts expired at `now` (at most `limit`; only `key` when given) and queues the blobs they
   * referenced for deletion: a blob is queued no later than its artifact goes (PostgreSQL: one statement; Cosmos: the
   * queue entry first), so a crash never loses track of a blob, and `pendingBlobDeletions` holds back a blob while an
   * artifact still points at it. Returns how many artifacts this call removed; a rerun removes nothing more.
   */
  expire(userId: string, now: Date, options?: { key?: string; limit?: number }): Promise<number>;
  /** Blob names queued by `expire` and not yet confirmed deleted (at most `limit`), none still referenced by an artifact. */
  pendingBlobDeletions(userId: string, limit: number): Promise<string[]>;
  /** Confirms that these queued blobs are deleted: they leave the queue. */
  blobDeletionsDone(userId: string, blobNames: readonly string[]): Promise<void>;
  putSnapshot(snapshot: SnapshotRecord): Promise<void>;
  getSnapshot(userId: string, snapshotId: string): Promise<SnapshotRecord | null>;
}

/**
 * Large artifact contents (Blob Storage; Azurite locally). Names are `<userId>/<key>/<contentHash>`, with `~<expiry in
 * epoch seconds>` appended for an artifact that expires: a later artifact under the same key never reuses the name of one
 * whose blob the sweep is deleting.
 */
export interface BlobStore {
  put(name: string, content: Buffer): Promise<void>;
  /** The stored bytes; `not_found` when the blob is missing. */
  get(name: string): Promise<Buffer>;
  /** Removes the blob; a missing blob is not an error. */
  delete(name: string): Promise<void>;
  /** Names of the blobs that exist among `names`, or under `prefix` (forget's scan); none when `names` is empty. */
  existing(query: { prefix: string } | { names: readonly string[] }): Promise<string[]>;
}

export interface DetailMemoryLimits {
  /** Turns with more tokens are offloaded at append. */
  offloadThresholdTokens: number;
  /** Contents up to this many UTF-8 bytes stay in the store; larger ones go to Blob Storage. */
  inlineMaxBytes: number;
  /** Larger contents are refused (413). */
  maxBytes: number;
}

export interface DetailMemory {
  artifacts: ArtifactStore;
  /** Null when no Blob Storage is configured: contents above the inline limit are then refused. */
  blobs: BlobStore | null;
  limits: DetailMemoryLimits;
}

/**
 * Sort key of the listing: createdAt then key, compared as text (ISO timestamps sort chronologically). A global
 * artifact's ends in `|global`: a user's key and a global key may be equal, and a listing merges both, so their sort
 * keys must differ for the cursor to skip neither.
 */
export const artifactSortKey = (record: Pick<ArtifactRecord, 'createdAt' | 'key' | 'userId'>) => `${record.createdAt}|${record.key}${record.userId === GLOBAL_OWNER ? '|global' : ''}`;

export const encodeCursor = (sortKey: string) => Buffer.from(sortKey, 'utf8').toString('base64url');
export function decodeCursor(cursor: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z\|[A-Za-z0-9._:-]{1,128}(\|global)?$/.test(decoded)) throw new MemoryError('validation_failed', 'cursor is not one this service issued', { errors: [{ path: 'query.cursor', message: 'unknown cursor' }] });
  return decoded;
}
