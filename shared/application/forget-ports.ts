import type { SessionKey } from '../contracts/ids.js';

/** What a forget removes: every item of the user, or (with `sessionId`) what belongs to one session of the user. */
export interface ForgetScope {
  userId: string;
  sessionId?: string;
}

/** Items per store (a table or a container, `blobs`, `durableInstances`, `searchSnapshots`), for the purge report. */
export type StoreCounts = Record<string, number>;

/**
 * How a forget ends (FORGET_GRACE_SECONDS): after a clean scan the tombstone stays `graceSeconds` more, then a last
 * round purges and scans before it is cleared (see the forget workflow); 0 clears it right after the clean scan.
 */
export interface ForgetConfig {
  graceSeconds: number;
}

/**
 * Forget (issue 15 item 3) behind one port, implemented by each store adapter (PostgreSQL, Cosmos DB).
 *
 * The tombstone is the record that a forget is in progress for the scope, one per owner (`TombstoneOwner`): from the
 * moment `markForgetting` returns, the store refuses new writes for the scope (PostgreSQL: a trigger on every user
 * table, under a per-user lock), or the writers refuse them when they find a tombstone (Cosmos DB: checked before the
 * write, enlisted with after it). Its owner deletes it by `clearForgetting` once the scan found nothing left.
 */
export interface ForgetStore {
  /**
   * True when the store itself refuses every write of a scope under a tombstone, atomically with the write
   * (PostgreSQL). False: a writer enlists after its write, else reads it back (Cosmos DB; see `refuseUnlessKept`).
   */
  readonly refusesWritesItself: boolean;
  /**
   * Records the owner's tombstone of the scope (idempotent); when it returns, no write that started before it is still in
   * flight (PostgreSQL). True when this call recorded it; false when the owner's was there already (an earlier run of the
   * same forget, or another overtaken projector of the session).
   */
  markForgetting(scope: ForgetScope, owner: TombstoneOwner, at: Date): Promise<boolean>;
  /** True when a forget of the session's user, or of this session, is in progress. */
  forgetting(key: SessionKey): Promise<boolean>;
  /**
   * A writer whose write of the session may have landed after a forget's last scan (a projector the forget overtook; on
   * Cosmos DB, a client's append, memory or slot write)
   * enlists with the forgets in progress: it changes their tombstones' version, so a forget that scanned before this
   * does not clear its tombstone (`clearForgetting` with the version read before the scan) and purges again. True when
   * a tombstone of the session's user or of the session was there to enlist with (its forget purges what was written
   * before); false when there was none, and nobody will purge the write. A store that refuses writes itself
   * (PostgreSQL) only answers whether one is there: a write it took committed before the tombstone, so the purge that
   * follows the tombstone deletes it. `owners`: only with the tombstones of these owners (all by default).
   */
  enlist(key: SessionKey, owners?: readonly TombstoneOwner[]): Promise<boolean>;
  /** The sessions of the scope that have events or a session document (ids only), before anything is deleted. */
  sessions(scope: ForgetScope): Promise<string[]>;
  /** Names of the Blob Storage blobs the scope's artifacts (and the blob sweep's queue) name. */
  blobNames(scope: ForgetScope): Promise<string[]>;
  /**
   * Deletes every item of the scope except the tombstone; items deleted per store. Idempotent. `keepClientItems`: not
   * the memories (artifacts) and slots clients write beside the session's events, only the events and what is derived
   * from them (an overtaken projector forgetting what it wrote: a client's memory or slot written after the forget stays).
   * `deleteBlobs`: called with the blob names of the artifact rows about to be deleted, read with their ids, before the
   * rows go, so a blob written after the forget's blob step goes with its row and a crash between the two leaves the row
   * naming its blob for the rerun (the store has no Blob Storage; the caller deletes those that exist).
   */
  purge(scope: ForgetScope, options?: PurgeOptions): Promise<StoreCounts>;
  /**
   * Erasure of a forgotten session (`scope.sessionId`) from the init blocks of the user's other sessions: rewrites
   * their `SessionInitFixed` events without its `recentSessions` entry (its summary). Recorded events are otherwise
   * never changed; this in-place rewrite is the one sanctioned exception, because the text must be gone. Returns the
   * events rewritten and the sessions whose events or documents named it (their documents are to be refolded; see
   * `refoldSession`). Idempotent. A store whose guards refuse the writes of a session under a tombstone (PostgreSQL)
   * leaves such a session to its own forget, here and in `scan` alike.
   */
  redactInit(scope: Required<ForgetScope>): Promise<{ events: number; sessionIds: string[] }>;
  /**
   * Items of the scope still held, per store, counted by queries of their own (not the purge's), over every table or
   * container that holds user data. The tombstone is not counted. For a session, also `initEvents` and `initDocuments`:
   * other sessions' `SessionInitFixed` events and session documents whose init block still names it.
   */
  scan(scope: ForgetScope): Promise<StoreCounts>;
  /** The owner's tombstone's version (Cosmos DB: its ETag; PostgreSQL: its row version), null when there is none. */
  tombstoneVersion(scope: ForgetScope, owner: TombstoneOwner): Promise<string | null>;
  /**
   * Deletes the owner's tombstone (idempotent): with `version`, only while it still has that version, the one read before
   * the last scan. False when a writer enlisted since (`enlist`): the tombstone stays, and the forget purges and scans again.
   */
  clearForgetting(scope: ForgetScope, owner: TombstoneOwner, version?: string): Promise<boolean>;
  /** Deletes the owner's tombstone if it was recorded before `recordedBefore` (its owner died holding it; see `beginForget`). */
  clearStale(scope: ForgetScope, owner: TombstoneOwner, recordedBefore: Date): Promise<void>;
}

/**
 * Who recorded a tombstone, and alone clears it: the scope's forget operation, or the session's overtaken projectors
 * forgetting what they wrote themselves (`forgetIfOvertaken`). A scope may have both at once; writers are refused (and
 * enlist) under each.
 */
export const TOMBSTONE_OWNERS = ['forget', 'projector'] as const;
export type TombstoneOwner = (typeof TOMBSTONE_OWNERS)[number];

/** A process-local copy of a user's rows (PGlite's in-process search snapshots). */
export interface SearchCache {
  /** Drops the user's copy; the rows it held. */
  evict(userId: string): number;
  /** The rows held for the user (0 when none). */
  held(userId: string): number;
}

/** See `ForgetStore.purge`. */
export interface PurgeOptions {
  keepClientItems?: boolean;
  deleteBlobs?: (names: string[]) => Promise<void>;
}
