import type { ChildProcess } from 'node:child_process';
import { forkTypeScript } from './child-process.js';
import type { LoadResult } from './load.js';

export type ClientKind = 'fetch' | 'node';

export const CLIENT_NAMES: Record<ClientKind, string> = {
  fetch: 'global fetch (undici, keep-alive)',
  node: 'node:http with http.Agent({keepAlive:true})',
};

/** Jobs the worker can run; paths and bodies are generated inside the worker. */
export type Job =
  /** Closed loop of POST .../turns with `batch` turns each, spread round-robin over `sessions` sessions of user `label`. */
  | { kind: 'append'; client: ClientKind; label: string; total: number; concurrency: number; batch: number; sessions: number; maxMs?: number }
  /**
   * Appends started every `periodMs` (open loop), `batch` turns each (default 1); every append's last seq and wall-clock
   * times are returned. With `users`, request i goes to user `<label>-u<i mod users>`, else to user `label`.
   */
  | { kind: 'appendSteady'; client: ClientKind; label: string; total: number; periodMs: number; sessions: number; batch?: number; users?: number }
  /** Closed loop of GET .../context on random sessions of one user. */
  | { kind: 'context'; client: ClientKind; userId: string; sessionIds: string[]; total: number; concurrency: number; seed: number; maxTokens: number; agentId?: string; maxMs?: number };

export interface JobResult extends LoadResult {
  /** appendSteady only. `sent`/`acked` are wall-clock ms (performance.timeOrigin + performance.now()). */
  appends: { user: string; session: string; seq: number; sent: number; acked: number }[];
}

/**
 * An HTTP load generator in a child process: the service under test keeps its event loop, its heap and its resident
 * memory to itself, as with real clients in other processes. (On 2 cores the client still competes for CPU with the
 * service.)
 */
export class LoadClient {
  private readonly child: ChildProcess;
  private next = 0;
  private readonly pending = new Map<number, { resolve: (r: JobResult) => void; reject: (e: Error) => void }>();

  constructor(baseUrl: string, maxSockets: number) {
    this.child = forkTypeScript(new URL('./http-worker.ts', import.meta.url), { BENCH_HTTP_WORKER: JSON.stringify({ baseUrl, maxSockets }) });
    this.child.on('message', (m: { id: number; result?: JobResult; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(m.error));
      else p?.resolve(m.result!);
    });
    this.child.on('error', (error) => this.pending.forEach((p) => p.reject(error)));
    this.child.on('exit', (code) => this.pending.forEach((p) => p.reject(new Error(`the load client exited (${code})`))));
  }

  run(job: Job): Promise<JobResult> {
    const id = this.next++;
    return new Promise<JobResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, job });
    });
  }

  async close(): Promise<void> {
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send('close');
    await Promise.race([exited, new Promise<void>((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.child.kill();
  }
}
