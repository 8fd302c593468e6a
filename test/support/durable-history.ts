import { createRequire } from 'node:module';
import azureFunctions from '@azure/functions';
import type { OrchestrationHandler } from 'durable-functions';

const require = createRequire(import.meta.url);
const { createOrchestrator } = require('durable-functions/lib/src/util/testingUtils') as {
  createOrchestrator: (fn: OrchestrationHandler) => (trigger: Record<string, unknown>, ctx: unknown) => Promise<{ isDone: boolean; actions: Action[][]; output?: unknown; customStatus?: unknown }>;
};

export interface Action {
  actionType: number;
  functionName?: string;
  input?: unknown;
  instanceId?: string;
  retryOptions?: { firstRetryIntervalInMilliseconds: number; maxNumberOfAttempts: number };
  fireAt?: string | Date;
}

/**
 * Builds Durable histories by hand, as the extension would write them: every scheduling event (task, timer,
 * sub-orchestration) takes the next sequence number, and completions point back at it.
 */
export class History {
  readonly events: Record<string, unknown>[] = [];
  private next = 0;

  constructor(
    readonly input: unknown,
    private at = '2026-01-05T10:00:00.000Z',
  ) {
    this.started();
    this.events.push({ EventType: 0, EventId: -1, IsPlayed: false, Timestamp: at, Input: JSON.stringify(input) });
  }

  /** A new episode (the orchestrator runs again), optionally at a later time. */
  started(at = this.at): this {
    this.at = at;
    this.events.push({ EventType: 12, EventId: -1, IsPlayed: false, Timestamp: at });
    return this;
  }

  scheduled(name: string): number {
    const id = this.next++;
    this.events.push({ EventType: 4, EventId: id, Name: name, IsPlayed: false, Timestamp: this.at });
    return id;
  }

  completed(id: number, result: unknown): this {
    this.events.push({ EventType: 5, EventId: -1, TaskScheduledId: id, Result: JSON.stringify(result), IsPlayed: false, Timestamp: this.at });
    return this;
  }

  failed(id: number, reason: string): this {
    this.events.push({ EventType: 6, EventId: -1, TaskScheduledId: id, Reason: reason, Details: 'stack', IsPlayed: false, Timestamp: this.at });
    return this;
  }

  /** The timer the engine waits on after a failed attempt of a task with retry options. */
  retryTimer(): this {
    const id = this.next++;
    this.events.push({ EventType: 10, EventId: id, FireAt: this.at, IsPlayed: false, Timestamp: this.at });
    this.events.push({ EventType: 11, EventId: -1, TimerId: id, FireAt: this.at, IsPlayed: false, Timestamp: this.at });
    return this;
  }

  /** A durable timer (`createTimer`) created and fired at `fireAt`, in a new episode at that time. */
  timer(fireAt: string): this {
    const id = this.next++;
    this.events.push({ EventType: 10, EventId: id, FireAt: fireAt, IsPlayed: false, Timestamp: this.at });
    this.started(fireAt);
    this.events.push({ EventType: 11, EventId: -1, TimerId: id, FireAt: fireAt, IsPlayed: false, Timestamp: fireAt });
    return this;
  }

  subCreated(name: string, instanceId: string): number {
    const id = this.next++;
    this.events.push({ EventType: 7, EventId: id, Name: name, InstanceId: instanceId, IsPlayed: false, Timestamp: this.at });
    return id;
  }

  subCompleted(id: number, result: unknown): this {
    this.events.push({ EventType: 8, EventId: -1, TaskScheduledId: id, Result: JSON.stringify(result), IsPlayed: false, Timestamp: this.at });
    return this;
  }

  /** Scheduled and completed in one step (a sequential activity call), optionally in an episode at a later time. */
  call(name: string, result: unknown, at?: string): this {
    return this.started(at).completed(this.scheduled(name), result);
  }
}

/** Replays `history` through the package's replay engine. A failing orchestration rejects with the engine's error. */
export async function replay(fn: OrchestrationHandler, history: History, instanceId = 'test-instance') {
  const listener = createOrchestrator(fn);
  const ctx = new azureFunctions.InvocationContext({ functionName: 'test', invocationId: 'i', logHandler: () => undefined });
  const state = await listener({ history: history.events, input: history.input, instanceId, isReplaying: false, upperSchemaVersion: 0, parentInstanceId: '' }, ctx);
  return { ...state, flat: state.actions.flat() };
}
