import { AsyncLocalStorage } from 'node:async_hooks';

const background = new AsyncLocalStorage<true>();

/**
 * Runs `work`, and everything it starts, as background work (the change-feed pump, the projection, timers and resumed
 * orchestrations on the local host): on PGlite's one connection its operations wait while requests' operations wait.
 */
export function inBackground<T>(work: () => T): T {
  return background.run(true, work);
}

/**
 * One connection, one operation at a time (PGlite runs every statement and transaction exclusively). When it frees, the
 * next is the first waiting operation of a request, else the first of the background. PGlite's own queue is first come,
 * first served: under a projection backlog an append waited behind every projection statement queued before it
 * (1,000 turns/s with the HNSW indexes of then: append p95 49–55 s; README, Scale).
 *
 * Background work gets the connection only after the event loop has had a turn (setImmediate). PGlite answers on the
 * calling thread, so handing over in a microtask let a backlog's statements run back to back without the loop reading a
 * request or firing a timer: requests went unread, and their clients gave up.
 */
export class PriorityGate {
  private busy = false;
  private readonly requests: (() => void)[] = [];
  private readonly backgroundWork: (() => void)[] = [];

  async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((resolve) => (background.getStore() ? this.backgroundWork : this.requests).push(resolve));
    else this.busy = true;
    try {
      return await operation();
    } finally {
      // Handed over while still busy, so nothing arriving meanwhile can slip in ahead of the queues; a request that
      // arrives before background work's turn goes first.
      const request = this.requests.shift();
      if (request) request();
      else if (this.backgroundWork.length > 0) setImmediate(() => (this.requests.shift() ?? this.backgroundWork.shift()!)());
      else this.busy = false;
    }
  }
}

/** Runs `work`, and everything it starts, as a request's, whatever its caller runs as (inBackground). */
export function asRequest<T>(work: () => T): T {
  return background.exit(work);
}

/** Whether the caller runs as background work (inBackground). */
export const isBackground = (): boolean => background.getStore() === true;
