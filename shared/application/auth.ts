import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { MemoryError } from '../domain/errors.js';

/**
 * Who calls: bound to a tenant (Entra) and to either every user (a service principal with the all-users app role, a
 * service API key, the open local mode) or one user, and optionally to one agent. `via` and `subject` name how it
 * signed in (a key id, a token's subject) for logs; they are never a secret.
 */
export type Principal = {
  via: 'entra' | 'apikey' | 'open' | 'stdio';
  subject: string;
  tenant?: string;
  agentId?: string;
} & ({ allUsers: true } | { allUsers: false; userId: string });

export const unauthorized = (message = 'Credentials are missing or not valid') => new MemoryError('unauthorized', message);
export const forbidden = (message: string) => new MemoryError('forbidden', message);

/** True when the principal may read and write `userId`'s memory. */
export const canAccessUser = (principal: Principal, userId: string): boolean => principal.allUsers || principal.userId === userId;

/**
 * The one authorization check for a user's memory (HTTP routes with a `{userId}`, MCP tools with a userId argument).
 * Another user's memory is 403: the caller named the user, so the answer reveals nothing about whether it exists.
 */
export function authorizeUser(principal: Principal, userId: string): void {
  if (!canAccessUser(principal, userId)) throw forbidden('This principal may not act on that user');
}

/** An agent-bound principal acts only as its agent: any agentId the request names must be its own. */
export function authorizeAgents(principal: Principal, agentIds: Iterable<unknown>): void {
  if (principal.agentId === undefined) return;
  for (const agentId of agentIds) {
    if (agentId !== undefined && agentId !== principal.agentId) throw forbidden('This principal may not act as another agent');
  }
}

/** Requests that are not about one user (the nightly operation, service-wide routes) need an all-users principal. */
export function authorizeAllUsers(principal: Principal): void {
  if (!principal.allUsers) throw forbidden('This needs a service principal (all users)');
}

// --- API keys ----------------------------------------------------------------------------------------------------

/** A stored API key: its hash only, never the key. `userId` absent = a service key for all users. */
export interface ApiKeyRecord {
  keyId: string;
  /** SHA-256 of the whole key, hex. */
  hash: string;
  userId?: string;
  agentId?: string;
  label?: string;
  createdAt: string;
  revokedAt?: string;
}

/** Where API keys are kept (PostgreSQL table `api_keys`, Cosmos DB container `apiKeys`). */
export interface ApiKeyStore {
  /** Stores a new key; a keyId already taken is a `conflict`. */
  create(record: ApiKeyRecord): Promise<void>;
  get(keyId: string): Promise<ApiKeyRecord | null>;
  /** Marks the key revoked at `at` (kept for audit); false when there is no such key. Revoking twice keeps the first time. */
  revoke(keyId: string, at: Date): Promise<boolean>;
  /** Every key, newest first (hashes included; callers show what they need). */
  list(): Promise<ApiKeyRecord[]>;
}

const KEY_PREFIX = 'amk';
/** `amk_<keyId>_<secret>`: the key id (12 hex) finds the record in one point read; the secret is 256 random bits. */
const KEY_SHAPE = /^amk_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

export const hashApiKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/** Creates a key for one user (optionally one agent) or, without userId, a service key for all users. Returns the key once. */
export async function createApiKey(
  store: ApiKeyStore,
  binding: { userId?: string; agentId?: string; label?: string },
  now: Date,
): Promise<{ key: string; record: ApiKeyRecord }> {
  const keyId = randomBytes(6).toString('hex');
  const key = `${KEY_PREFIX}_${keyId}_${randomBytes(32).toString('base64url')}`;
  const record: ApiKeyRecord = {
    keyId,
    hash: hashApiKey(key),
    ...(binding.userId !== undefined && { userId: binding.userId }),
    ...(binding.agentId !== undefined && { agentId: binding.agentId }),
    ...(binding.label !== undefined && { label: binding.label }),
    createdAt: now.toISOString(),
  };
  await store.create(record);
  return { key, record };
}

/** The principal of an API key, or null for a malformed, unknown or revoked key. */
export async function verifyApiKey(store: ApiKeyStore, key: string): Promise<Principal | null> {
  const match = KEY_SHAPE.exec(key);
  if (!match) return null;
  const record = await store.get(match[1]!);
  if (!record || record.revokedAt !== undefined) return null;
  const expected = Buffer.from(record.hash, 'hex');
  const actual = Buffer.from(hashApiKey(key), 'hex');
  if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) return null;
  const base = { via: 'apikey' as const, subject: `key:${record.keyId}`, ...(record.agentId !== undefined && { agentId: record.agentId }) };
  return record.userId === undefined ? { ...base, allUsers: true } : { ...base, allUsers: false, userId: record.userId };
}
