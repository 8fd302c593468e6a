/**
 * The model thread (started by model-thread.ts): owns the Universal Sentence Encoder, runs the local chat model's rules
 * and parses the periods turns refer to, so their synchronous TensorFlow.js / NLP work never blocks the event loop that
 * serves requests.
 * The thread cannot reach the network: every socket API is replaced first.
 */
import { readlinkSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import { parentPort, workerData } from 'node:worker_threads';
import type { ChatTaskInput, ChatTaskName } from '../../application/model-tasks.js';
import { MemoryError } from '../../domain/errors.js';
import type { ModelReply, ModelRequest, ModelThreadData } from './model-thread.js';
import type { EncoderModel } from './use-lite.js';

/** The model files come from an npm package on disk; anything that tries a socket here is a bug, so it fails loudly. */
function forbidNetwork(): void {
  const refuse = (what: string) =>
    function (): never {
      throw new MemoryError('internal', `The model thread attempted network access (${what})`);
    };
  globalThis.fetch = refuse('fetch') as typeof fetch;
  http.request = refuse('http.request') as typeof http.request;
  http.get = refuse('http.get') as typeof http.get;
  https.request = refuse('https.request') as typeof https.request;
  https.get = refuse('https.get') as typeof https.get;
  net.connect = refuse('net.connect') as typeof net.connect;
  net.createConnection = refuse('net.createConnection') as typeof net.createConnection;
  net.Socket.prototype.connect = refuse('socket.connect') as typeof net.Socket.prototype.connect;
  tls.connect = refuse('tls.connect') as typeof tls.connect;
}

/**
 * On Linux this thread gets a higher nice value than the request-serving thread (see ModelThreadOptions.nice), so on
 * a saturated machine requests get the CPU first. Best effort: elsewhere, or where the kernel refuses, the thread
 * keeps the process's priority and only the scheduling preference is lost.
 */
function lowerPriority(nice: number): void {
  if (process.platform !== 'linux' || nice <= 0) return;
  try {
    const tid = Number(readlinkSync('/proc/thread-self').split('/').pop());
    if (Number.isInteger(tid) && tid > 0) os.setPriority(tid, Math.min(19, Math.max(os.getPriority(tid), nice)));
  } catch {
    // No /proc or no permission: same priority as the process.
  }
}

forbidNetwork();
lowerPriority((workerData as ModelThreadData).nice);

// Each part loads after the guard (so nothing it loads can open a socket either), and only what that part needs:
// TensorFlow and the weights for embeddings on the first `load` or `embed`, compromise for the chat tasks on the first
// task or with the model's `load`, compromise-dates on the first `periods` (with hosted models, all it loads).
let encoder: Promise<EncoderModel> | undefined;
const loadEncoder = () =>
  (encoder ??= import('./use-lite.js')
    .then(({ loadUniversalSentenceEncoder }) => loadUniversalSentenceEncoder())
    .catch((error: unknown) => {
      encoder = undefined; // the next request tries again
      throw error;
    }));
const tasks = () => import('./local-tasks.js');
const periods = () => import('./periods.js');

async function handle(request: ModelRequest): Promise<ModelReply> {
  switch (request.op) {
    case 'load':
      await loadEncoder();
      // The chat rules too, before the load is answered: loaded later, they held the thread's next requests (a search's
      // query waited 140-400 ms after a start) as a thread's first chat task would hold a projection. A failed load is
      // retried by that first task.
      await tasks().catch(() => undefined);
      return { id: request.id, ok: true };
    case 'embed': {
      const rows = await (await loadEncoder()).embed(request.texts);
      const dimensions = rows[0]?.length ?? 0;
      // Float32 is what the model computes in, so the flat copy is exact; its buffer is transferred, not cloned.
      const flat = new Float32Array(rows.length * dimensions);
      rows.forEach((row, i) => {
        if (row.length !== dimensions) throw new MemoryError('internal', `The sentence encoder returned rows of ${row.length} and ${dimensions} dimensions`);
        flat.set(row, i * dimensions);
      });
      return { id: request.id, ok: true, vectors: { rows: rows.length, dimensions, data: flat } };
    }
    case 'solve':
      return { id: request.id, ok: true, output: (await tasks()).solveLocalTask(request.task as ChatTaskName, request.input as ChatTaskInput<ChatTaskName>) };
    case 'periods':
      return { id: request.id, ok: true, periods: await (await periods()).inProcessPeriods.referredPeriods(request.turns) };
  }
}

const errorReply = (id: number, error: unknown): ModelReply => ({
  id,
  ok: false,
  error:
    error instanceof MemoryError
      ? { message: error.message, code: error.code, details: error.details }
      : { message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) },
});

/**
 * One request at a time. Chat tasks and periods go before waiting embedding batches: a projection runs an interaction's
 * task before it embeds and waits on its turns' periods, so either queued behind other sessions' embeddings would hold
 * its whole session back. Each caller waits for one answer before it asks again, so its own requests keep their order.
 */
const waiting: { tasks: ModelRequest[]; rest: ModelRequest[] } = { tasks: [], rest: [] };
let busy = false;

async function work(): Promise<void> {
  busy = true;
  for (;;) {
    await new Promise((resolve) => setImmediate(resolve)); // let messages already sent arrive, so a task can go first
    const request = waiting.tasks.shift() ?? waiting.rest.shift();
    if (!request) break;
    let reply: ModelReply;
    try {
      reply = await handle(request);
    } catch (error) {
      reply = errorReply(request.id, error);
    }
    try {
      parentPort!.postMessage(reply, reply.ok && reply.vectors ? [reply.vectors.data.buffer as ArrayBuffer] : []);
    } catch (error) {
      // An output that cannot be cloned: answer with the error instead of leaving the caller waiting.
      parentPort!.postMessage(errorReply(request.id, error));
    }
  }
  busy = false;
}

parentPort!.on('message', (request: ModelRequest) => {
  (request.op === 'solve' || request.op === 'periods' ? waiting.tasks : waiting.rest).push(request);
  if (!busy) void work();
});
