/**
 * A stand-in for the model thread (shared/adapters/local-models/model-worker.ts), for ModelThread's own tests and the
 * projection's: `embed` answers a fixed 2-d vector per text, except that the text 'crash' kills the thread with an
 * uncaught error and 'exit' ends it with exit code 7; `periods` answers each turn's own instant as its period, except
 * that a thread started while MODEL_STUB_PERIODS_CRASH is set dies on it (a thread reads the environment it started with);
 * the chat task `resourceLimits` answers the thread's own V8 heap limits.
 */
import { parentPort, resourceLimits } from 'node:worker_threads';
import type { ModelReply, ModelRequest } from '../../shared/adapters/local-models/model-thread.js';

const crash = () =>
  setTimeout(() => {
    throw new Error('stub model exploded');
  });

parentPort!.on('message', (request: ModelRequest) => {
  if (request.op === 'embed' && request.texts[0] === 'crash') return void crash();
  if (request.op === 'periods' && process.env.MODEL_STUB_PERIODS_CRASH) return void crash();
  if (request.op === 'embed' && request.texts[0] === 'exit') process.exit(7);
  const reply: ModelReply =
    request.op === 'embed'
      ? { id: request.id, ok: true, vectors: { rows: request.texts.length, dimensions: 2, data: Float32Array.from(request.texts.flatMap((t) => [t.length, 1])) } }
      : request.op === 'periods'
        ? { id: request.id, ok: true, periods: request.turns.map(({ at }) => ({ from: at, to: at })) }
        : request.op === 'solve' && request.task === 'resourceLimits'
          ? { id: request.id, ok: true, output: resourceLimits }
          : { id: request.id, ok: true };
  parentPort!.postMessage(reply);
});
