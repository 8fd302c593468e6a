import { z } from 'zod';
import { eventKey } from '../contracts/events.js';
import { Id, type SessionKey } from '../contracts/ids.js';
import { ForgetInput, forgetInstanceId, ORCHESTRATIONS, sessionEndInstanceId } from '../contracts/operations.js';
import { forgetInProgress } from '../domain/errors.js';
import type { DetailMemory } from './artifact-ports.js';
import { TOMBSTONE_OWNERS, type ForgetConfig, type ForgetScope, type ForgetStore, type StoreCounts, type TombstoneOwner } from './forget-ports.js';
import type { OrchestrationClient } from './operation-ports.js';
import type { Clock, Deps, EventStore } from './ports.js';
import { eraseFromInitBlocks } from './project-session.js';

/**
 * Forget (DELETE /users/{u}, DELETE /users/{u}/sessions/{s}): the steps of the forget workflow
 * (shared/application/workflows/forget.ts) and the append path's check. Every step is idempotent, so a rerun after a
 * crash finishes what the first run started.
 */

export interface ForgetDeps {
  forgets: ForgetStore;
  detail: Pick<DetailMemory, 'blobs'>;
  clock: Clock;
}

/** The steps that purge or scan durable instance histories also need the orchestration client. */
export interface ForgetDurableDeps extends ForgetDeps {
  orchestrations: OrchestrationClient;
}

/** The store step also refolds the documents of the sessions whose init block it redacted. */
export interface PurgeDeps extends ForgetDeps, Pick<Deps, 'events' | 'sessions'> {}

const scopeOf = (input: ForgetInput): ForgetScope => (input.sessionId === undefined ? { userId: input.userId } : { userId: input.userId, sessionId: input.sessionId });

export const Counts = z.record(z.string(), z.number().int().nonnegative());

/** `graceSeconds`: the wait before the last round (0 in a result recorded before there was one, so its replay is unchanged). */
export const BeginResult = z.object({ sessionIds: z.array(Id), graceSeconds: z.number().int().nonnegative().default(0) });
export const DurableResult = z.object({ durableInstances: z.number().int().nonnegative() });
export const BlobsResult = z.object({ blobNames: z.array(z.string()), deleted: z.number().int().nonnegative() });
export const StoresResult = z.object({ removed: Counts });
export const VerifyInput = ForgetInput.extend({ sessionIds: z.array(Id), blobNames: z.array(z.string()) });
/** `tombstone`: its version before the scan (null: none, or a result recorded before versions were read). */
export const VerifyResult = z.object({ residual: Counts, total: z.number().int().nonnegative(), tombstone: z.string().nullable().default(null) });
export const FinishInput = ForgetInput.extend({ removed: z.number().int().nonnegative(), tombstone: VerifyResult.shape.tombstone });
export const FinishResult = z.object({ cleared: z.boolean() });

/**
 * An overtaken projector holds its tombstone for one purge of the session (see `forgetIfOvertaken`), and no invocation
 * outlives host.json's `functionTimeout` (10 minutes): one recorded longer ago than this was left by a projector that
 * died holding it, and would refuse the session's writes for good.
 */
export const DEAD_PROJECTOR_MS = 15 * 60_000;

/**
 * Step 1: records the forget's own tombstone (from here on, writes of the scope are refused; see ForgetStore) and lists
 * the scope's sessions, whose session-end histories the next step purges. A tombstone of an overtaken projector found
 * there is not taken for the forget's: the projector clears its own when its purge is done, while the forget's stays
 * until the forget's clean scan. A session's forget clears a dead projector's (`DEAD_PROJECTOR_MS`). The grace setting
 * goes into the history with the sessions, so the orchestrator reads it deterministically.
 */
export async function beginForget(deps: ForgetDeps & { forget: ForgetConfig }, input: ForgetInput): Promise<z.infer<typeof BeginResult>> {
  const scope = scopeOf(input);
  const now = deps.clock.now();
  await deps.forgets.markForgetting(scope, 'forget', now);
  if (scope.sessionId !== undefined) await deps.forgets.clearStale(scope, 'projector', new Date(now.getTime() - DEAD_PROJECTOR_MS));
  return { sessionIds: await deps.forgets.sessions(scope), graceSeconds: deps.forget.graceSeconds };
}

/** The durable instances whose histories carry the scope's text: session end (its summary and key topics). */
const textInstances = (userId: string, sessionIds: readonly string[]) => sessionIds.map((s) => sessionEndInstanceId(userId, s));

/** Step 2: purges the session-end instance histories of the scope's sessions (before the sessions are gone). */
export async function purgeDurableHistories(deps: ForgetDurableDeps, input: ForgetInput & { sessionIds: string[] }): Promise<z.infer<typeof DurableResult>> {
  return { durableInstances: await deps.orchestrations.purge(textInstances(input.userId, input.sessionIds)) };
}

/** Step 3: deletes the blobs the scope's artifacts name, before their rows, so a rerun still finds their names. */
export async function purgeBlobs(deps: ForgetDeps, input: ForgetInput): Promise<z.infer<typeof BlobsResult>> {
  const named = await deps.forgets.blobNames(scopeOf(input));
  // For a user, also every blob under the user's prefix that no row names (a write refused after its blob was stored).
  const unnamed = input.sessionId === undefined && deps.detail.blobs ? await deps.detail.blobs.existing({ prefix: `${input.userId}/` }) : [];
  const blobNames = [...new Set([...named, ...unnamed])].sort();
  return { blobNames, deleted: await deleteExistingBlobs(deps, blobNames) };
}

/** Deletes those of the named blobs that exist (a rerun finds some gone); how many it deleted. */
async function deleteExistingBlobs(deps: ForgetDeps, names: readonly string[]): Promise<number> {
  if (names.length === 0) return 0;
  if (!deps.detail.blobs) throw new Error(`forget: ${names.length} blobs are named but no Blob Storage is configured`);
  const existing = await deps.detail.blobs.existing({ names: [...names] });
  for (const name of existing) await deps.detail.blobs.delete(name);
  return existing.length;
}

/**
 * Step 4: deletes every item of the scope in the store (the tombstone stays until step 6), and the blob of each artifact
 * row it deletes (`blobs`), before the row: one written after step 3 would otherwise be named by nothing. For a
 * session, then erases its summary from the init blocks of the user's other sessions: their `SessionInitFixed` events
 * are rewritten without its entry and their documents folded again (`initEvents`, `initDocuments`). After the purge,
 * so no init read later can pick the session up; one fixed meanwhile is found by the scan and erased in the next round,
 * and one read before the purge but written after the scan is erased by its projector (see `eraseForgottenCitations`).
 */
export async function purgeStores(deps: PurgeDeps, input: ForgetInput): Promise<z.infer<typeof StoresResult>> {
  let blobs = 0;
  const deleteBlobs = async (names: string[]) => void (blobs += await deleteExistingBlobs(deps, names));
  const removed = { ...(await deps.forgets.purge(scopeOf(input), { deleteBlobs })), blobs };
  if (input.sessionId === undefined) return { removed };
  const erased = await eraseFromInitBlocks(deps, { userId: input.userId, sessionId: input.sessionId });
  return { removed: { ...removed, initEvents: erased.events, initDocuments: erased.documents } };
}

/**
 * Step 5, the proof: counts what is left of the scope in every store, independently of the purge: the store's own scan
 * (every table / container that holds user data), Blob Storage (every blob under the user's prefix; for a session,
 * the names its artifacts had) and the durable histories of the scope's sessions. The tombstone's version is read
 * first: a writer that enlists after this read changes it (see finishForget), one that enlisted before wrote before
 * the scan, which counts what it wrote.
 */
export async function verifyForget(deps: ForgetDurableDeps, input: z.infer<typeof VerifyInput>): Promise<z.infer<typeof VerifyResult>> {
  const scope = scopeOf(input);
  const tombstone = await deps.forgets.tombstoneVersion(scope, 'forget');
  const residual: StoreCounts = { ...(await deps.forgets.scan(scope)) };
  const blobs = deps.detail.blobs;
  residual.blobs = blobs ? (await blobs.existing(scope.sessionId === undefined ? { prefix: `${scope.userId}/` } : { names: input.blobNames })).length : 0;
  let durable = 0;
  for (const id of textInstances(input.userId, input.sessionIds)) if (await deps.orchestrations.status(id)) durable++;
  residual.durableInstances = durable;
  const total = Object.values(residual).reduce((a, b) => a + b, 0);
  return { residual, total, tombstone };
}

/**
 * Step 6: the scan found nothing, so the tombstone goes and the scope takes writes again, starting from nothing; only
 * the tombstone the scan was made under, though. A projector the forget overtook that wrote after the scan enlists
 * with the tombstone after its write (`ForgetStore.enlist`) and leaves the purge to this forget: then the tombstone has
 * another version, stays, and the workflow purges and scans again (`cleared: false`). One that finds no tombstone to
 * enlist with purges what it wrote itself (see `forgetIfOvertaken`).
 */
export async function finishForget(deps: ForgetDeps, input: z.input<typeof FinishInput>): Promise<z.infer<typeof FinishResult>> {
  return { cleared: await deps.forgets.clearForgetting(scopeOf(input), 'forget', input.tombstone ?? undefined) };
}

/**
 * Starts the forget operation (202 `{operationId}`). The instance id is the scope's, so a repeated DELETE while it
 * runs returns the same operation; once it has completed, a new DELETE purges the finished instance's history (ids and
 * counts only) and runs the purge again, so data written after the first forget is forgotten too.
 */
export async function requestForget(client: OrchestrationClient, input: ForgetInput): Promise<{ operationId: string; started: boolean }> {
  const operationId = forgetInstanceId(input.userId, input.sessionId);
  const existing = await client.status(operationId);
  if (existing?.status === 'completed') await client.purge([operationId]);
  const { started } = await client.start(ORCHESTRATIONS.forget, operationId, ForgetInput.parse(input));
  return { operationId, started };
}

/**
 * The writers' check before they write anything (appends, artifacts included; handoffs; end requests; memories;
 * restores; slots; snapshots): a write of a session whose user (or the session itself) is being forgotten is refused
 * with 409 `forget_in_progress` (a user's item of no session: `sessionId` ''). See README "Forget".
 */
export async function refuseWhileForgetting(deps: { forgets?: ForgetStore }, key: SessionKey): Promise<void> {
  if (await deps.forgets?.forgetting(key)) throw forgetInProgress(key.userId, key.sessionId);
}

/**
 * The writers' step after their write landed, on a store that does not refuse writes under a tombstone itself (Cosmos
 * DB): is it kept? A forget whose tombstone covers the session may have begun before the write landed, so the writer
 * enlists with it (`ForgetStore.enlist`): the forget purges what was written (one that scanned before the write purges
 * and scans again), and the write is refused with 409 `forget_in_progress` (its items may be gone or going; nothing is
 * purged here, so a write accepted after the forget is never touched). With no tombstone to enlist with, a forget may
 * have purged the write and cleared its tombstone already: `stillThere` reads the write back, and it is refused the
 * same way unless all of it is there. A 409 thus does not say that nothing was written: the client retries with the
 * same ids, as after a timeout (an overtaken projector's own tombstone, see `forgetIfOvertaken`, keeps a stream that
 * holds a client's events, so a refused append's events may stay). `purgedBy`: the owners whose purge takes the write.
 * A forget's takes everything of its scope; an overtaken projector's only the session's events, and keeps a client's
 * memories and slots, so those enlist with the forgets' tombstones alone (the default) and are not refused under it.
 */
export async function refuseUnlessKept(deps: { forgets?: ForgetStore }, key: SessionKey, stillThere: () => Promise<boolean>, purgedBy: readonly TombstoneOwner[] = ['forget']): Promise<void> {
  const forgets = deps.forgets;
  if (!forgets || forgets.refusesWritesItself) return;
  if ((await forgets.enlist(key, purgedBy)) || !(await stillThere())) throw forgetInProgress(key.userId, key.sessionId);
}

/** A client's event as the store answered it: its seq, and its key (a turn's `turnId`, `@handoff:<id>`, `@end`). */
export interface WrittenEvent {
  seq: number;
  eventKey: string;
}

/**
 * `refuseUnlessKept` for a client's events of the session (turns, a handoff, an end request): the read-back is one
 * read of the seqs' range, and each event's key is compared, since after a forget a new stream starts at seq 1 again
 * and another event may hold the seq. (A retry that mixes events recorded long ago with new ones reads the events
 * between them too.) Events enlist with every owner's tombstone: an overtaken projector's purge takes them too.
 */
export async function refuseUnlessEventsKept(deps: { forgets?: ForgetStore; events: Pick<EventStore, 'read'> }, key: SessionKey, written: readonly WrittenEvent[]): Promise<void> {
  await refuseUnlessKept(deps, key, async () => {
    if (written.length === 0) return true;
    const seqs = written.map((w) => w.seq);
    const first = Math.min(...seqs);
    const held = await deps.events.read(key, first - 1, Math.max(...seqs) - first + 1);
    const keyAt = new Map(held.map((e) => [e.metadata.seq, eventKey(e)]));
    return written.every((w) => keyAt.get(w.seq) === w.eventKey);
  }, TOMBSTONE_OWNERS);
}
