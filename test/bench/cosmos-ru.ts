/**
 * Cosmos DB cost on paper: the request units each service operation would cost, from Microsoft's documented RU model
 * and the sizes of the documents this service really writes. There is no Cosmos DB emulator here, so nothing below is a
 * measured charge: the script runs the operations through the real Cosmos adapters against the wire fake the tests use
 * (`@vercel/cosmosdb-server`), records every request the SDK sends (an SDK plugin), and prices each one with the model.
 *
 *   npx tsx test/bench/cosmos-ru.ts [--markdown]
 *
 * Knobs (environment): COSMOS_RU_DIMENSIONS (1536, the Bicep default `embeddingDimensions`), COSMOS_RU_K (10,
 * K_TURN_BUFFER's default), and the established user a fact search is priced for: COSMOS_RU_USER_TURNS (1000),
 * COSMOS_RU_INSIGHTS (40), COSMOS_RU_ENDED_SESSIONS (20).
 *
 * The model (sources in README, "Cosmos DB cost on paper"):
 * - point read: the documented read charge for the item's size (1 KB → 1 RU … 32 KB → 2.19 RU), interpolated;
 * - create: the documented write charge for the size (1 KB → 4.95 … 32 KB → 11.23) + 0.2 RU per indexed term; each
 *   DiskANN vector written adds what is left of the documented ~65 RU insert of an item with a 1536-d float32 vector
 *   once its size and terms are paid; full-text tokens count as terms in the high estimate only;
 * - replace (and an upsert over an existing id): twice the size charge + 0.2 × 2 per changed term;
 * - transactional batch: the sum of its operations;
 * - query: 1.8 RU of overhead (the documented one-item query of 9,963 bytes costs 3.19 RU, a point read of it 1.4) +
 *   loading every document it reads, whole, whatever it projects, at the read table. A vector query's high is the
 *   documented "up to ~45 RU" for TOP 10, scaled to its TOP n. A DISTINCT is priced both ways: answered from the index
 *   (low) or loading every matching document (high). The query-plan round trip the SDK makes first is not charged.
 */
import type { Database, SqlParameter } from '@azure/cosmos';
import { cosmosStores } from '../../shared/adapters/cosmos/stores.js';
import { COSMOS_CONTAINERS, type CosmosContainerSpec } from '../../shared/adapters/cosmos/containers.js';
import { CosmosArtifactStore } from '../../shared/adapters/cosmos/artifacts.js';
import { float32Vector as storedVector } from '../../shared/adapters/cosmos/vectors.js';
import { CosmosForgetStore } from '../../shared/adapters/cosmos/forget.js';
import { CosmosSlotStore } from '../../shared/adapters/cosmos/slots.js';
import { LocalChatModel } from '../../shared/adapters/local-models/local-chat.js';
import { inProcessPeriods } from '../../shared/adapters/local-models/periods.js';
import { UsageMeter } from '../../shared/application/metering.js';
import { appendTurns } from '../../shared/application/append-turns.js';
import { beginForget, finishForget, purgeBlobs, purgeStores, verifyForget } from '../../shared/application/forget.js';
import { projectSession } from '../../shared/application/project-session.js';
import { sessionsToServeAtOnce } from '../../shared/application/projection-scheduler.js';
import { getContext } from '../../shared/application/get-context.js';
import { searchFacts } from '../../shared/application/search-facts.js';
import { putSlot } from '../../shared/application/slots.js';
import { completeSession, finalPrune, reflectSession, requestSessionEnd, summariseSession } from '../../shared/application/session-end.js';
import type { Embedder } from '../../shared/application/ports.js';
import { FactSearchBody } from '../../shared/contracts/facts.js';
import type { MemoryEvent } from '../../shared/contracts/events.js';
import type { SessionKey } from '../../shared/contracts/ids.js';
import { LOCAL_PRINCIPAL } from '../../shared/platform/auth.js';
import type { Runtime } from '../../shared/platform/composition.js';
import { bytesOf, openRecordedCosmos, type CosmosRequest, type CosmosRequestRecorder } from '../support/cosmos-requests.js';
import { role, rng, turnContent } from './fixtures.js';

const env = (name: string, fallback: number) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer`);
  return value;
};
const DIMENSIONS = env('COSMOS_RU_DIMENSIONS', 1536);
const K = env('COSMOS_RU_K', 10);
const ESTABLISHED = { turns: env('COSMOS_RU_USER_TURNS', 1000), insights: env('COSMOS_RU_INSIGHTS', 40), endedSessions: env('COSMOS_RU_ENDED_SESSIONS', 20) };
const MARKDOWN = process.argv.includes('--markdown');

// ---- the documented RU model ----

/** Read and write charges by document size (KB), "Understand request units consumption" (Microsoft Learn, 2026). */
const READ_TABLE: readonly [number, number][] = [[1, 1], [2, 1.04], [4, 1.14], [8, 1.33], [16, 1.67], [32, 2.19], [64, 4.76], [128, 9.95], [256, 20.28], [512, 40.95], [1024, 145.9], [2048, 291.8]];
const WRITE_TABLE: readonly [number, number][] = [[1, 4.95], [2, 6.29], [4, 6.67], [8, 7.04], [16, 9.52], [32, 11.23], [64, 22.67], [128, 48.19], [256, 98.29], [512, 184.57], [1024, 625], [2048, 1250]];
const TERM_RU = 0.2;
const QUERY_OVERHEAD_RU = 1.8;
/** Documented insert of an item with one 1536-d float32 vector under DiskANN, and a TOP 10 DiskANN search ("Optimizing your semantic search"). */
const DISKANN_INSERT_RU = 65;
const DISKANN_TOP10_SEARCH_RU = 45;

function interpolate(table: readonly [number, number][], bytes: number): number {
  const kb = bytes / 1024;
  if (kb <= table[0]![0]) return table[0]![1];
  for (let i = 1; i < table.length; i++) {
    const [x1, y1] = table[i]!;
    if (kb <= x1) {
      const [x0, y0] = table[i - 1]!;
      return y0 + ((y1 - y0) * (kb - x0)) / (x1 - x0);
    }
  }
  return (table.at(-1)![1] * kb) / table.at(-1)![0];
}
const readRu = (bytes: number) => interpolate(READ_TABLE, bytes);
const writeRu = (bytes: number) => interpolate(WRITE_TABLE, bytes);

interface Range {
  low: number;
  high: number;
}
const add = (a: Range, b: Range): Range => ({ low: a.low + b.low, high: a.high + b.high });
const ZERO: Range = { low: 0, high: 0 };

const SPECS = new Map<string, CosmosContainerSpec>(Object.values(COSMOS_CONTAINERS).map((s) => [s.name, s]));
const vectorKeys = (spec: CosmosContainerSpec | undefined) => new Set((spec?.vectorPaths ?? []).map((p) => p.slice(1)));
const fullTextKeys = (spec: CosmosContainerSpec | undefined) => (spec?.fullTextPaths ?? []).map((p) => p.slice(1));

/** Indexed leaf values (path → JSON value): every primitive under `/*`, less the vector paths and system properties. */
function leaves(doc: unknown, spec: CosmosContainerSpec | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const skip = vectorKeys(spec);
  const walk = (value: unknown, path: string) => {
    if (Array.isArray(value)) value.forEach((v, i) => walk(v, `${path}/${i}`));
    else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) if (!(path === '' && (skip.has(k) || k.startsWith('_')))) walk(v, `${path}/${k}`);
    } else out.set(path, JSON.stringify(value));
  };
  walk(doc, '');
  return out;
}

/** Distinct words of the full-text paths: what a full-text index adds, counted as terms in the high estimate. */
function fullTextTokens(doc: Record<string, unknown>, spec: CosmosContainerSpec | undefined): number {
  const words = new Set<string>();
  for (const key of fullTextKeys(spec)) {
    const text = doc[key];
    if (typeof text === 'string') for (const w of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) if (w.length > 1) words.add(w);
  }
  return words.size;
}

const vectorsIn = (doc: Record<string, unknown>, spec: CosmosContainerSpec | undefined) => [...vectorKeys(spec)].filter((k) => Array.isArray(doc[k]));

/** What one DiskANN vector adds to a write: the documented insert less the size and terms that item pays anyway. */
function vectorRu(): Range {
  const item = bytesOf(float32Vector('documented item', 1536));
  return { low: DISKANN_INSERT_RU - writeRu(item) - 10 * TERM_RU, high: DISKANN_INSERT_RU - WRITE_TABLE[0]![1] };
}

function createRu(doc: Record<string, unknown>, container: string): Range {
  const spec = SPECS.get(container);
  const base = writeRu(bytesOf(doc)) + TERM_RU * leaves(doc, spec).size;
  const vectors = vectorsIn(doc, spec).length;
  const v = vectorRu();
  return { low: base + vectors * v.low, high: base + vectors * v.high + TERM_RU * fullTextTokens(doc, spec) };
}

function replaceRu(before: Record<string, unknown>, after: Record<string, unknown>, container: string): Range {
  const spec = SPECS.get(container);
  const [a, b] = [leaves(before, spec), leaves(after, spec)];
  let changed = 0;
  for (const [path, value] of b) if (a.get(path) !== value) changed++;
  for (const path of a.keys()) if (!b.has(path)) changed++;
  const base = 2 * writeRu(bytesOf(after)) + 2 * TERM_RU * changed;
  const vectors = vectorsIn(after, spec).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k])).length;
  const textChanged = fullTextKeys(spec).some((k) => before[k] !== after[k]);
  const v = vectorRu();
  return { low: base + vectors * v.low, high: base + vectors * v.high + (textChanged ? 2 * TERM_RU * fullTextTokens(after, spec) : 0) };
}

function queryRu(loaded: readonly number[], ranked: Ranked | undefined): Range {
  const low = QUERY_OVERHEAD_RU + loaded.reduce((sum, b) => sum + readRu(b), 0);
  return { low, high: ranked?.kind === 'vector' ? Math.max(low, (DISKANN_TOP10_SEARCH_RU * ranked.top) / 10) : low };
}

// ---- pricing the recorded requests ----

interface Ranked {
  kind: 'vector' | 'fulltext';
  top: number;
  /** The document kind the list ranks, whose measured size prices an established user's full list. */
  doc: DocKind;
}

type DocKind = 'event' | 'turn-index' | 'interaction' | 'interaction-vector' | 'session' | 'ended-session' | 'insight' | 'other';

/** A recorded request with its estimate, or a modelled one the wire fake cannot show. */
interface Call extends Omit<CosmosRequest, 'kind' | 'writes'> {
  kind: CosmosRequest['kind'] | 'change feed' | 'lease checkpoint';
  ru: Range;
  ranked?: Ranked;
  /** A DISTINCT that the index may answer alone (low) or that loads every matching document (high). */
  distinct?: boolean;
  /** What a write wrote (the interactions container holds interactions and turn-index documents). */
  wrote?: DocKind;
  note?: string;
}

function kindOf(container: string, doc: Record<string, unknown>): DocKind {
  if (container === 'events') return 'event';
  if (container === 'interactions') return doc.kind === 'turn' ? 'turn-index' : doc.kind === 'interactionVector' ? 'interaction-vector' : doc.kind === undefined ? 'interaction' : 'other'; // 'other': speaker markers
  if (container === 'sessions') return typeof doc.endedAt === 'string' && Array.isArray(doc.summaryVector) ? 'ended-session' : 'session';
  if (container === 'insights') return doc.id === 'profile' ? 'other' : 'insight';
  return 'other';
}

function rankedOf(sql: string, parameters: readonly SqlParameter[], container: string): Ranked | undefined {
  const kind = /VectorDistance\(/.test(sql) ? 'vector' : /FullTextScore\(/.test(sql) ? 'fulltext' : undefined;
  if (!kind) return undefined;
  const literal = /SELECT TOP (\d+)/.exec(sql)?.[1];
  const top = Number(literal ?? parameters.find((p) => p.name === '@limit')?.value);
  const doc: DocKind =
    container === 'interactions'
      ? sql.includes("c.kind = 'turn'")
        ? 'turn-index'
        : sql.includes("c.kind = 'interactionVector'")
          ? 'interaction-vector'
          : 'interaction'
      : container === 'sessions'
        ? 'ended-session'
        : container === 'insights'
          ? 'insight'
          : 'other';
  return { kind, top, doc };
}

function price({ writes, ...request }: CosmosRequest): Call {
  const call: Call = { ...request, ru: ZERO };
  const first = writes[0];
  if (first) call.wrote = kindOf(request.container, first.doc);
  if (request.kind === 'point read') call.ru = request.status === 404 ? { low: 1, high: 1 } : { low: readRu(request.returned), high: readRu(request.returned) };
  else if (request.kind === 'delete') call.ru = { low: WRITE_TABLE[0]![1], high: WRITE_TABLE[0]![1] };
  else if (request.kind === 'query' && request.query !== undefined) {
    call.ranked = rankedOf(request.query, request.parameters ?? [], request.container);
    call.distinct = /SELECT DISTINCT/.test(request.query);
    const loaded = request.loaded ?? [];
    call.ru = call.distinct ? { low: QUERY_OVERHEAD_RU, high: queryRu(loaded, undefined).low } : queryRu(loaded, call.ranked);
  } else {
    // A batch's reads cost what point reads of their documents would (1 RU for one not found).
    const reads = (request.batchReads ?? []).map((bytes) => (bytes === 0 ? 1 : readRu(bytes)));
    call.ru = [...writes.map((w) => (w.before ? replaceRu(w.before, w.doc, request.container) : createRu(w.doc, request.container))), ...reads.map((ru) => ({ low: ru, high: ru }))].reduce(add, ZERO);
  }
  return call;
}

/** Sizes of every document written, by kind. */
function writtenSizes(recorder: CosmosRequestRecorder): Map<DocKind, number[]> {
  const sizes = new Map<DocKind, number[]>();
  for (const { container, doc } of recorder.written) {
    const kind = kindOf(container, doc);
    sizes.set(kind, [...(sizes.get(kind) ?? []), bytesOf(doc)]);
  }
  return sizes;
}

// ---- modelled calls the wire fake cannot show: the change feed that drives the projection ----

/** The Functions trigger reads the new events from the change feed (charged like reading them) and checkpoints its lease (a replace). */
function changeFeedCalls(eventSizes: readonly number[]): Call[] {
  const feed = eventSizes.reduce((s, b) => s + readRu(b), 0);
  // A lease document of the Functions extension: about 500 bytes, about 10 indexed values of which 3 change per checkpoint.
  const lease = 2 * writeRu(500) + 2 * TERM_RU * 3;
  return [
    { kind: 'change feed', container: 'events', scope: 'single-partition', sent: 0, returned: eventSizes.reduce((s, b) => s + b, 0), items: eventSizes.length, status: 200, ru: { low: feed, high: feed }, note: 'modelled' },
    { kind: 'lease checkpoint', container: 'leases', scope: 'point', sent: 500, returned: 500, items: 1, status: 200, ru: { low: lease, high: lease }, note: 'modelled' },
  ];
}

// ---- an embedder shaped like the production one ----

/**
 * Unit vectors of DIMENSIONS float32 components, as the OpenAI adapter returns them: it asks for base64 and the SDK
 * decodes float32s into JavaScript numbers, so each component serialises with float32's long decimal expansion.
 * Deterministic per text.
 */
function float32Vector(text: string, dimensions: number): number[] {
  let seed = 2166136261;
  for (const ch of text) seed = Math.imul(seed ^ ch.charCodeAt(0), 16777619);
  const next = rng(seed);
  const raw = Array.from({ length: dimensions }, () => Math.sqrt(-2 * Math.log(next() || 1e-12)) * Math.cos(2 * Math.PI * next()));
  const norm = Math.hypot(...raw);
  return raw.map((x) => Math.fround(x / norm));
}

const float32Embedder = (dimensions: number): Embedder => ({ model: 'text-embedding-3-small', dimensions, embed: async (texts) => texts.map((t) => float32Vector(t, dimensions)) });

// ---- the scenario ----

interface Row {
  operation: string;
  calls: Call[];
}

async function main() {
  const { database, recorder, close } = await openRecordedCosmos(DIMENSIONS);
  const record = async (fn: () => Promise<unknown>) => (await recorder.record(fn)).map(price);
  const meter = new UsageMeter();
  const runtime = {
    ...cosmosStores(database, { atomicBatches: true }),
    chat: new LocalChatModel(meter),
    embedder: float32Embedder(DIMENSIONS),
    periods: inProcessPeriods,
    meter,
    clock: { now: () => new Date() },
    ids: { newId: () => crypto.randomUUID() },
    memory: { kTurnBuffer: K, nActiveTurns: 5, numRecentSessions: 2, topKFacts: 5 },
    reflection: { categories: ['goals', 'preferences', 'personal_details'], confidenceThreshold: 0.7, similarityThreshold: 0.92, minSessionsForAggregation: 3 },
    detail: { artifacts: new CosmosArtifactStore(database.container(COSMOS_CONTAINERS.artifacts.name)), blobs: null, limits: { offloadThresholdTokens: 500, inlineMaxBytes: 65_536, maxBytes: 16_777_216 } },
    forgets: new CosmosForgetStore(database),
    slots: new CosmosSlotStore(database.container(COSMOS_CONTAINERS.slots.name)),
  } as unknown as Runtime;

  const userId = 'alice';
  let turnNo = 0;
  const turns = (sessionId: string, count: number) => ({
    turns: Array.from({ length: count }, () => {
      const i = turnNo++;
      return { role: role(i), content: turnContent(i), turnId: `${sessionId}-t${i}` };
    }),
  });
  /** The event documents one recorded append wrote (their sizes), for the change-feed read that follows it. */
  const eventSizes = () => recorder.written.filter((w) => w.container === 'events').map((w) => bytesOf(w.doc));
  const appendedSizes = (before: number) => eventSizes().slice(before);
  const eventsWritten = () => eventSizes().length;

  // Earlier sessions, ended: their summaries feed the init block and the summary search, their insights the insight search.
  for (const sessionId of ['p1', 'p2', 'p3']) {
    const key = { userId, sessionId };
    await appendTurns(runtime, key, turns(sessionId, K + 2));
    await projectSession(runtime, key);
    await requestSessionEnd(runtime, key, 'client');
    await finalPrune(runtime, key);
    await summariseSession(runtime, key);
    await reflectSession(runtime, key);
    await completeSession(runtime, key);
  }

  const key: SessionKey = { userId, sessionId: 's1' };
  /** One projection run, as the change feed triggers it after `eventsBefore` events had been written. */
  const projectRun = async (eventsBefore: number) => {
    const newEvents = appendedSizes(eventsBefore);
    return [...changeFeedCalls(newEvents), ...(await record(() => projectSession(runtime, key)))];
  };
  // The first turn: the projector fixes the init block (profile and recent summaries, read once per session).
  let before = eventsWritten();
  await appendTurns(runtime, key, turns('s1', 1));
  const afterAppend = eventsWritten();
  const firstRun = await projectRun(before);
  const firstTurn = [...firstRun, ...(await projectRun(afterAppend))];
  // Turns 2 … K-1, one per append; the middle one is recorded.
  let appendOne: Call[] = [];
  let projectOne: Call[] = [];
  for (let n = 2; n < K; n++) {
    before = eventsWritten();
    const append = await record(() => appendTurns(runtime, key, turns('s1', 1)));
    const projection = await projectRun(before);
    if (n === Math.floor(K / 2)) [appendOne, projectOne] = [append, projection];
  }
  // Turn K completes a window: the projector asks the chat model, appends InteractionSummarised and writes the
  // interaction; the change feed then delivers that event too and the projector runs once more.
  before = eventsWritten();
  await appendTurns(runtime, key, turns('s1', 1));
  let decidedFrom = eventsWritten();
  const window = [...(await projectRun(before)), ...(await projectRun(decidedFrom))];

  before = eventsWritten();
  const appendTen = await record(() => appendTurns(runtime, key, turns('s1', 10)));
  decidedFrom = eventsWritten();
  const projectTen = [...(await projectRun(before)), ...(await projectRun(decidedFrom))];
  // A partial window, which the context shows verbatim.
  await appendTurns(runtime, key, turns('s1', 3));
  await projectSession(runtime, key);

  const rows: Row[] = [
    { operation: 'Append 1 turn (POST …/turns)', calls: appendOne },
    { operation: 'Append 10 turns in one request', calls: appendTen },
    { operation: 'Projection of 1 turn (no window completed)', calls: projectOne },
    { operation: `Projection of the turn completing a ${K}-turn window, then of its InteractionSummarised event`, calls: window },
    { operation: 'Projection of 10 turns appended together (one window completed), then of its InteractionSummarised event', calls: projectTen },
    { operation: "Projection of a session's first turn (init block fixed), then of its SessionInitFixed event", calls: firstTurn },
    { operation: 'Context read (GET …/context)', calls: await record(() => getContext(runtime, key, {})) },
    {
      operation: 'Fact search (POST …/facts/search, all sources, topK 5)',
      calls: await record(() => searchFacts(runtime, userId, FactSearchBody.parse({ query: 'When does Maria want to retire, and what about the mortgage?' }))),
    },
  ];

  // A slot's second version: its head read, the batch (the version before read, the event created), the writer's checks.
  const putPlan = (step: string) => putSlot(runtime, LOCAL_PRINCIPAL, userId, 'task_plan', { scope: 'user' }, { value: { steps: ['draft', step] } }, {});
  await putPlan('outline');
  rows.push({ operation: 'Slot write over version 1 (PUT …/slots/{name})', calls: await record(() => putPlan('edit')) });

  rows.push(...(await forgetRounds(runtime, record, { userId, sessionId: 'p1' })));
  const atOnce = await atOnceCheck(runtime, database, record);
  await close();
  report(rows, writtenSizes(recorder));
  console.log(atOnce);
}

/**
 * A session forget's store rounds (blobs, store purge, verification scan), priced: the first, which purges an ended
 * session, and the round after the grace (FORGET_GRACE_SECONDS), which finds nothing: what the wait adds per forget.
 */
async function forgetRounds(runtime: Runtime, record: (fn: () => Promise<unknown>) => Promise<Call[]>, key: Required<SessionKey>): Promise<Row[]> {
  // No session-end histories here: the durable client's status calls are not Cosmos DB requests.
  const deps = { ...runtime, orchestrations: { start: async () => ({ instanceId: '', started: false }), status: async () => null, purge: async () => 0 }, forget: { graceSeconds: 600 } };
  await beginForget(deps, key);
  const round = () =>
    record(async () => {
      await purgeBlobs(deps, key);
      await purgeStores(deps, key);
      await verifyForget(deps, { ...key, sessionIds: [key.sessionId], blobNames: [] });
    });
  const first = await round();
  const afterGrace = await round();
  await finishForget(deps, { ...key, removed: 0, tombstone: null });
  return [
    { operation: 'Forget of an ended session: its first round (blobs, store purge, scan)', calls: first },
    { operation: 'Forget: the round after the grace, which finds nothing', calls: afterGrace },
  ];
}

/**
 * The change feed's at-once check (`sessionsToServeAtOnce`) for a batch that brings one turn to each of several queued
 * sessions of several users: each session document's checkpoint, read as the service does (a point read each), against
 * one query for all of them. The query is priced at its cheapest, as if every session lay in one physical partition
 * (one overhead); across the `sessions` container (`/userId`) it pays the overhead once per physical partition it reaches.
 */
async function atOnceCheck(runtime: Runtime, database: Database, record: (fn: () => Promise<unknown>) => Promise<Call[]>): Promise<string> {
  const users = ['bob', 'carol', 'dave', 'erin'];
  const keys = users.flatMap((userId) => ['a1', 'a2'].map((sessionId) => ({ userId, sessionId: `${userId}-${sessionId}` })));
  const batch: MemoryEvent[] = [];
  for (const key of keys) {
    await appendTurns(runtime, key, { turns: [{ role: 'user', content: turnContent(batch.length), turnId: 't1' }] });
    await projectSession(runtime, key);
    const { seq } = (await appendTurns(runtime, key, { turns: [{ role: 'user', content: turnContent(batch.length + 1), turnId: 't2' }] })).accepted[0]!;
    batch.push(...(await runtime.events.read(key, seq - 1, 1)));
  }
  const pointReads = await record(() => sessionsToServeAtOnce(runtime, [], batch, { sliceEvents: 512, parallelism: keys.length }));
  const query = await record(() =>
    database
      .container(COSMOS_CONTAINERS.sessions.name)
      .items.query({ query: 'SELECT c.userId, c.id, c.projectedThroughSeq FROM c WHERE ARRAY_CONTAINS(@users, c.userId) AND ARRAY_CONTAINS(@ids, c.id)', parameters: [{ name: '@users', value: users }, { name: '@ids', value: keys.map((k) => k.sessionId) }] })
      .fetchAll(),
  );
  const [reads, one] = [total(pointReads), total(query)];
  return [
    '',
    `The change feed's at-once check for a batch of ${keys.length} queued sessions of ${users.length} users (their documents' checkpoints):`,
    `  as the service does: ${pointReads.length} point reads (${describe(pointReads)}), ${ru(reads)} RU`,
    `  one query for all of them (${describe(query)}), loading ${query[0]?.loaded?.length ?? 0} documents: ${ru(one)} RU at one physical partition, + ${QUERY_OVERHEAD_RU} RU for each further one`,
  ].join('\n');
}

// ---- the report ----

const avg = (xs: readonly number[] | undefined) => (xs && xs.length > 0 ? xs.reduce((s, x) => s + x, 0) / xs.length : 0);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const ru = (r: Range) => (Math.abs(r.high - r.low) < 0.05 ? r.low.toFixed(1) : `${r.low.toFixed(1)}–${r.high.toFixed(1)}`);

/** A ranked list priced for the established user: its TOP n (or all the user has) documents of its kind, at their measured size. */
function established(call: Call, sizes: ReadonlyMap<DocKind, number[]>): Call {
  if (!call.ranked && !call.distinct) return call;
  if (call.distinct) {
    const loaded = Array.from({ length: ESTABLISHED.turns }, () => avg(sizes.get('turn-index')));
    return { ...call, loaded, ru: { low: QUERY_OVERHEAD_RU, high: queryRu(loaded, undefined).low } };
  }
  const r = call.ranked!;
  const available = r.doc === 'insight' ? ESTABLISHED.insights : r.doc === 'ended-session' ? ESTABLISHED.endedSessions : r.doc === 'interaction' || r.doc === 'interaction-vector' ? Math.ceil(ESTABLISHED.turns / K) : ESTABLISHED.turns;
  const loaded = Array.from({ length: Math.min(r.top, available) }, () => avg(sizes.get(r.doc)));
  return { ...call, loaded, ru: queryRu(loaded, { ...r, top: Math.min(r.top, available) }) };
}

const total = (calls: readonly Call[]) => calls.reduce((s, c) => add(s, c.ru), ZERO);

function describe(calls: readonly Call[]): string {
  const groups = new Map<string, number>();
  for (const c of calls) {
    const what = c.kind === 'batch' ? `batch of ${c.items} creates` : c.kind === 'query' ? `${c.scope} ${c.ranked ? `${c.ranked.kind} ` : c.distinct ? 'DISTINCT ' : ''}query` : c.kind;
    const label = `${what} (${c.wrote && c.wrote !== 'event' ? `${c.wrote}, ` : ''}${c.container})`;
    groups.set(label, (groups.get(label) ?? 0) + 1);
  }
  return [...groups].map(([label, n]) => `${n} × ${label}`).join(', ');
}

function report(rows: Row[], sizes: ReadonlyMap<DocKind, number[]>) {
  const search = rows.find((r) => r.operation.startsWith('Fact search'))!;
  const searchEstablished = search.calls.map((c) => established(c, sizes));
  const out: string[] = [];
  const line = (s = '') => out.push(s);
  const v = vectorRu();
  line(`Cosmos DB cost on paper — estimates from the documented RU model, not measurements (embedding dimensions ${DIMENSIONS}, K_TURN_BUFFER ${K}).`);
  line(`One DiskANN vector written adds ${ru(v)} RU; a query pays ${QUERY_OVERHEAD_RU} RU + loading each document it reads.`);
  line();
  line('Document sizes written (JSON, average):');
  for (const kind of ['event', 'turn-index', 'interaction', 'interaction-vector', 'session', 'ended-session', 'insight'] as const) {
    const written = sizes.get(kind);
    if (written) line(`  ${kind.padEnd(18)} ${kb(avg(written)).padStart(9)}  (${written.length} written)`);
  }
  line();
  if (MARKDOWN) {
    line('| operation | Cosmos calls | estimated RU |');
    line('|---|---|---|');
    for (const r of rows) {
      const calls = r === search ? searchEstablished : r.calls;
      line(`| ${r.operation} | ${describe(calls)} | ${ru(total(calls))} |`);
    }
  } else {
    for (const r of rows) {
      const calls = r === search ? searchEstablished : r.calls;
      line(`${r.operation}: ${ru(total(calls))} RU`);
      for (const c of calls) {
        const sql = c.query ? `  ${c.query.replace(/\s+/g, ' ').slice(0, 90)}` : '';
        line(
          `    ${c.kind.padEnd(16)} ${c.container.padEnd(12)} ${c.scope.padEnd(16)} items ${String(c.items).padStart(3)}  sent ${kb(c.sent).padStart(8)}  returned ${kb(c.returned).padStart(8)}` +
            `${c.loaded ? `  loaded ${String(c.loaded.length).padStart(4)} docs ${kb(c.loaded.reduce((s, b) => s + b, 0)).padStart(9)}` : ''}  ${ru(c.ru).padStart(13)} RU${c.status >= 300 ? ` (HTTP ${c.status})` : ''}${c.note ? ` (${c.note})` : ''}${sql}`,
        );
      }
      if (r === search) line(`    (ranked lists priced for a user with ${ESTABLISHED.turns} turns, ${Math.ceil(ESTABLISHED.turns / K)} interactions, ${ESTABLISHED.insights} insights, ${ESTABLISHED.endedSessions} ended sessions; as run on the seeded user: ${ru(total(search.calls))} RU)`);
    }
  }
  line();
  const callsOf = (prefix: string) => rows.find((r) => r.operation.startsWith(prefix))!.calls;
  // Per turn at steady state: its append and projection, and one window's extra cost (over a plain turn's projection) every K turns.
  const steadyBy = (container?: string) => {
    const sum = (prefix: string) => total(callsOf(prefix).filter((c) => container === undefined || c.container === container));
    const [append, turn, window] = [sum('Append 1 turn'), sum('Projection of 1 turn'), sum(`Projection of the turn completing a ${K}-turn window`)];
    return { low: append.low + turn.low + (window.low - turn.low) / K, high: append.high + turn.high + (window.high - turn.high) / K };
  };
  const steady = steadyBy();
  line(`Sizing: a 1-turn append with its projection costs ${ru(steady)} RU at steady state (a window's extra amortised over ${K} turns;`);
  line(`one lease checkpoint per projection run, where production batches share one), so 100 such appends/s need about`);
  line(`${ru({ low: 100 * steady.low, high: 100 * steady.high })} RU/s. Per container, per append:`);
  for (const container of [...new Set(rows.flatMap((r) => r.calls.map((c) => c.container)))]) {
    const r = steadyBy(container);
    if (r.high > 0.05) line(`  ${container.padEnd(12)} ${ru(r).padStart(12)} RU  (${ru({ low: 100 * r.low, high: 100 * r.high })} RU/s at 100 appends/s)`);
  }
  const vector = float32Vector('a sample text', DIMENSIONS);
  const written = storedVector(vector);
  line();
  line(`A ${DIMENSIONS}-d vector serialises to ${kb(bytesOf(vector))} as the SDK decodes float32 (${(bytesOf(vector) / DIMENSIONS).toFixed(1)} bytes a component);`);
  line(`the adapters write it as ${kb(bytesOf(written))} (${(bytesOf(written) / DIMENSIONS).toFixed(1)} bytes a component: the shortest decimals that round-trip float32).`);
  console.log(out.join('\n'));
}

await main();
