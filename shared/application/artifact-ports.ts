import type { ArtifactRecord } from '../contracts/artifacts.js';
import { MemoryError } from '../domain/errors.js';

export interface ArtifactFilter {
  type?: string;
  source?: string;
  /** Every tag must be present. */
  tags?: string[];
  /** createdAt range, inclusive, ISO 8601. */
  from?: string;
  to?: string;
  sessionId?: string;
  agentId?: string;
}

/** A snapshot: the artifact keys handed to a sub-agent, restorable into another agent's view. */
export interface SnapshotRecord {
  userId: string;
  snapshotId: string;
  keys: string[];
  agentId?: string;
  createdAt: string;
}

/**
 * Detail memory's metadata (and inline content). Every operation is scoped by userId: one user's artifacts are
 * invisible to every other user's requests.
 */
export interface ArtifactStore {
  /** Writes the record unless the user already has that key; returns what is stored and whether this call created it. */
  putIfAbsent(record: ArtifactRecord): Promise<{ record: ArtifactRecord; created: boolean }>;
  get(userId: string, key: string): Promise<ArtifactRecord | null>;
  /** Newest first (createdAt, then key); `cursor` continues after the last item of a previous page. */
  list(userId: string, filter: ArtifactFilter, limit: number, cursor?: string): Promise<{ items: ArtifactRecord[]; nextCursor: string | null }>;
  /** Removes the record and returns it (null when there was none). */
  delete(userId: string, key: string): Promise<ArtifactRecord | null>;
  /** Artifacts whose description or inline content contains any of the (lower-case) terms; at most `limit`, newest first. */
  search(userId: string, terms: readonly string[], limit: number): Promise<ArtifactRecord[]>;
  putSnapshot(snapshot: SnapshotRecord): Promise<void>;
  getSnapshot(userId: string, snapshotId: string): Promise<SnapshotRecord | null>;
}

/** Large artifact contents (Blob Storage; Azurite locally). Names are `<userId>/<key>/<contentHash>`. */
export interface BlobStore {
  put(name: string, content: Buffer): Promise<void>;
  /** The stored bytes; `not_found` when the blob is missing. */
  get(name: string): Promise<Buffer>;
  /** Removes the blob; a missing blob is not an error. */
  delete(name: string): Promise<void>;
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

/** Sort key of the listing: createdAt then key, compared as text (ISO timestamps sort chronologically). */
export const artifactSortKey = (record: Pick<ArtifactRecord, 'createdAt' | 'key'>) => `${record.createdAt}|${record.key}`;

export const encodeCursor = (sortKey: string) => Buffer.from(sortKey, 'utf8').toString('base64url');
export function decodeCursor(cursor: string): string {
  const decoded = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!/^\d{4}-\d{2}-\d{2}T[^|]+\|[A-Za-z0-9._:-]{1,128}$/.test(decoded)) throw new MemoryError('validation_failed', 'cursor is not one this service issued', { errors: [{ path: 'query.cursor', message: 'unknown cursor' }] });
  return decoded;
}
