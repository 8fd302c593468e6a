import { setImmediate as eventLoopTurn } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import type { Transaction } from '@electric-sql/pglite';
import { copyBinary, createPglite } from './pglite.js';
import type { PgliteReply, PgliteRequest, PgliteThreadData, ThreadError } from './pglite-thread.js';

/** PGlite's own thread (pglite-thread.ts): serves the service thread's operations one at a time, requests' first. */
const port = parentPort!;
const { dataDir, ...options } = workerData as PgliteThreadData;
const reply = (message: PgliteReply, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);

type Queued = Extract<PgliteRequest, { op: 'query' | 'exec' | 'copy' | 'begin' }>;
const requests: Queued[] = [];
const background: Queued[] = [];
/** Open transactions by id, and what ends each (its `end` request). */
const transactions = new Map<number, Transaction>();
const endings = new Map<number, (end: Extract<PgliteRequest, { op: 'end' }>) => void>();
let draining = false;

try {
  const { pglite, statements } = await createPglite(dataDir, options);
  /** A transaction's end asked for a rollback (not an error of its own). */
  const ROLLBACK = Symbol('rollback');

  const answer = async (id: number, work: () => Promise<unknown>): Promise<void> => {
    try {
      const value = await work();
      reply({ id, ok: true, value }, value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []);
    } catch (error) {
      reply({ id, ok: false, error: threadError(error) });
    }
  };

  // Holds PGlite until its `end` arrives; the statements sent meanwhile run on it as they come (the message handler).
  const transaction = (begin: Queued) =>
    new Promise<void>((done) => {
      let started = false;
      let endId = 0;
      pglite
        .transaction(async (tx) => {
          transactions.set(begin.id, tx);
          started = true;
          reply({ id: begin.id, ok: true, value: begin.id });
          await new Promise<void>((commit, rollback) =>
            endings.set(begin.id, (end) => {
              endId = end.id;
              if (end.commit) commit();
              else rollback(ROLLBACK);
            }),
          );
        })
        .then(
          () => reply({ id: endId, ok: true }),
          (error: unknown) => reply(error === ROLLBACK ? { id: endId, ok: true } : { id: started ? endId : begin.id, ok: false, error: threadError(error) }),
        )
        .finally(() => {
          transactions.delete(begin.id);
          endings.delete(begin.id);
          done();
        });
    });

  const run = (request: Queued, on: Pick<Transaction, 'exec'> = pglite): Promise<void> => {
    switch (request.op) {
      case 'query':
        // A transaction's statements run on PGlite's one connection too: prepared statements serve them.
        return answer(request.id, () => statements.query(request.sql, request.params?.map(asBuffer)));
      case 'exec':
        return answer(request.id, async () => void (await on.exec(request.sql)));
      case 'copy':
        return answer(request.id, () => copyBinary(pglite, request.sql));
      case 'begin':
        return transaction(request);
    }
  };

  // One operation at a time; an event-loop turn between two lets requests that arrived meanwhile go first.
  const drain = async () => {
    if (draining) return;
    draining = true;
    try {
      for (let next = requests.shift() ?? background.shift(); next; next = requests.shift() ?? background.shift()) {
        await run(next);
        await eventLoopTurn();
      }
    } finally {
      draining = false;
    }
  };

  port.on('message', (request: PgliteRequest) => {
    if (request.op === 'end') return endings.get(request.tx)?.(request);
    if (request.op === 'close') return void answer(request.id, () => pglite.close());
    if ((request.op === 'query' || request.op === 'exec') && request.tx !== undefined) {
      const tx = transactions.get(request.tx);
      return void (tx ? run(request, tx) : reply({ id: request.id, ok: false, error: { name: 'Error', message: `No open transaction ${request.tx}` } }));
    }
    (request.background ? background : requests).push(request);
    void drain();
  });
  reply({ id: 0, ok: true });
} catch (error) {
  reply({ id: 0, ok: false, error: threadError(error) });
}

/** A byte array arrives as a Uint8Array; PGlite's float4[] serializer (createPglite) sends a Buffer in binary. */
function asBuffer(value: unknown): unknown {
  return value instanceof Uint8Array && !Buffer.isBuffer(value) ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : value;
}

/** An error's name, message and its own text and number fields (PostgreSQL's `code`, `detail`, `constraint`, …). */
function threadError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const fields = Object.entries(error).filter((entry): entry is [string, string | number] => typeof entry[1] === 'string' || typeof entry[1] === 'number');
  return { ...Object.fromEntries(fields), name: error.name, message: error.message };
}
