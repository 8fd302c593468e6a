/**
 * A session's first turn on the projection's path, one session at a time (no other load of the service's own): the
 * change-feed handler on the batch that brings the turn, then the projection queue's timer (as the local host runs it
 * after each batch), then the handler on the init block's event. Prints how long until the turn's session document is
 * written (what the lag bench counts as projected) and the PGlite statements before it, and the whole first turn's time
 * and statements. Statements do not depend on the machine's load, so two versions compare by them even on a busy machine.
 *
 *   npx tsx test/bench/first-turn.ts
 *
 * Knobs: BENCH_FIRST_TURNS (60 sessions, of which the first 10 warm up and are not counted); BENCH_FIRST_TURN_CITED
 * (2: the user's ended sessions, seeded first, whose summaries each new session's init block cites; the default
 * NUM_RECENT_SESSIONS is 2).
 */
import { handler as projectHandler } from '../../functions/cosmos-events-project.js';
import { handler as queueHandler } from '../../functions/timer-projection-queue.js';
import { invocationContext } from '../../shared/platform/local-host/invocation.js';
import { projectSession } from '../../shared/application/project-session.js';
import { turnDraft } from '../support/builders.js';
import { memoryRuntime } from '../support/runtime.js';
import { dbOf } from './projection-control.js';
import { summarize } from './stats.js';

const SESSIONS = Number(process.env.BENCH_FIRST_TURNS ?? 60);
const CITED = Number(process.env.BENCH_FIRST_TURN_CITED ?? 2);
const WARM_UP = 10;

const runtime = await memoryRuntime();
for (let i = 0; i < CITED; i++) {
  const ended = { userId: 'first-turn', sessionId: `ended-${i}` };
  const endedAt = new Date(Date.UTC(2026, 0, 1 + i)).toISOString();
  await runtime.events.append(ended, [turnDraft('t1', `An earlier session ${i} about the pension`), { type: 'SessionSummarised', data: { summary: `Talked about the pension, part ${i}.`, keyTopics: [], endedAt, model: 'bench' } }], new Date(endedAt));
  await projectSession(runtime, ended);
}
const db = dbOf(runtime)!;
/** Statements since the turn was delivered, and when the turn's session document was first written (after how many). */
const probe: { statements: number; written?: { at: number; statements: number } } = { statements: 0 };
const reset = () => {
  probe.statements = 0;
  delete probe.written;
};
const query = db.query.bind(db);
db.query = ((...args: Parameters<typeof db.query>) => ((probe.statements += 1), query(...args))) as typeof db.query;
const put = runtime.sessions.put.bind(runtime.sessions);
runtime.sessions.put = async (doc, version) => {
  const result = await put(doc, version);
  if (!probe.written && doc.projectedThroughSeq >= 1) probe.written = { at: performance.now(), statements: probe.statements };
  return result;
};

let cursor = (await runtime.changeFeed!.readFeed(null, 100_000)).cursor;
const deliver = async () => {
  const batch = await runtime.changeFeed!.readFeed(cursor, 500);
  cursor = batch.cursor ?? cursor;
  await projectHandler(batch.events, invocationContext('cosmos-events-project'));
};
await runtime.embedder.embed(['warm up the embedding model']);
const untilWritten: number[] = [];
const statementsBefore: number[] = [];
const whole: number[] = [];
const statementsInAll: number[] = [];
for (let i = 0; i < SESSIONS; i++) {
  await runtime.events.append({ userId: 'first-turn', sessionId: `s${i}` }, [turnDraft('t1', `The first turn of session ${i}: my pension and the garden plan`)], new Date());
  reset();
  const start = performance.now();
  await deliver();
  await queueHandler({} as never, invocationContext('timer-projection-queue'));
  await deliver(); // the init block's event, projected already: nothing left to write
  if (i < WARM_UP || !probe.written) continue;
  untilWritten.push(probe.written.at - start);
  statementsBefore.push(probe.written.statements);
  whole.push(performance.now() - start);
  statementsInAll.push(probe.statements);
}
await runtime.close();

const ms = (xs: number[]) => `p50 ${summarize(xs).p50.toFixed(1)} ms, p95 ${summarize(xs).p95.toFixed(1)} ms`;
const median = (xs: number[]) => summarize(xs).p50;
console.log(`${untilWritten.length} first turns, one at a time (${WARM_UP} more to warm up), each init block citing ${CITED} ended sessions`);
console.log(`  until the turn's session document is written: ${ms(untilWritten)}; statements before it: ${median(statementsBefore)}`);
console.log(`  the whole first turn (feed, timer, its init block's event): ${ms(whole)}; statements: ${median(statementsInAll)}`);
