import type { Worker } from 'node:worker_threads';
import { SHORT_LIVED_HEAP, siblingModule, startWorker } from '../worker-threads.js';
import type { Db, Queryable } from './db.js';
import type { PgliteOptions } from './pglite.js';
import { isBackground } from './priority-gate.js';

/**
 * What the service's thread asks PGlite's (pglite-worker.ts). `background` orders the operations as PriorityGate does;
 * `tx` names the transaction a statement belongs to (its `begin`'s id).
 */
export type PgliteRequest =
  | { id: number; op: 'query'; sql: string; params?: unknown[]; background?: boolean; tx?: number }
  | { id: number; op: 'exec'; sql: string; background?: boolean; tx?: number }
  | { id: number; op: 'copy'; sql: string; background: boolean }
  | { id: number; op: 'begin'; background: boolean }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close' };

/** An error as the thread sends it back: its name, message and PostgreSQL's fields (`code`, `detail`, …). */
export type ThreadError = { name: string; message: string } & Record<string, string | number>;

/** PGlite's answer to request `id`; id 0 answers the start (the database opened, or why not). */
export type PgliteReply = { id: number; ok: true; value?: unknown } | { id: number; ok: false; error: ThreadError };

export interface PgliteThreadData extends PgliteOptions {
  dataDir: string | undefined;
}

/**
 * PGlite on a thread of its own. Postgres in WASM runs there, and so do PGlite's wire protocol and row parsing; this
 * thread sends statements and gets their rows. Operations are queued on PGlite's thread, requests' before the
 * background's (as PriorityGate orders them in-thread), so its next statement never waits for this thread to be free.
 * A transaction's statements are sent from here one by one while PGlite holds the transaction open.
 */
export async function openPgliteThread(dataDir: string | undefined, options: PgliteOptions): Promise<Db> {
  const workerData: PgliteThreadData = { dataDir, ...(options.sharedBuffersMb !== undefined && { sharedBuffersMb: options.sharedBuffersMb }) };
  // A small young generation: 28 MB of heap under a backlog instead of 53, and full collections later (README, Bounded memory).
  const worker = startWorker(siblingModule(import.meta.url, 'pglite-worker'), { workerData, resourceLimits: SHORT_LIVED_HEAP });
  const calls = new PgliteCalls(worker);
  await calls.opened;
  const inTransaction = (tx: number): Queryable => ({
    query: <T>(sql: string, params?: unknown[]) => calls.send<T[]>({ op: 'query', sql, params, tx }),
    exec: (sql) => calls.send<void>({ op: 'exec', sql, tx }),
  });
  return {
    kind: 'pglite',
    query: <T>(sql: string, params?: unknown[]) => calls.send<T[]>({ op: 'query', sql, params, background: isBackground() }),
    exec: (sql) => calls.send<void>({ op: 'exec', sql, background: isBackground() }),
    copyBinary: (sql) => calls.send<Uint8Array>({ op: 'copy', sql, background: isBackground() }),
    async transaction(fn) {
      const tx = await calls.send<number>({ op: 'begin', background: isBackground() });
      let result;
      try {
        result = await fn(inTransaction(tx));
      } catch (error) {
        // Rolled back; if the thread is gone, the next operation says so.
        await calls.send({ op: 'end', tx, commit: false }).catch(() => undefined);
        throw error;
      }
      await calls.send({ op: 'end', tx, commit: true });
      return result;
    },
    async close() {
      await calls.send({ op: 'close' });
      await worker.terminate();
    },
  };
}

type Distribute<T> = T extends unknown ? Omit<T, 'id'> : never;

/** The requests in flight to PGlite's thread, answered by id. The thread keeps the process alive only while one is. */
class PgliteCalls {
  readonly opened: Promise<unknown>;
  private readonly pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  private failure: Error | undefined;

  constructor(private readonly worker: Worker) {
    this.opened = new Promise((resolve, reject) => this.pending.set(0, { resolve, reject }));
    worker.on('message', (reply: PgliteReply) => this.settle(reply));
    worker.on('error', (error) => this.fail(new Error(`PGlite's thread failed: ${error.name}`)));
    worker.on('exit', (code) => this.fail(new Error(`PGlite's thread exited (code ${code})`)));
  }

  send<T>(request: Distribute<PgliteRequest>): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.worker.postMessage({ ...request, id });
    });
  }

  private settle(reply: PgliteReply): void {
    const call = this.pending.get(reply.id);
    if (!call) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.worker.unref();
    if (reply.ok) call.resolve(reply.value);
    else call.reject(Object.assign(new Error(reply.error.message), reply.error));
  }

  private fail(error: Error): void {
    this.failure ??= error;
    for (const call of this.pending.values()) call.reject(this.failure);
    this.pending.clear();
  }
}
