/**
 * A stand-in for the offline-model thread (shared/adapters/local-models/model-worker.ts), for ModelThread's own tests:
 * `embed` answers a fixed 2-d vector per text, except that the text 'crash' kills the thread with an uncaught error
 * and 'exit' ends it with exit code 7.
 */
import { parentPort } from 'node:worker_threads';
import type { ModelReply, ModelRequest } from '../../shared/adapters/local-models/model-thread.js';

parentPort!.on('message', (request: ModelRequest) => {
  if (request.op === 'embed' && request.texts[0] === 'crash') {
    setTimeout(() => {
      throw new Error('stub model exploded');
    });
    return;
  }
  if (request.op === 'embed' && request.texts[0] === 'exit') process.exit(7);
  const reply: ModelReply =
    request.op === 'embed'
      ? { id: request.id, ok: true, vectors: { rows: request.texts.length, dimensions: 2, data: Float32Array.from(request.texts.flatMap((t) => [t.length, 1])) } }
      : { id: request.id, ok: true };
  parentPort!.postMessage(reply);
});
