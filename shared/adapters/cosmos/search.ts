import { createHash } from 'node:crypto';
import type { Container, SqlParameter, SqlQuerySpec } from '@azure/cosmos';
import { z } from 'zod';
import type { Retriever } from '../../contracts/facts.js';
import { SCHEMA_VERSION } from '../../contracts/events.js';
import type { IndexedTurn, SearchIndex, SearchQuery, TurnHit, WindowHit } from '../../application/search-ports.js';
import type { InteractionDocument } from '../../contracts/interactions.js';
import { padSeq } from '../../domain/chunking.js';
import { asksQuestion } from '../../domain/fact-ranking.js';
import { MemoryError } from '../../domain/errors.js';
import { float32Vector } from './vectors.js';
import { statusOf } from './containers.js';

/**
 * Search over the `interactions` container (see `COSMOS_CONTAINERS.interactions`), which holds two kinds of document:
 *
 * - interactions, written by `CosmosInteractionStore`, with no `kind` property;
 * - one searchable document per turn (`kind: 'turn'`), written by `indexTurns`. Its text is stored in `content` and its
 *   embedding in `contentVector`, so the container's existing full-text path `/content` and vector path
 *   `/contentVector` (cosine, DiskANN) cover turns and interactions alike;
 * - each interaction's two vectors, one small document each (`kind: 'interactionVector'`, `interactionVectorDocuments`),
 *   beside the interaction written without them: a ranked list loads its documents whole, whatever it projects, so
 *   the BM25 list of interactions loads no vector and each vector list loads one vector, not two. Their hits carry
 *   what ranking needs; `show` reads what a fact shows for the facts returned only. (An interaction written before
 *   the split, its vectors inside, still ranks by vector until a rebuild rewrites it.)
 * - speaker markers (`kind: 'speaker'`, `speakerDocument`).
 *
 * Every query stays in the user's logical partition (`partitionKey` option plus `c.userId = @userId`). The scoring
 * functions (`VectorDistance`, `FullTextScore`, `RRF`) only run on real Cosmos DB, not on the wire fake used in tests,
 * so the SQL is produced by the pure builders below and unit-tested as text.
 *
 * Syntax notes (Cosmos DB for NoSQL query reference, 2025):
 * - `FullTextScore(path, term1, term2, ...)` and `FullTextContainsAny(path, term1, ...)` take the terms as separate
 *   string arguments (the older array form `FullTextScore(path, ['a', 'b'])` was retired in 2025). Each argument may
 *   be a query parameter; an array parameter cannot stand for the list, hence one parameter per term (`@t0`, `@t1`…).
 * - `FullTextScore` is only allowed in `ORDER BY RANK` or as an argument of `RRF`, never in the projection.
 * - A query ordered by `RANK` is distributed by a query plan that needs its row count as a number literal (parameters
 *   for `OFFSET`/`LIMIT` are rejected there), so ranked queries inline `TOP <n>` after checking that n is a positive
 *   integer. Plain vector queries (`ORDER BY VectorDistance(...)`, no `RANK`) keep `TOP @limit`.
 */

/** The container path of the turn / interaction text covered by the full-text policy. */
const TEXT_PATH = 'c.content';

/** Search terms sent per query: enough for a question, few enough to keep the BM25 query cheap. */
export const MAX_SEARCH_TERMS = 12;

/** Concurrent upserts per `indexTurns` call. */
export const INDEX_CONCURRENCY = 8;

/** English function words that carry no retrieval signal (Cosmos's analyzer drops stop words too; this keeps the term list short). */
const STOPWORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing dont down during each few for from further had has have having he her here hers herself ' +
    'him himself his how i if in into is it its itself just me more most my myself no nor not now of off on once only or ' +
    'other our ours ourselves out over own same she should so some such than that the their theirs them themselves then ' +
    'there these they this those through to too under until up very was we were what when where which while who whom why ' +
    'will with would you your yours yourself yourselves also ever get got im ive id youre thats'
  ).split(' '),
);

/**
 * The query text as full-text search terms: lowercase words (letters and digits, possessive `'s` and apostrophes
 * removed), without stop words, one-letter words or duplicates, in order of first appearance, at most `max`.
 */
export function searchTerms(text: string, max = MAX_SEARCH_TERMS): string[] {
  const words = text
    .toLowerCase()
    .replace(/['\u2019]s\b/gu, '')
    .replace(/['\u2019]/gu, '')
    .split(/[^\p{L}\p{N}]+/u);
  const terms: string[] = [];
  for (const word of words) {
    if (terms.length >= max) break;
    if (word.length < 2 || STOPWORDS.has(word) || terms.includes(word)) continue;
    terms.push(word);
  }
  return terms;
}

export type Granularity = 'turn' | 'interaction';
export type VectorPath = 'contentVector' | 'summaryVector';

/**
 * Where a kind of document's search filters look; the one `WHERE` builder (`filterClause`) turns a query's filters into
 * conditions on these paths, for interactions and turns here and for insights and session summaries in `insight-search.ts`.
 */
export interface FilterShape {
  /** Conditions every searchable document of the kind meets (its kind, its liveness). */
  readonly base: readonly string[];
  /** The session filter's condition, on `@sessionId`. */
  readonly session: string;
  /** The agent filter's condition, on `@agentId` unless the caller binds another parameter. */
  readonly agent: string;
  /** The time the `from` / `to` filters compare. */
  readonly time: string;
}

/** What each granularity selects, how it is told apart, and where its filters look. */
const SHAPES = {
  turn: {
    select: 'c.sessionId, c.seq, c.turnId, c.agentId, c.speaker, c.text, c.timestamp, c.refersFrom, c.refersTo',
    base: ["c.kind = 'turn'"],
    session: 'c.sessionId = @sessionId',
    agent: 'c.agentId = @agentId',
    time: 'c.timestamp',
  },
  interaction: {
    select: 'c.id, c.sessionId, c.seqRange, c.turnIds, c.agentIds, c.summary, c.startedAt',
    base: ['NOT IS_DEFINED(c.kind)'],
    session: 'c.sessionId = @sessionId',
    agent: 'ARRAY_CONTAINS(c.agentIds, @agentId)',
    time: 'c.startedAt',
  },
} as const satisfies Record<Granularity, FilterShape & { select: string }>;

/**
 * An interaction's vector documents, ranked by one of the two vectors (the base condition is the path's, see
 * `interactionVectorBase`): what ranking needs and the interaction's filter fields, no text. `id` is selected for an
 * interaction written before the split (its vectors inside, no `interactionId`).
 */
const INTERACTION_VECTOR = {
  select: 'c.id, c.interactionId, c.sessionId, c.seqRange, c.agentIds, c.startedAt',
  session: SHAPES.interaction.session,
  agent: SHAPES.interaction.agent,
  time: SHAPES.interaction.time,
} as const;

/**
 * The path's vector documents, or an interaction from before the split, which holds the vector itself (every
 * interaction written since is marked `vectorsApart`; an indexed field, where the vector paths are not range-indexed).
 */
const interactionVectorBase = (path: VectorPath) =>
  `((c.kind = '${INTERACTION_VECTOR_KIND}' AND c.vectorPath = '${path}') OR (NOT IS_DEFINED(c.kind) AND NOT IS_DEFINED(c.vectorsApart)))`;

export const INTERACTION_VECTOR_KIND = 'interactionVector';
export const INTERACTION_VECTOR_PATHS = ['contentVector', 'summaryVector'] as const satisfies readonly VectorPath[];

/** Times are stored as `toISOString()` strings (UTC, milliseconds), so a filter bound is normalised the same way and compared as a string. */
export function isoBound(name: 'from' | 'to', value: string): string {
  const time = new Date(value);
  if (Number.isNaN(time.getTime())) throw new MemoryError('validation_failed', `Filter ${name} is not a date-time`, { [name]: value });
  return time.toISOString();
}

export function checkLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError(`Search limit must be a positive integer, got ${limit}`);
  return limit;
}

/**
 * `WHERE` clause: the user, the shape's base conditions, optional extra conditions, then the query's filters, binding
 * their parameters. An agent filter binds `@agentId` to the agent, or `agentParameter` when the shape's agent condition
 * needs something else (insights: the agent's sessions).
 */
export function filterClause(query: SearchQuery, shape: FilterShape, parameters: SqlParameter[], extra: readonly string[], agentParameter?: SqlParameter): string {
  parameters.push({ name: '@userId', value: query.userId });
  const clauses = ['c.userId = @userId', ...shape.base, ...extra];
  const { sessionId, agentId, from, to } = query.filters;
  if (sessionId) {
    parameters.push({ name: '@sessionId', value: sessionId });
    clauses.push(shape.session);
  }
  if (agentId) {
    parameters.push(agentParameter ?? { name: '@agentId', value: agentId });
    clauses.push(shape.agent);
  }
  if (from) {
    parameters.push({ name: '@from', value: isoBound('from', from) });
    clauses.push(`${shape.time} >= @from`);
  }
  if (to) {
    parameters.push({ name: '@to', value: isoBound('to', to) });
    clauses.push(`${shape.time} <= @to`);
  }
  return `WHERE ${clauses.join(' AND ')}`;
}

/** The terms as parameters `@t0, @t1, …`, returned as the argument list to splice after the property path. */
export function termParameters(terms: readonly string[], parameters: SqlParameter[]): string {
  return terms
    .map((term, i) => {
      parameters.push({ name: `@t${i}`, value: term });
      return `@t${i}`;
    })
    .join(', ');
}

/**
 * Nearest neighbours by cosine distance (`VectorDistance` with the container's vector policy and DiskANN index),
 * restricted to vectors of the query's embedding model. Returns null when the query has no vector.
 */
export function buildVectorQuery(query: SearchQuery, granularity: Granularity, path: VectorPath = 'contentVector'): SqlQuerySpec | null {
  if (!query.vector) return null;
  if (granularity === 'turn' && path !== 'contentVector') throw new RangeError('Turn documents only have a contentVector');
  const parameters: SqlParameter[] = [];
  const shape = granularity === 'turn' ? SHAPES.turn : { ...INTERACTION_VECTOR, base: [interactionVectorBase(path)] };
  const filter = filterClause(query, shape, parameters, ['c.embeddingModel = @model']);
  parameters.push({ name: '@model', value: query.vector.model }, { name: '@vector', value: float32Vector(query.vector.values) }, { name: '@limit', value: checkLimit(query.limit) });
  return {
    query: `SELECT TOP @limit ${shape.select} FROM c ${filter} ORDER BY VectorDistance(c.${path}, @vector)`,
    parameters,
  };
}

/**
 * BM25 ranking (`ORDER BY RANK FullTextScore`) of documents that contain at least one of the terms
 * (`FullTextContainsAny`, so unrelated documents are not returned with a zero score). Returns null when the text has
 * no search terms.
 */
export function buildFullTextQuery(query: SearchQuery, granularity: Granularity, terms = searchTerms(query.text)): SqlQuerySpec | null {
  if (terms.length === 0) return null;
  const limit = checkLimit(query.limit);
  const parameters: SqlParameter[] = [];
  const filter = filterClause(query, SHAPES[granularity], parameters, []);
  // One parameter per term, shared by the filter and the score.
  const args = termParameters(terms, parameters);
  return {
    query: `SELECT TOP ${limit} ${SHAPES[granularity].select} FROM c ${filter} AND FullTextContainsAny(${TEXT_PATH}, ${args}) ORDER BY RANK FullTextScore(${TEXT_PATH}, ${args})`,
    parameters,
  };
}

/**
 * The user's speakers: one small marker document per speaker (`kind: 'speaker'`, see `speakerDocument`), written by
 * `indexTurns` the first time it meets the speaker. A `DISTINCT` over the turn documents would load every one of them
 * (vectors included) unless the index alone answers it, so its charge would grow with the user's turns; this query
 * loads the markers only. Like PostgreSQL's speakers list, the markers outlive a forgotten session; forgetting the
 * user deletes them with the rest of the partition.
 */
export function buildSpeakersQuery(userId: string): SqlQuerySpec {
  return { query: "SELECT VALUE c.speaker FROM c WHERE c.userId = @userId AND c.kind = 'speaker'", parameters: [{ name: '@userId', value: userId }] };
}

/** The vectors of a session's turn documents (`contentVector`) by seq, those embedded by `model` only. */
export function buildTurnVectorsQuery(key: { userId: string; sessionId: string }, seqs: readonly number[], model: string): SqlQuerySpec {
  return {
    query:
      "SELECT c.seq, c.contentVector FROM c WHERE c.userId = @userId AND c.kind = 'turn' AND c.sessionId = @sessionId AND ARRAY_CONTAINS(@seqs, c.seq) AND c.embeddingModel = @model",
    parameters: [
      { name: '@userId', value: key.userId },
      { name: '@sessionId', value: key.sessionId },
      { name: '@seqs', value: [...seqs] },
      { name: '@model', value: model },
    ],
  };
}

/** A speaker's marker in the `interactions` container: its id is derived from the name, so writing it twice is harmless. */
export function speakerDocument(userId: string, speaker: string) {
  return { id: `speaker:${createHash('sha256').update(speaker).digest('hex')}`, kind: 'speaker' as const, schemaVersion: SCHEMA_VERSION, userId, speaker };
}

export interface HybridOptions {
  /** Vector compared with the query embedding (default `contentVector`; interactions also have `summaryVector`). */
  vectorPath?: VectorPath;
  /** RRF weights for [vector, full text]; finite non-negative numbers, inlined as a literal array. */
  weights?: readonly [number, number];
}

/**
 * Hybrid search in one Cosmos query: reciprocal rank fusion of the vector ranking and the BM25 ranking,
 * `ORDER BY RANK RRF(VectorDistance(c.contentVector, @vector), FullTextScore(c.content, @t0, …)[, [w1, w2]])`.
 *
 * Not used by `CosmosSearchIndex` yet: the port returns one list per retriever and the use case fuses them (the same
 * way for every store). It is here for a search that wants the fusion done by Cosmos (one round trip, one RU charge).
 * Unlike the full-text query it has no `FullTextContainsAny` filter, so documents found only by their vector still
 * rank. Only documents embedded with the query's model take part. Returns null without a vector; without search terms
 * it is the plain vector query (RRF needs two rankings).
 */
export function buildHybridQuery(
  query: SearchQuery,
  granularity: Granularity,
  options: HybridOptions = {},
  terms = searchTerms(query.text),
): SqlQuerySpec | null {
  const path = options.vectorPath ?? 'contentVector';
  if (granularity === 'interaction') throw new RangeError('An interaction and its vectors are separate documents: no one document to rank by both');
  if (!query.vector || terms.length === 0) return buildVectorQuery(query, granularity, path);
  if (path !== 'contentVector') throw new RangeError('Turn documents only have a contentVector');
  const limit = checkLimit(query.limit);
  const weights = options.weights;
  if (weights && !weights.every((w) => Number.isFinite(w) && w >= 0)) throw new RangeError(`RRF weights must be finite and non-negative, got ${weights.join(', ')}`);
  const parameters: SqlParameter[] = [];
  const filter = filterClause(query, SHAPES[granularity], parameters, ['c.embeddingModel = @model']);
  parameters.push({ name: '@model', value: query.vector.model }, { name: '@vector', value: float32Vector(query.vector.values) });
  const args = termParameters(terms, parameters);
  const weightArg = weights ? `, [${weights.join(', ')}]` : '';
  return {
    query: `SELECT TOP ${limit} ${SHAPES[granularity].select} FROM c ${filter} ORDER BY RANK RRF(VectorDistance(c.${path}, @vector), FullTextScore(${TEXT_PATH}, ${args})${weightArg})`,
    parameters,
  };
}

/** The searchable document of one turn, in the `interactions` container. */
export function turnDocument(turn: IndexedTurn) {
  return {
    id: `turn:${turn.sessionId}:${padSeq(turn.seq)}`,
    kind: 'turn' as const,
    schemaVersion: SCHEMA_VERSION,
    userId: turn.userId,
    sessionId: turn.sessionId,
    seq: turn.seq,
    turnId: turn.turnId,
    ...(turn.agentId && { agentId: turn.agentId }),
    speaker: turn.speaker,
    // `content` is what the full-text and vector policies index (the turn with the ones before it); `text` is shown.
    content: turn.matchText,
    text: turn.text,
    timestamp: new Date(turn.timestamp).toISOString(),
    // The period the turn refers to ("last week", resolved when indexed), as normalised instants like `timestamp`.
    ...(turn.refers && { refersFrom: new Date(turn.refers.from).toISOString(), refersTo: new Date(turn.refers.to).toISOString() }),
    embeddingModel: turn.embeddingModel,
    contentVector: float32Vector(turn.vector),
  };
}

/** An interaction as written to `interactions`: without its vectors, which go to `interactionVectorDocuments`. */
export function interactionDocument(doc: InteractionDocument) {
  const written: Partial<InteractionDocument> & { fromSeq: number; vectorsApart: true } = { ...doc, fromSeq: doc.seqRange[0], vectorsApart: true };
  delete written.contentVector;
  delete written.summaryVector;
  return written as Omit<InteractionDocument, 'contentVector' | 'summaryVector'> & { fromSeq: number; vectorsApart: true };
}

/** One document per vector of the interaction (`<interaction id>:<path>`): the vector and the fields its ranking and filters read. */
export function interactionVectorDocuments(doc: InteractionDocument) {
  return INTERACTION_VECTOR_PATHS.map((path) => ({
    id: `${doc.id}:${path}`,
    kind: INTERACTION_VECTOR_KIND,
    schemaVersion: SCHEMA_VERSION,
    userId: doc.userId,
    sessionId: doc.sessionId,
    interactionId: doc.id,
    vectorPath: path,
    seqRange: doc.seqRange,
    agentIds: doc.agentIds,
    startedAt: doc.startedAt,
    embeddingModel: doc.embeddingModel,
    [path]: float32Vector(doc[path]),
  }));
}

const TurnRow = z.object({
  sessionId: z.string(),
  seq: z.number().int(),
  turnId: z.string(),
  agentId: z.string().nullish(),
  speaker: z.string(),
  text: z.string(),
  timestamp: z.string(),
  refersFrom: z.string().nullish(),
  refersTo: z.string().nullish(),
});

const WindowRow = z.object({
  id: z.string(),
  sessionId: z.string(),
  seqRange: z.tuple([z.number().int(), z.number().int()]),
  turnIds: z.array(z.string()),
  agentIds: z.array(z.string()),
  summary: z.string(),
  startedAt: z.string(),
});

export function toTurnHit(row: unknown): TurnHit {
  const r = TurnRow.parse(row);
  return {
    kind: 'turn',
    sessionId: r.sessionId,
    seq: r.seq,
    ...(r.agentId && { agentId: r.agentId }),
    speaker: r.speaker,
    timestamp: r.timestamp,
    ...(r.refersFrom && r.refersTo && { refers: { from: r.refersFrom, to: r.refersTo } }),
    ...(asksQuestion(r.text) && { asks: true }),
    shown: { turnId: r.turnId, text: r.text },
  };
}

const WindowVectorRow = z.object({
  id: z.string(),
  interactionId: z.string().nullish(),
  sessionId: z.string(),
  seqRange: z.tuple([z.number().int(), z.number().int()]),
  agentIds: z.array(z.string()),
  startedAt: z.string(),
});

const ShownRow = z.object({ id: z.string(), turnIds: z.array(z.string()), summary: z.string() });

/** A vector list's row: the hit without what it shows (read by `show` for the facts returned). */
export function toWindowVectorHit(row: unknown): WindowHit {
  const r = WindowVectorRow.parse(row);
  return { kind: 'interaction', id: r.interactionId ?? r.id, sessionId: r.sessionId, seqRange: r.seqRange, agentIds: r.agentIds, timestamp: r.startedAt };
}

/** What the given interactions' facts show, in the user's partition (interactions only, whatever their ids). */
export function buildShownQuery(userId: string, ids: readonly string[]): SqlQuerySpec {
  return {
    query: 'SELECT c.id, c.turnIds, c.summary FROM c WHERE c.userId = @userId AND NOT IS_DEFINED(c.kind) AND ARRAY_CONTAINS(@ids, c.id)',
    parameters: [
      { name: '@userId', value: userId },
      { name: '@ids', value: [...ids] },
    ],
  };
}

export function toWindowHit(row: unknown): WindowHit {
  const r = WindowRow.parse(row);
  return { kind: 'interaction', id: r.id, sessionId: r.sessionId, seqRange: r.seqRange, agentIds: r.agentIds, timestamp: r.startedAt, shown: { turnIds: r.turnIds, summary: r.summary } };
}

/** Runs `fn` over `items` with at most `concurrency` calls in flight; the first failure rejects. */
async function forEachBounded<T>(items: readonly T[], concurrency: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** How long a user's speakers list read by this instance answers searches, and how many users' lists it keeps. */
export const SPEAKERS_CACHE_MS = 60_000;
export const SPEAKERS_CACHE_USERS = 10_000;
/** How long this instance trusts that a speaker's marker exists (a forget or rebuild elsewhere may delete it), and how many it remembers. */
export const SPEAKER_MARKERS_CACHE_MS = 600_000;
export const SPEAKER_MARKERS_CACHE_SIZE = 100_000;

/** A map whose entries expire, cleared whole when full (both caches are cheap to refill). */
class ExpiringMap<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  constructor(
    private readonly ttlMs: number,
    private readonly maxSize: number,
    private readonly now: () => number,
  ) {}
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.until > this.now()) return entry.value;
    if (entry) this.entries.delete(key);
    return undefined;
  }
  set(key: string, value: V): void {
    if (this.entries.size >= this.maxSize) this.entries.clear();
    this.entries.set(key, { value, until: this.now() + this.ttlMs });
  }
  delete(key: string): void {
    this.entries.delete(key);
  }
  deleteWhere(match: (key: string) => boolean): void {
    for (const key of [...this.entries.keys()]) if (match(key)) this.entries.delete(key);
  }
}

export interface CosmosSearchIndexOptions {
  /** The clock the caches expire by (tests pin it). */
  now?: () => number;
}

export class CosmosSearchIndex implements SearchIndex {
  /**
   * Speakers lists read by this instance, by user. Fact search asks for them on every search; a new speaker indexed
   * here drops the user's entry, one indexed by another instance is seen within SPEAKERS_CACHE_MS. Until then that
   * speaker's name is neither boosted nor taken out of the query's words: a stale list costs ranking, never data.
   */
  private readonly speakersCache: ExpiringMap<string[]>;
  /** `user\0speaker` pairs whose marker this instance wrote or found, so indexTurns writes each marker once. */
  private readonly markers: ExpiringMap<true>;
  /** Bumped whenever a speakers list may have changed, so a read that raced the change is not cached. */
  private generation = 0;

  constructor(
    private readonly container: Container,
    options: CosmosSearchIndexOptions = {},
  ) {
    const now = options.now ?? Date.now;
    this.speakersCache = new ExpiringMap(SPEAKERS_CACHE_MS, SPEAKERS_CACHE_USERS, now);
    this.markers = new ExpiringMap(SPEAKER_MARKERS_CACHE_MS, SPEAKER_MARKERS_CACHE_SIZE, now);
  }

  /**
   * Upserts one document per turn; its id is derived from the turn, so re-indexing overwrites. A speaker not met
   * before gets its marker first, so every indexed turn's speaker is listed.
   */
  async indexTurns(turns: readonly IndexedTurn[]): Promise<void> {
    const speakers = new Map<string, { userId: string; speaker: string }>();
    for (const { userId, speaker } of turns) speakers.set(`${userId}\0${speaker}`, { userId, speaker });
    const unknown = [...speakers].filter(([key]) => !this.markers.get(key));
    await forEachBounded(unknown, INDEX_CONCURRENCY, async ([key, { userId, speaker }]) => {
      try {
        await this.container.items.create(speakerDocument(userId, speaker));
        this.generation++;
        this.speakersCache.delete(userId);
      } catch (error) {
        if (statusOf(error) !== 409) throw error; // written before, here or elsewhere
      }
      this.markers.set(key, true);
    });
    await forEachBounded(turns.map(turnDocument), INDEX_CONCURRENCY, (doc) => this.container.items.upsert(doc));
  }

  async turnVectors(key: { userId: string; sessionId: string }, seqs: readonly number[], model: string): Promise<Map<number, Float32Array>> {
    if (seqs.length === 0) return new Map();
    const rows = (await this.run(key.userId, buildTurnVectorsQuery(key, seqs, model))) as { seq: number; contentVector?: number[] }[];
    return new Map(rows.flatMap((r) => (r.contentVector ? [[r.seq, Float32Array.from(r.contentVector)] as const] : [])));
  }

  async speakers(userId: string): Promise<string[]> {
    const cached = this.speakersCache.get(userId);
    if (cached) return [...cached];
    const generation = this.generation;
    const speakers = (await this.run(userId, buildSpeakersQuery(userId))).filter((s): s is string => typeof s === 'string').sort();
    if (generation === this.generation) this.speakersCache.set(userId, speakers);
    return [...speakers];
  }

  /** Forgets what this instance remembers of the user (their documents were deleted: a rebuild, a forget). */
  dropCached(userId: string): void {
    this.generation++;
    this.speakersCache.delete(userId);
    this.markers.deleteWhere((key) => key.startsWith(`${userId}\0`));
  }

  async turns(query: SearchQuery, retriever: Retriever): Promise<TurnHit[]> {
    if (query.limit < 1) return [];
    const spec = retriever === 'vector' ? buildVectorQuery(query, 'turn') : buildFullTextQuery(query, 'turn');
    return spec ? (await this.run(query.userId, spec)).map(toTurnHit) : [];
  }

  async interactions(query: SearchQuery, retriever: Retriever | 'summaryVector'): Promise<WindowHit[]> {
    if (query.limit < 1) return [];
    const spec =
      retriever === 'fulltext'
        ? buildFullTextQuery(query, 'interaction')
        : buildVectorQuery(query, 'interaction', retriever === 'vector' ? 'contentVector' : 'summaryVector');
    return spec ? (await this.run(query.userId, spec)).map(retriever === 'fulltext' ? toWindowHit : toWindowVectorHit) : [];
  }

  /**
   * Turn hits and BM25 interaction hits come with what they show; an interaction ranked by a vector is read here, one
   * query for all of them. One gone meanwhile (forgotten, rebuilt) is left out.
   */
  async show(userId: string, hits: { turns: readonly TurnHit[]; interactions: readonly WindowHit[] }): Promise<{ turns: TurnHit[]; interactions: WindowHit[] }> {
    const unshown = [...new Set(hits.interactions.filter((h) => !h.shown).map((h) => h.id))];
    const read = unshown.length === 0 ? [] : (await this.run(userId, buildShownQuery(userId, unshown))).map((r) => ShownRow.parse(r));
    const shown = new Map(read.map((r) => [r.id, { turnIds: r.turnIds, summary: r.summary }]));
    return {
      turns: hits.turns.filter((h) => h.shown),
      interactions: hits.interactions.flatMap((h) => {
        const found = h.shown ?? shown.get(h.id);
        return found ? [{ ...h, shown: found }] : [];
      }),
    };
  }

  private async run(userId: string, spec: SqlQuerySpec): Promise<unknown[]> {
    const { resources } = await this.container.items.query<unknown>(spec, { partitionKey: userId }).fetchAll();
    return resources;
  }
}
