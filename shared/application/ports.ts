import type { EventDraft, MemoryEvent, TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import type { InteractionDocument } from '../contracts/interactions.js';
import type { ChatTaskInput, ChatTaskName, ChatTaskOutput, ModelTier } from './model-tasks.js';
import type { InsightSearch, SearchIndex, SessionSummarySearch } from './search-ports.js';
import type { SessionDocument } from '../contracts/sessions.js';
import type { InsightDocument, InsightStatus, InsightType, ProfileDocument } from '../contracts/insights.js';
import type { Period } from '../domain/time-expressions.js';

export type { EventDraft };

export interface AppendOutcome {
  seq: number;
  /** For turns: the client's (or generated) turn id. */
  turnId?: string;
  /**
   * True when an event with this event key (a turn's turnId, a lifecycle event's key) was already recorded: the
   * original seq is returned and nothing is written. For a lifecycle event it means another writer decided first.
   */
  duplicate: boolean;
}

export interface EventStore {
  /**
   * Appends drafts atomically with gapless per-session seqs (next = last + 1). An event whose key (`eventKey`) is
   * already recorded for the session is not written again; its outcome carries the original seq. Once the session's
   * end request is recorded, turns are refused with `session_ended` (lifecycle events are still accepted).
   */
  append(key: SessionKey, drafts: readonly EventDraft[], recordedAt: Date): Promise<AppendOutcome[]>;
  /** Events with seq > afterSeq, ascending, at most `limit`. */
  read(key: SessionKey, afterSeq: number, limit?: number): Promise<MemoryEvent[]>;
  /**
   * The last `count` turn events of the session (before seq `beforeSeq` when given; of one thread when given: the
   * turns of `thread.agentId`, or with no agentId the turns that name none), ascending.
   */
  readLastTurns(key: SessionKey, count: number, beforeSeq?: number, thread?: { agentId?: string }): Promise<TurnAppended[]>;
  /** Seq of the session's last event; 0 for a session that has none. */
  lastSeq(key: SessionKey): Promise<number>;
  /** The sessions of a user that have events (all users' when `userId` is absent), for rebuilds. */
  sessions(userId?: string): Promise<SessionKey[]>;
}

/** The embedded backend's replacement for the Cosmos change feed: every event once, in commit order. */
export interface ChangeFeed {
  /** Events committed after `cursor` (null = from the start). Never skips an event that commits late. */
  readFeed(cursor: string | null, limit: number): Promise<{ events: MemoryEvent[]; cursor: string | null }>;
  loadCheckpoint(name: string): Promise<string | null>;
  saveCheckpoint(name: string, cursor: string): Promise<void>;
}

export interface Versioned<T> {
  doc: T;
  /** Opaque version (row version / etag) for optimistic concurrency. */
  version: string;
}

export interface SessionStore {
  get(key: SessionKey): Promise<Versioned<SessionDocument> | null>;
  /** Each session's `projectedThroughSeq` (0 without a document), in the order of `keys`: the feed's check, per batch. */
  projectedThrough(keys: readonly SessionKey[]): Promise<number[]>;
  /** Writes the document if its stored version still equals `expectedVersion` (null: must not exist yet); else throws `conflict`. */
  put(doc: SessionDocument, expectedVersion: string | null): Promise<string>;
}

/** The read models derived from session events (sessions, interactions, the turn index); events are never touched. */
export interface Projections {
  /** Deletes every session-derived read model of the user, so a rebuild starts from nothing. */
  dropUser(userId: string): Promise<void>;
}

export interface InteractionStore {
  /** Insert or replace by id (re-projection overwrites the same window). */
  upsert(docs: readonly InteractionDocument[]): Promise<void>;
  listBySession(key: SessionKey): Promise<InteractionDocument[]>;
}

export interface Embedder {
  /** Model id recorded with every vector so incompatible vectors are never compared. */
  readonly model: string;
  readonly dimensions: number;
  /** One vector per text, in order; batched by the adapter as its endpoint allows. */
  embed(texts: readonly string[]): Promise<number[][]>;
  /** Whether `embed` would answer `text` from memory, with no model call (an adapter that remembers texts it embedded). */
  remembers?(text: string): boolean;
  /** Loads and runs a model held in the process (the offline encoder) ahead of the first call, which would pay for it. */
  warmUp?(): Promise<void>;
}

/**
 * Category words of a text, matched with it as full text, so a question naming a category finds a turn naming an
 * instance of it ("which countries has she visited?" finds "we spent a week in Spain"). Data, not a model: the
 * offline adapter reads WordNet's hypernyms.
 */
export interface CategoryWords {
  /** Per text, in order, its category words (none for a text without a known noun). */
  categories(texts: readonly string[]): Promise<string[][]>;
}

/**
 * The period each turn's text refers to, resolved against the turn's own time (time-expressions.ts
 * `periodReferredTo`). A port because the date parser costs milliseconds of CPU a turn: the runtime runs it off the
 * request-serving thread (the model threads' `periods` op); tests and tools may run it in process.
 */
export interface PeriodReader {
  /** Per turn, in order, the period it refers to, or undefined. */
  referredPeriods(turns: readonly { text: string; at: string }[]): Promise<(Period | undefined)[]>;
}

/** A message of a tool-calling conversation (the retrieval agent). */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCallRequest[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface ToolCallRequest {
  id: string;
  name: string;
  /** Parsed JSON arguments; the caller validates them against the tool's schema. */
  arguments: unknown;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface ChatModel {
  readonly model: string;
  /** A structured task (see model-tasks.ts): the output is validated by the task's schema; an invalid output is an error, never a guess. */
  run<K extends ChatTaskName>(task: K, input: ChatTaskInput<K>): Promise<ChatTaskOutput<K>>;
  /** One turn of a tool-calling conversation: either tool calls to run, or a final answer. */
  converse(request: { operation: string; tier: ModelTier; messages: readonly ChatMessage[]; tools: readonly ToolDefinition[] }): Promise<{
    content: string | null;
    toolCalls: ToolCallRequest[];
  }>;
}

/** Usage of one model call, recorded per operation (task name, `embed`, or a conversation's operation). */
export interface ModelUsage {
  operation: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  latencyMs: number;
  ok: boolean;
}

export interface Meter {
  record(usage: ModelUsage): void;
}

export interface Clock {
  now(): Date;
}

export interface Ids {
  newId(): string;
}

export interface Logger {
  info(message: string, fields?: Record<string, string | number | boolean>): void;
  warn(message: string, fields?: Record<string, string | number | boolean>): void;
  error(message: string, fields?: Record<string, string | number | boolean>): void;
}

export interface MemoryConfig {
  kTurnBuffer: number;
  nActiveTurns: number;
  numRecentSessions: number;
  /** Facts returned by a search when the request does not say. */
  topKFacts: number;
}

/** Session insights and the single long-term profile per user (Cosmos container `insights`); `search` serves fact search. */
export interface InsightStore extends InsightSearch {
  /** Insert or replace by id: insight ids are derived from their source and content, so a repeated reflection rewrites. */
  upsert(docs: readonly InsightDocument[]): Promise<void>;
  /** The user's insights, oldest first, filtered. */
  list(userId: string, filter?: { type?: InsightType; status?: InsightStatus; sessionId?: string; category?: string }): Promise<InsightDocument[]>;
  getProfile(userId: string): Promise<ProfileDocument | null>;
  putProfile(doc: ProfileDocument): Promise<void>;
  /** Deletes the user's long-term profile (none: nothing to do). */
  deleteProfile(userId: string): Promise<void>;
  /** Deletes these insights of the user (never the profile); returns how many existed. Unknown ids are skipped, so a repeat is harmless. */
  purge(userId: string, ids: readonly string[]): Promise<number>;
}

export interface SessionSummaryRef {
  sessionId: string;
  endedAt: string;
  summary: string;
}

/** Queries across sessions (the session store reads one session by key); `searchSummaries` serves fact search. */
export interface SessionDirectory extends SessionSummarySearch {
  /** The user's ended sessions with a summary, newest first, ended strictly before `before` when given. */
  recentSummaries(userId: string, limit: number, options?: { before?: string; excludeSessionId?: string }): Promise<SessionSummaryRef[]>;
  /** Sessions still `active` whose last turn is older than `cutoff` (all users), at most `limit`. */
  idleSessions(cutoff: Date, limit: number): Promise<SessionKey[]>;
  /** The user's sessions with this reflection status (oldest first). */
  byReflectionStatus(userId: string, status: SessionDocument['reflectionStatus']): Promise<SessionKey[]>;
  /** Users whose sessions changed at or after `since`. */
  usersActiveSince(since: Date, limit: number): Promise<string[]>;
  /** How many events the projection has set aside (dead letters), across all users: for /health. */
  setAsideEvents(): Promise<number>;
}

/** Session-end and long-term reflection settings. */
export interface ReflectionConfig {
  categories: string[];
  /** Insights below this confidence are dropped. */
  confidenceThreshold: number;
  /** Cosine similarity above which two insights of one category are near-duplicates. */
  similarityThreshold: number;
  /** No-insight sessions that are reflected on together once this many have piled up. */
  minSessionsForAggregation: number;
}

export interface Stores {
  events: EventStore;
  sessions: SessionStore;
  interactions: InteractionStore;
  search: SearchIndex;
  insights: InsightStore;
  directory: SessionDirectory;
  projections: Projections;
  close(): Promise<void>;
}

export interface Deps extends Stores {
  chat: ChatModel;
  embedder: Embedder;
  /** Category words added to each turn's full text at projection; absent = none (CATEGORY_LEVELS=0). */
  categories?: CategoryWords;
  /** The periods turns refer to, indexed with them at projection. */
  periods: PeriodReader;
  clock: Clock;
  ids: Ids;
  memory: MemoryConfig;
}

/** Whether the service takes appends now (shared/platform/memory-budget.ts): `admit` throws `overloaded` while it sheds load. */
export interface Admission {
  admit(): void;
  /** Resolves once appends are taken; throws `overloaded` after `maxWaitMs` (a queue consumer then leaves the message queued). */
  whenAdmitted(maxWaitMs: number): Promise<void>;
}
