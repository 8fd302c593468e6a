import { isClientEvent, isTurn, MemoryEvent, SCHEMA_VERSION, type EventDraft, type InteractionSummarised, type SessionSummarised, type TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { InteractionDocument } from '../contracts/interactions.js';
import type { SessionDocument } from '../contracts/sessions.js';
import { interactionId, type TurnWindow } from '../domain/chunking.js';
import { conflict, MemoryError } from '../domain/errors.js';
import { meanDirection } from '../domain/ranking.js';
import { decideInit, decideInteraction, decideSetAside, foldSession, needsInit, newSession, sessionOf, threadOf, threadSummary, windowsToSummarise, withBookmark, withDecidedAhead } from '../domain/session.js';
import { mayReferToAnotherDay, periodWords, type Period } from '../domain/time-expressions.js';
import { renderToolCalls, renderTranscript } from '../domain/turns.js';
import type { RecentSession } from '../contracts/context.js';
import type { ForgetScope, ForgetStore } from './forget-ports.js';
import type { Deps, EventStore, SessionStore, Versioned } from './ports.js';
import { currentInit } from './session-init.js';

/**
 * What applying events needs: the stores it writes, the embedder and the period reader; never a chat model. `forgets`,
 * when present, lets a projector that a forget overtook forget what it wrote after the purge, and erase a forgotten
 * session its init block cites (`eraseForgottenCitations`).
 */
export type ApplyDeps = Pick<Deps, 'events' | 'sessions' | 'interactions' | 'search' | 'embedder' | 'categories' | 'periods'> & { forgets?: ForgetStore };
export type ProjectionDeps = ApplyDeps & Pick<Deps, 'chat' | 'clock' | 'memory' | 'insights' | 'directory'>;

export interface ProjectionResult {
  projectedThroughSeq: number;
  chunkedThroughSeq: number;
  interactionsWritten: number;
  /** Events remain past `projectedThroughSeq` (a slice stopped short of the stream's end, or decisions were recorded after it), or windows to decide (`deferWindows`). */
  pending: boolean;
}

/** Attempts to write the session document while other projectors of the same session keep writing it first. */
const MAX_WRITE_ATTEMPTS = 10;
/**
 * How many earlier turns of the session a turn's full text is matched with. On LoCoMo two beat one (R@10 +0.02 in
 * the in-memory study behind README's Fact search figures) and three gave nothing more.
 */
const MATCH_CONTEXT_TURNS = 2;

/** What reading a session's state needs: its document and the events after it. */
export type LoadDeps = { events: Pick<EventStore, 'read'>; sessions: Pick<SessionStore, 'get'> };

export interface Loaded {
  stored: Versioned<SessionDocument> | null;
  /** The stored document: the fold up to its checkpoint. */
  before: SessionDocument;
  /** The document after folding the events read past the checkpoint. */
  session: SessionDocument;
  /** The events read: every one after the chunking checkpoint, so the windows still to summarise are among them. */
  events: MemoryEvent[];
  /** A bounded load stopped before the stream's end: more events follow `events`. */
  more: boolean;
}

/**
 * Reads the stored session document and folds the events recorded after it (in memory: nothing is written): all of
 * them, or with `limit` at most that many past the projection's checkpoint (a slice). A document projected before
 * threads existed is folded again from the start of its stream (its rows are rewritten by id, so nothing doubles).
 */
export async function load(deps: LoadDeps, key: SessionKey, limit?: number): Promise<Loaded> {
  const stored = await deps.sessions.get(key);
  const before = stored && !(stored.doc.threads === undefined && stored.doc.turnCount > 0) ? stored.doc : newSession(key, new Date(0));
  // From the chunking checkpoint (the decided one: windows recorded ahead count), so undecided turns are read too.
  const from = Math.min(before.projectedThroughSeq, withDecidedAhead(before).chunkedThroughSeq);
  if (limit === undefined) {
    const events = await deps.events.read(key, from);
    return { stored, before, session: foldSession(before, events), events, more: false };
  }
  // Seqs are gapless: `span` events reach `limit` past the checkpoint, and one more says whether the stream goes on.
  const span = before.projectedThroughSeq - from + limit;
  const read = await deps.events.read(key, from, span + 1);
  const events = read.slice(0, span);
  return { stored, before, session: foldSession(before, events), events, more: read.length > span };
}

/**
 * The largest slice a projection without a bound of its own works in (session end's final projection, rebuild): each
 * slice is written as one unit (its rows with one embedding batch, then the session document), so a crash or restart
 * loses at most the slice in flight and one embedding batch stays bounded however long a backlog is.
 */
export const WRITE_UNIT_EVENTS = 512;

/**
 * Writes what a slice's events change: an interaction per `InteractionSummarised`, a turn-index row per turn, the
 * session summary's vector, and last the session document (the fold by `evolve`, with the bookmark of `decided`), with
 * its version as the condition. A crash or a concurrent projector leaves the checkpoint at the last slice written, and
 * the repeat rewrites the same rows by id. Returns the interactions written and the document, or null when another
 * projector wrote first.
 */
async function write(deps: ApplyDeps, key: SessionKey, { stored, before, session, events }: Loaded, decided: readonly MemoryEvent[], windowsDue = 0): Promise<{ interactions: number; doc: SessionDocument } | null> {
  // The fold carries the stored count along: each write says its own.
  const bookmarked: SessionDocument = { ...withBookmark(session, decided), windowsDue };
  if (windowsDue === 0) delete bookmarked.windowsDue;
  const unchanged = session.projectedThroughSeq === before.projectedThroughSeq && JSON.stringify(bookmarked.decidedAhead) === JSON.stringify(before.decidedAhead) && bookmarked.windowsDue === before.windowsDue;
  if (unchanged) return { interactions: 0, doc: bookmarked };
  const fresh = live(bookmarked, events.filter((e) => e.metadata.seq > before.projectedThroughSeq));
  const interactions = fresh.filter((e): e is InteractionSummarised => e.type === 'InteractionSummarised' && e.data.fromSeq > before.chunkedThroughSeq);
  const summary = fresh.find((e): e is SessionSummarised => e.type === 'SessionSummarised' && before.summary === undefined);
  const turns = await turnsOfWindows(deps, key, interactions, events);
  const { summaryVector } = await writeDerived(deps, key, turns, fresh.filter(isTurn), interactions, summary);
  const doc = summaryVector ? { ...bookmarked, summaryVector, embeddingModel: deps.embedder.model } : bookmarked;
  try {
    await deps.sessions.put(doc, stored?.version ?? null);
  } catch (error) {
    if (error instanceof MemoryError && error.code === 'conflict') return null;
    throw error;
  }
  // The write that first folds the init block checks what it cites (after the write: see eraseForgottenCitations).
  if (!before.init && doc.init) await eraseForgottenCitations(deps, key, doc.init.recentSessions);
  return { interactions: interactions.length, doc };
}

/**
 * The init block's race with a session forget. The decider reads the recent sessions' summaries (`currentInit`), then
 * appends `SessionInitFixed`; a forget of a cited session A that purges A, erases A from the init blocks it finds
 * (`redactInit`, refold) and scans them, all between that read and the append, would leave A's summary in this
 * session's event and document, and once its tombstone is cleared nothing remembers A was forgotten.
 *
 * So the write that first folds the block into the document (W, after the append) then reads each cited session's
 * document (C). An entry whose session still holds the same summary (a summary and its end are fixed once per
 * session, so only a forget changes them) was not forgotten before C; A's purge then comes after C, and the forget's
 * erasure and scan after it, so they find the event and the document (both written before C) and erase them; a
 * projector that folded the event from an older read writes with a document version the refold has moved, so it
 * conflicts and folds the erased stream again. An entry whose session is gone, or holds another summary (forgotten,
 * then written again), is erased here the way forget erases it: every init block that names it, documents refolded.
 * Either way the text does not survive, on PostgreSQL and Cosmos DB alike (it needs only that C sees writes
 * acknowledged before it). Left: a projector that dies, or whose check fails, between W and C, after the forget's
 * scan; a new DELETE of A erases it. Cost: one point read per cited session (at most NUM_RECENT_SESSIONS), once per
 * session.
 */
async function eraseForgottenCitations(deps: ApplyDeps, key: SessionKey, cited: readonly RecentSession[]): Promise<void> {
  const forgets = deps.forgets;
  if (!forgets || cited.length === 0) return;
  const current = await Promise.all(cited.map(({ sessionId }) => deps.sessions.get({ userId: key.userId, sessionId })));
  for (const [i, entry] of cited.entries()) {
    const doc = current[i]?.doc;
    if (doc?.summary !== entry.summary || doc.endedAt !== entry.endedAt) await eraseFromInitBlocks({ ...deps, forgets }, { userId: key.userId, sessionId: entry.sessionId });
  }
}

/**
 * Erases a forgotten session from the init blocks of the user's other sessions: their `SessionInitFixed` events are
 * rewritten without its entry (`redactInit`) and their documents folded again. The forget's store step and a projector
 * whose init block cites a forgotten session both erase it this way. Returns the events and documents rewritten.
 */
export async function eraseFromInitBlocks(deps: Pick<Deps, 'events' | 'sessions'> & { forgets: ForgetStore }, scope: Required<ForgetScope>): Promise<{ events: number; documents: number }> {
  const redacted = await deps.forgets.redactInit(scope);
  let documents = 0;
  for (const sessionId of redacted.sessionIds) if (await refoldSession(deps, { userId: scope.userId, sessionId })) documents++;
  return { events: redacted.events, documents };
}

/** Windows this close together are read with one query (the seqs between are a few other threads' turns). */
const WINDOW_READ_GAP = 64;

/**
 * The turns of the windows `summarised` describes: those among `events`, and those before them read by seq range (a
 * backlog's decisions are recorded at the stream's end, long after their turns were folded).
 */
async function turnsOfWindows(deps: ApplyDeps, key: SessionKey, summarised: readonly InteractionSummarised[], events: readonly MemoryEvent[]): Promise<TurnAppended[]> {
  const first = events[0]?.metadata.seq ?? Number.POSITIVE_INFINITY;
  const ranges: [number, number][] = [];
  for (const { data } of [...summarised].sort((a, b) => a.data.fromSeq - b.data.fromSeq)) {
    if (data.fromSeq >= first) continue;
    const to = Math.min(data.toSeq, first - 1);
    const last = ranges.at(-1);
    if (last && data.fromSeq <= last[1] + WINDOW_READ_GAP) last[1] = Math.max(last[1], to);
    else ranges.push([data.fromSeq, to]);
  }
  const earlier = await Promise.all(ranges.map(([from, to]) => deps.events.read(key, from - 1, to - from + 1)));
  return [...earlier.flat(), ...events].filter(isTurn);
}

/** The events whose rows are written: all but those set aside (folded, or recorded and not folded yet). */
function live(session: SessionDocument, events: readonly MemoryEvent[]): MemoryEvent[] {
  const setAside = new Set([...(session.setAside?.map((s) => s.seq) ?? []), ...(session.decidedAhead?.setAside ?? [])]);
  return setAside.size === 0 ? [...events] : events.filter((e) => !setAside.has(e.metadata.seq));
}

/**
 * Applies the events recorded since the projection's checkpoint to the read models, a slice of WRITE_UNIT_EVENTS at a
 * time. It decides nothing and calls no chat model, so a rebuild is this over the whole stream.
 */
export async function applyEvents(deps: ApplyDeps, key: SessionKey): Promise<{ session: SessionDocument | null; interactionsWritten: number }> {
  let interactionsWritten = 0;
  for (let conflicts = 0; ; ) {
    const loaded = await load(deps, key, WRITE_UNIT_EVENTS);
    const written = await write(deps, key, loaded, []);
    if (written === null) {
      // Another projector wrote first: fold again from what it wrote.
      if (++conflicts >= MAX_WRITE_ATTEMPTS) throw conflict(`Session ${key.sessionId} is being projected concurrently`);
      continue;
    }
    interactionsWritten += written.interactions;
    if (!loaded.more) return { session: loaded.stored || loaded.events.length > 0 ? written.doc : null, interactionsWritten };
  }
}

/**
 * Folds one session's document again from its stream, up to the document's checkpoint, after an event of the stream
 * was rewritten in place (forget's erasure of a forgotten session from `SessionInitFixed`): `evolve` fixes `init` once,
 * so only a fold from the start drops the erased entry. The rows derived from the events (interactions, turn index,
 * the summary's vector) do not depend on the init block and are kept; events past the checkpoint are left to the
 * projector. False when the session has no document (its first projection folds the rewritten stream).
 */
export async function refoldSession(deps: Pick<Deps, 'events' | 'sessions'>, key: SessionKey): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const stored = await deps.sessions.get(key);
    if (!stored) return false;
    const { projectedThroughSeq, summaryVector, embeddingModel } = stored.doc;
    const events = (await deps.events.read(key, 0)).filter((e) => e.metadata.seq <= projectedThroughSeq);
    const session = { ...sessionOf(key, events), ...(summaryVector && { summaryVector }), ...(embeddingModel !== undefined && { embeddingModel }) };
    try {
      await deps.sessions.put(session, stored.version);
      return true;
    } catch (error) {
      if (!(error instanceof MemoryError && error.code === 'conflict')) throw error;
      // Another projector wrote first: fold again from what is stored now.
      if (attempt >= MAX_WRITE_ATTEMPTS) throw conflict(`Session ${key.sessionId} is being projected concurrently`);
    }
  }
}

/** Interactions, turn-index rows and the summary vector, with one embedding batch. */
async function writeDerived(
  deps: ApplyDeps,
  key: SessionKey,
  turns: readonly TurnAppended[],
  newTurns: readonly TurnAppended[],
  summarised: readonly InteractionSummarised[],
  summary: SessionSummarised | undefined,
): Promise<{ summaryVector?: number[] }> {
  const drafts = summarised.map((e) => interactionDraft(key, e, turns.filter((t) => inWindow(e, t)), deps.embedder.model));
  const turnTexts = newTurns.map(searchableText);
  // Full text matches a turn together with the turns it answers: replies ("yes, last Saturday") rarely repeat the
  // question's words. The vector embeds the turn alone (on LoCoMo, context made the offline encoder's vectors worse).
  // A turn's referred period is matched as the words a question would name it with ("8 May", "last month" as "April"),
  // and its category words ("Spain" as "european country country"): questions name the category, turns the instance.
  // The periods are parsed off this thread (PeriodReader) while the statement and the category words go on.
  const [earlier, referred, categories] = await Promise.all([
    newTurns.length > 0 ? deps.events.readLastTurns(key, MATCH_CONTEXT_TURNS, newTurns[0]!.metadata.seq) : [],
    referredPeriods(deps, newTurns),
    deps.categories ? deps.categories.categories(turnTexts) : [],
  ]);
  const context = [...earlier.map(searchableText), ...turnTexts];
  const matchTexts = turnTexts.map((_, i) => {
    const at = earlier.length + i;
    return context.slice(Math.max(0, at - MATCH_CONTEXT_TURNS), at + 1).join('\n');
  });
  // A window's content vector is the mean direction of its turns' vectors, each embedded as its turn row is: on LoCoMo
  // the same recall as embedding the window's transcript, for a quarter less CPU in the offline projection (README,
  // Fact search). A turn written by an earlier slice has its vector in the turn index: read back unless the embedder
  // still remembers its text, as with thousands of turns written before their windows it does not (README, Scale).
  const windowTurns = summarised.map((e) => turns.filter((t) => inWindow(e, t)));
  const written = new Set(newTurns.map((t) => t.metadata.seq));
  const toRead = windowTurns.flat().filter((t) => !written.has(t.metadata.seq) && !deps.embedder.remembers?.(searchableText(t)));
  const stored = toRead.length > 0 ? await deps.search.turnVectors(key, toRead.map((t) => t.metadata.seq), deps.embedder.model) : new Map<number, Float32Array>();
  const windowTexts = windowTurns.flat().flatMap((t) => (stored.has(t.metadata.seq) ? [] : [searchableText(t)]));
  const texts = [...drafts.map((d) => d.summary), ...turnTexts, ...windowTexts, ...(summary ? [summary.data.summary] : [])];
  if (texts.length === 0) return {};

  const embedded = await deps.embedder.embed(texts);
  const vectorOf = new Map(texts.map((text, i) => [text, embedded[i]!]));
  const vector = (text: string) => vectorOf.get(text)!;
  const turnVector = (t: TurnAppended) => stored.get(t.metadata.seq) ?? vector(searchableText(t));
  await deps.interactions.upsert(drafts.map((d, i) => ({ ...d, contentVector: meanDirection(windowTurns[i]!.map(turnVector)), summaryVector: vector(d.summary) })));
  await deps.search.indexTurns(
    newTurns.map((t, i) => ({
      ...key,
      seq: t.metadata.seq,
      turnId: t.data.turnId,
      ...(t.data.agentId && { agentId: t.data.agentId }),
      speaker: speakerOf(t),
      text: turnTexts[i]!,
      matchText: [matchTexts[i]!, ...(referred[i] ? [periodWords(referred[i])] : []), ...(categories[i]?.length ? [categories[i].join(' ')] : [])].join('\n'),
      timestamp: t.data.timestamp,
      ...(referred[i] && { refers: referred[i] }),
      embeddingModel: deps.embedder.model,
      vector: vector(turnTexts[i]!),
    })),
  );
  return summary ? { summaryVector: vector(summary.data.summary) } : {};
}

/** A window's turns: its thread's turns in its seq range (every turn in it, for a window recorded before threads). */
const inWindow = ({ data }: InteractionSummarised, t: TurnAppended): boolean =>
  t.metadata.seq >= data.fromSeq && t.metadata.seq <= data.toSeq && (data.agentId === undefined || threadOf(t) === (data.agentId ?? undefined));

/** The interaction an `InteractionSummarised` event describes, from its turns; the one place an interaction is built. */
function interactionDraft(key: SessionKey, event: InteractionSummarised, turns: readonly TurnAppended[], embeddingModel: string): Omit<InteractionDocument, 'contentVector' | 'summaryVector'> {
  const { fromSeq, toSeq, summary, topics, entities } = event.data;
  return {
    schemaVersion: event.metadata.schemaVersion,
    id: interactionId(key.sessionId, fromSeq),
    userId: key.userId,
    sessionId: key.sessionId,
    agentIds: [...new Set(turns.flatMap((t) => (t.data.agentId ? [t.data.agentId] : [])))],
    turnIds: turns.map((t) => t.data.turnId),
    seqRange: [fromSeq, toSeq],
    startedAt: turns[0]!.data.timestamp,
    endedAt: turns.at(-1)!.data.timestamp,
    content: renderTranscript(turns),
    summary,
    topics,
    entities,
    embeddingModel,
    createdAt: event.metadata.recordedAt,
  };
}

/** How much of a session one projection works on: the whole backlog (the default), or one slice of `sliceEvents`. */
export interface ProjectionOptions {
  /** The session ended: the trailing partial window of each thread is summarised too (once the stream's end is reached). */
  final?: boolean;
  /** The last attempt: an event whose rows the store refuses is set aside, and projection goes on. */
  isolate?: boolean;
  /** At most this many events past the checkpoint are projected (one slice), and `pending` says whether more remain. */
  sliceEvents?: number;
  /**
   * A slice at the stream's end whose turns complete a window writes the turns and returns, `pending`, leaving the
   * window's model call and embeddings to a later slice (the change feed's at-once serving: the feed moves on).
   */
  deferWindows?: boolean;
}

/**
 * Brings one session's projection up to date (or one slice of it further) and makes the decisions its new turns call
 * for: every full window of k turns is summarised by the chat model and recorded as an `InteractionSummarised` event
 * (with `final`, once the session ended, the trailing partial window too), and the init block is fixed once the
 * session has a turn. Each decision is appended as an event and then applied like any other. Two projectors that
 * decide the same thing meet at the event store (the event's key is recorded once): the later one applies the earlier
 * one's decision and goes on. A slice decides only the windows inside it, so one slice's model calls stay bounded
 * however long the backlog; without `sliceEvents` the backlog is projected slice after slice (WRITE_UNIT_EVENTS).
 */
export async function projectSession(deps: ProjectionDeps, key: SessionKey, options: ProjectionOptions = {}): Promise<ProjectionResult> {
  const limit = options.sliceEvents ?? WRITE_UNIT_EVENTS;
  let interactionsWritten = 0;
  for (;;) {
    const result = await projectSliceOrSetAside(deps, key, options, limit, []);
    interactionsWritten += result.interactionsWritten;
    if (options.sliceEvents !== undefined || options.deferWindows || !result.pending) return { ...result, interactionsWritten };
  }
}

async function projectSliceOrSetAside(deps: ProjectionDeps, key: SessionKey, options: ProjectionOptions, limit: number, setAside: readonly MemoryEvent[]): Promise<ProjectionResult> {
  try {
    return await projectSlice(deps, key, options, limit, setAside);
  } catch (error) {
    // The last attempt of a failing slice: an event whose rows the store refuses is set aside, and projection goes on.
    if (!options.isolate || (error instanceof MemoryError && error.code === 'conflict')) throw error;
    const recorded = await setAsideFailingEvent(deps, key, limit, setAside);
    if (!recorded) throw error;
    return projectSliceOrSetAside(deps, key, options, limit, [...setAside, ...recorded]);
  }
}

/**
 * One slice: load, decide (decisions are recorded at the stream's end), write. `setAside`: set-asides recorded for it
 * already. A slice at the stream's end whose turns complete a window writes them first (rows and document), so a new
 * turn is searchable and projected without waiting for its window's model call and embeddings; the window is then
 * decided and written (or, with `deferWindows`, left to a later slice: the result is pending).
 */
async function projectSlice(deps: ProjectionDeps, key: SessionKey, options: ProjectionOptions, limit: number, setAside: readonly MemoryEvent[]): Promise<ProjectionResult> {
  let origin: MemoryEvent | undefined;
  const decided: MemoryEvent[] = [...setAside];
  let interactionsWritten = 0;
  let turnsFirst = false;
  for (let attempt = 1; ; attempt++) {
    const loaded = await load(deps, key, limit);
    if (loaded.events.length === 0 && !loaded.stored) return { projectedThroughSeq: 0, chunkedThroughSeq: 0, interactionsWritten: 0, pending: false };
    origin ??= loaded.events.at(-1);
    const final = (options.final ?? false) && !loaded.more;
    const { projectedThroughSeq, chunkedThroughSeq } = loaded.session;
    const due = !turnsFirst && !loaded.more ? windowsDue(deps, loaded.session, loaded.events, final, decided).length : 0;
    if (due > 0) {
      // The turns first: what they change is written before their windows are decided (and counted as pending).
      const early = await write(deps, key, loaded, decided, due);
      if (early === null) {
        if (attempt >= MAX_WRITE_ATTEMPTS) throw conflict(`Session ${key.sessionId} is being projected concurrently`);
        continue;
      }
      turnsFirst = true;
      interactionsWritten += early.interactions;
      if (options.deferWindows) {
        if (projectedThroughSeq !== loaded.before.projectedThroughSeq) await forgetIfOvertaken(deps, key, origin);
        return { projectedThroughSeq, chunkedThroughSeq, interactionsWritten, pending: true };
      }
      // The document just written is this fold: deciding from it, then reading the decisions back, needs no new load.
    }
    // Decisions first, so a document written at the stream's end has nothing left to decide (`pending: 0` means
    // summarised too). They are recorded at the stream's end: a slice that reached it is read again to fold them.
    if ((await decide(deps, key, loaded.session, loaded.events, final, decided)) && !loaded.more) {
      // A forget that ran while the model was called left the decisions as the start of a new stream: forget them.
      if (await forgetIfOvertaken(deps, key, origin)) return { projectedThroughSeq: 0, chunkedThroughSeq: 0, interactionsWritten, pending: false };
      continue;
    }
    const written = await write(deps, key, loaded, decided);
    if (written !== null) {
      if (decided.length > 0 || projectedThroughSeq !== loaded.before.projectedThroughSeq) await forgetIfOvertaken(deps, key, origin);
      return { projectedThroughSeq, chunkedThroughSeq, interactionsWritten: interactionsWritten + written.interactions, pending: loaded.more };
    }
    if (attempt >= MAX_WRITE_ATTEMPTS) throw conflict(`Session ${key.sessionId} is being projected concurrently`);
  }
}

const sameEvent = (a: MemoryEvent, b: MemoryEvent) => a.metadata.seq === b.metadata.seq && a.metadata.recordedAt === b.metadata.recordedAt;

/**
 * A forget of the session that ran to its end while this projector held the session's events (between its load and
 * its last write: a slow embedding or model call) could not purge what the projector wrote after it: rows of a stream
 * that is gone, and decisions recorded as the start of a new stream. The stream no longer holds the event the projector
 * started from, so it forgets what it wrote, the same way (a tombstone, the purge, its summary erased from other
 * sessions' init blocks, the tombstone cleared). A forget still in progress purges them itself: the projector enlists
 * with its tombstone (`ForgetStore.enlist`), so one whose last scan came before the writes does not clear it but
 * purges and scans again. A stream that holds a client's event (`isClientEvent`) recorded since the forget is left
 * alone, and its purge keeps the memories and slots a client wrote in the session since, so nothing acknowledged is
 * lost; one of decisions alone is purged, another overtaken projector's too (it enlisted with this tombstone, or
 * finds none and forgets the stream itself). True when a forget overtook the projector.
 */
async function forgetIfOvertaken(deps: ProjectionDeps, key: SessionKey, origin: MemoryEvent | undefined): Promise<boolean> {
  const forgets = deps.forgets;
  if (!forgets || !origin) return false;
  const [held] = await deps.events.read(key, origin.metadata.seq - 1, 1);
  if (held && sameEvent(held, origin)) return false;
  const scope = { userId: key.userId, sessionId: key.sessionId };
  // A forget in progress purges what was written (enlisted); else this projector records the projectors' tombstone (one
  // another projector recorded in between is enlisted with on the next look). A forget's recorded in between is
  // another tombstone, never cleared here.
  for (let attempt = 1; ; attempt++) {
    if (await forgets.enlist(key)) return true;
    if (await forgets.markForgetting(scope, 'projector', deps.clock.now())) break;
    if (attempt >= MAX_WRITE_ATTEMPTS) throw conflict(`Session ${key.sessionId} is being forgotten concurrently`);
  }
  let cleared = false;
  try {
    // Cleared as purged: another projector that enlisted with this tombstone since may have written after the purge.
    while (!cleared) {
      const version = await forgets.tombstoneVersion(scope, 'projector');
      // Decisions alone (this projector's, or another overtaken one's) derive from the stream that is gone.
      if (!(await deps.events.read(key, 0)).some(isClientEvent)) {
        // Not a client's memories and slots of the session: written after the forget, they are acknowledged.
        await forgets.purge(scope, { keepClientItems: true });
        // The summary this projector wrote may have been cited meanwhile by another session's init block.
        await eraseFromInitBlocks({ ...deps, forgets }, scope);
      }
      cleared = await forgets.clearForgetting(scope, 'projector', version ?? undefined);
    }
  } finally {
    // A failure midway: the session's writes are not refused for good (a DELETE removes what is left).
    if (!cleared) await forgets.clearForgetting(scope, 'projector');
  }
  return true;
}

/**
 * Writes the rows of each new event of the slice alone, in order; the first one the store refuses is set aside
 * (`EventSetAside`, with the error's class and code), and the recorded event returned. Null when every event's rows
 * were written: the failure lies elsewhere (a model, the session document) and no event is to blame.
 */
async function setAsideFailingEvent(deps: ProjectionDeps, key: SessionKey, limit: number, setAside: readonly MemoryEvent[]): Promise<MemoryEvent[] | null> {
  const { before, session, events } = await load(deps, key, limit);
  const bookmarked = withBookmark(session, setAside);
  for (const event of live(bookmarked, events.filter((e) => e.metadata.seq > before.projectedThroughSeq))) {
    const window = event.type === 'InteractionSummarised' ? [event] : [];
    try {
      await writeDerived(deps, key, await turnsOfWindows(deps, key, window, events), event.type === 'TurnAppended' ? [event] : [], window, undefined);
    } catch (error) {
      const reason = errorLabel(error).slice(0, 200);
      return record(deps, key, decideSetAside(bookmarked, event.metadata.seq, reason));
    }
  }
  return null;
}

/** The windows of the loaded slice still to summarise: past each thread's decided checkpoint (`recorded` included). */
function windowsDue(deps: Pick<ProjectionDeps, 'memory'>, session: SessionDocument, events: readonly MemoryEvent[], final: boolean, recorded: readonly MemoryEvent[]): TurnWindow[] {
  const turns = events.filter(isTurn).filter((t) => t.metadata.seq <= session.projectedThroughSeq);
  return windowsToSummarise(withDecidedAhead(withBookmark(session, recorded)), turns, deps.memory.kTurnBuffer, final);
}

/**
 * Appends the decisions the loaded slice calls for and adds them, as recorded, to `recorded` (which also holds the
 * decisions of earlier attempts: the deciders see them through the bookmark). True when it recorded any.
 */
async function decide(deps: ProjectionDeps, key: SessionKey, session: SessionDocument, events: readonly MemoryEvent[], final: boolean, recorded: MemoryEvent[]): Promise<boolean> {
  const before = recorded.length;
  const view = () => withDecidedAhead(withBookmark(session, recorded));
  for (const window of windowsDue(deps, session, events, final, recorded)) {
    const state = view();
    const metadata = await deps.chat.run('windowMetadata', { conversation: renderTranscript(window.turns), previousSummary: threadSummary(state, window) });
    recorded.push(...(await record(deps, key, decideInteraction(state, window, metadata, deps.chat.model))));
  }
  const state = withBookmark(session, recorded);
  if (needsInit(state) && !state.decidedAhead?.init) {
    const init = await currentInit(deps, key, session.startedAt);
    recorded.push(...(await record(deps, key, decideInit(state, init.profile, init.recentSessions))));
  }
  return recorded.length > before;
}

/**
 * Appends decided events and returns them as recorded: a decision another writer recorded first (its key) is read
 * back, so the later projector applies the earlier one's decision and goes on.
 */
async function record(deps: Pick<Deps, 'events' | 'clock'>, key: SessionKey, drafts: readonly EventDraft[]): Promise<MemoryEvent[]> {
  if (drafts.length === 0) return [];
  const recordedAt = deps.clock.now();
  const outcomes = await deps.events.append(key, drafts, recordedAt);
  return Promise.all(
    drafts.map(async (draft, i) => {
      const { seq, duplicate } = outcomes[i]!;
      if (!duplicate) return MemoryEvent.parse({ ...draft, metadata: { schemaVersion: SCHEMA_VERSION, ...key, seq, recordedAt: recordedAt.toISOString() } });
      const [first] = await deps.events.read(key, seq - 1, 1);
      if (!first) throw conflict(`Session ${key.sessionId} changed while it was projected`);
      return first;
    }),
  );
}

/** Appends decided events; returns them as recorded, or null when another writer had recorded one of them first. */
export async function append(deps: Pick<Deps, 'events' | 'clock'>, key: SessionKey, drafts: readonly EventDraft[]): Promise<MemoryEvent[] | null> {
  if (drafts.length === 0) return [];
  const recordedAt = deps.clock.now();
  const outcomes = await deps.events.append(key, drafts, recordedAt);
  if (outcomes.some((o) => o.duplicate)) return null;
  return drafts.map((d, i) => MemoryEvent.parse({ ...d, metadata: { schemaVersion: SCHEMA_VERSION, ...key, seq: outcomes[i]!.seq, recordedAt: recordedAt.toISOString() } }));
}

/** The sessions a batch of change-feed events touches, each once, in first-seen order. */
export function touchedSessions(events: readonly MemoryEvent[]): SessionKey[] {
  const seen = new Map<string, SessionKey>();
  for (const e of events) seen.set(JSON.stringify([e.metadata.userId, e.metadata.sessionId]), { userId: e.metadata.userId, sessionId: e.metadata.sessionId });
  return [...seen.values()];
}

/** An error as its class and code ("MemoryError conflict"): what logs and set-aside events may say of it, never its message. */
export function errorLabel(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return `${error instanceof Error ? error.name : 'Error'}${typeof code === 'string' || typeof code === 'number' ? ` ${code}` : ''}`;
}

const speakerOf = (t: TurnAppended): string => t.data.name ?? t.data.role;

/**
 * The period each turn's own words refer to ("last week"), resolved against its own time, never the clock. Only the
 * turns that may refer to another day are asked (most do not: 88% of LoCoMo's), and a slice with none makes no round
 * trip.
 */
async function referredPeriods(deps: Pick<ApplyDeps, 'periods'>, turns: readonly TurnAppended[]): Promise<(Period | undefined)[]> {
  const asked = turns.filter((t) => mayReferToAnotherDay(t.data.content));
  if (asked.length === 0) return turns.map(() => undefined);
  const answers = await deps.periods.referredPeriods(asked.map((t) => ({ text: t.data.content, at: t.data.timestamp })));
  const byTurn = new Map(asked.map((t, i) => [t, answers[i]]));
  return turns.map((t) => byTurn.get(t));
}

/** What search matches for a turn: the speaker and what was said (a turn of only tool calls: the calls). */
const searchableText = (t: TurnAppended): string => `${speakerOf(t)}: ${t.data.content || renderToolCalls(t.data.toolCalls ?? [])}`;
