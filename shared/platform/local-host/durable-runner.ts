import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type { InvocationContext } from '@azure/functions';
import type { OrchestrationClient } from '../../application/operation-ports.js';
import { progressOf, type OperationStatus } from '../../contracts/operations.js';
import type { ActivityHandler, FunctionDescriptor, OrchestrationHandler } from '../functions.js';
import type { DurableStateStore, HistoryEvent, InstanceState } from './durable-state.js';
import { invocationContext } from './invocation.js';

/**
 * The package's own replay engine (durable-functions 3.5.0, pinned): `createOrchestrator(fn)` returns the listener the
 * Durable extension calls. Internal and untyped, hence the narrow local types.
 */
interface OrchestratorState {
  isDone: boolean;
  actions: RawAction[][];
  output?: unknown;
  /** What the orchestrator last passed to `setCustomStatus`. */
  customStatus?: unknown;
}
type Listener = (trigger: Record<string, unknown>, ctx: InvocationContext) => Promise<OrchestratorState>;
const require = createRequire(import.meta.url);
const { createOrchestrator } = require('durable-functions/lib/src/util/testingUtils') as { createOrchestrator: (fn: OrchestrationHandler) => Listener };

interface RetryOptions {
  firstRetryIntervalInMilliseconds: number;
  maxNumberOfAttempts: number;
  backoffCoefficient?: number;
  maxRetryIntervalInMilliseconds?: number;
}

interface RawAction {
  actionType: number;
  functionName?: string;
  input?: unknown;
  instanceId?: string;
  retryOptions?: RetryOptions;
  fireAt?: string | Date;
}

/** History event and action type numbers of the Durable protocol. */
export const EventType = {
  ExecutionStarted: 0,
  TaskScheduled: 4,
  TaskCompleted: 5,
  TaskFailed: 6,
  SubOrchestrationInstanceCreated: 7,
  SubOrchestrationInstanceCompleted: 8,
  SubOrchestrationInstanceFailed: 9,
  TimerCreated: 10,
  TimerFired: 11,
  OrchestratorStarted: 12,
} as const;
const ActionType = { CallActivity: 0, CallActivityWithRetry: 1, CallSubOrchestrator: 2, CallSubOrchestratorWithRetry: 3, CreateTimer: 5 } as const;
const SCHEDULING: readonly number[] = [EventType.TaskScheduled, EventType.SubOrchestrationInstanceCreated, EventType.TimerCreated];

/** Thrown by a test hook to simulate the process dying: the runner stops without persisting the step in flight. */
export class RunnerCrash extends Error {
  constructor() {
    super('local durable runner stopped (simulated crash)');
    this.name = 'RunnerCrash';
  }
}

export interface RunnerOptions {
  /** Called after each activity ran, before its completion is persisted (tests throw RunnerCrash here). */
  afterActivity?: (name: string, instanceId: string) => void | Promise<void>;
  /** Activities of one fan-out run at most this many at a time. */
  maxParallelActivities?: number;
  /** Multiplies retry and timer delays (tests use 0). */
  delayScale?: number;
  now?: () => Date;
  log?: (message: string) => void;
}

/**
 * Runs the app's orchestrator generators the way the Durable extension does, on this machine: each step replays the
 * persisted history through the package's replay engine, executes the new actions it returns (activities with their
 * RetryOptions, fan-outs, sub-orchestrations, timers), appends the resulting events, and persists the instance. The
 * engine enforces the replay rules (a non-deterministic orchestrator fails on replay as it would in Azure). A crash
 * between an activity and the persist re-runs that activity on resume, so activities must be idempotent.
 */
export class LocalDurableRunner implements OrchestrationClient {
  private readonly orchestrators = new Map<string, Listener>();
  private readonly activities = new Map<string, ActivityHandler>();
  private readonly running = new Map<string, Promise<InstanceState>>();
  private stopping = false;
  private readonly stopped = new AbortController();
  private readonly now: () => Date;

  constructor(
    functions: readonly FunctionDescriptor[],
    private readonly store: DurableStateStore,
    private readonly options: RunnerOptions = {},
  ) {
    for (const f of functions) {
      if (f.trigger.kind === 'orchestration') this.orchestrators.set(f.name, createOrchestrator(f.handler as OrchestrationHandler));
      if (f.trigger.kind === 'activity') this.activities.set(f.name, f.handler as ActivityHandler);
    }
    this.now = options.now ?? (() => new Date());
  }

  async start(name: string, instanceId: string, input: unknown, parentId?: string): Promise<{ instanceId: string; started: boolean }> {
    if (!this.orchestrators.has(name)) throw new Error(`No orchestration named ${name}`);
    const at = this.now().toISOString();
    const fresh: InstanceState = {
      instanceId,
      name,
      status: 'pending',
      input,
      history: [],
      actionCount: 0,
      ...(parentId && { parentId }),
      createdAt: at,
      updatedAt: at,
    };
    let started = await this.store.create(fresh);
    if (!started) {
      const existing = await this.store.get(instanceId);
      // Like the Durable extension: a failed instance may be started again under its id.
      if (existing?.status === 'failed' && !this.running.has(instanceId)) {
        await this.store.save(fresh);
        started = true;
      }
    }
    if (started) void this.kick(instanceId);
    return { instanceId, started };
  }

  async status(instanceId: string): Promise<(OperationStatus & { input?: unknown }) | null> {
    const s = await this.store.get(instanceId);
    if (!s) return null;
    return {
      operationId: s.instanceId,
      name: s.name,
      status: s.status,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      ...progressOf(s.customStatus),
      ...(s.output !== undefined && { output: s.output }),
      ...(s.error !== undefined && { error: s.error }),
      ...(s.input !== undefined && { input: s.input }),
    };
  }

  async purge(instanceIds: readonly string[]): Promise<number> {
    let deleted = 0;
    for (const id of instanceIds) if (!this.running.has(id) && (await this.store.deleteFinished(id))) deleted++;
    return deleted;
  }

  /** Resumes every unfinished top-level instance (children are driven again by their parents' replay). */
  async resumeAll(): Promise<string[]> {
    const unfinished = (await this.store.unfinished()).filter((s) => !s.parentId);
    for (const s of unfinished) void this.kick(s.instanceId);
    return unfinished.map((s) => s.instanceId);
  }

  /** Resolves when the instance is completed or failed (or the runner stops). */
  async waitFor(instanceId: string, timeoutMs = 60_000): Promise<InstanceState> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.running.get(instanceId)?.catch(() => undefined);
      const s = await this.store.get(instanceId);
      if (!s) throw new Error(`No instance ${instanceId}`);
      // Done, or not (any more) run by this runner: a crashed run leaves the instance unfinished until a resume.
      if (s.status === 'completed' || s.status === 'failed' || this.stopping || !this.running.has(instanceId)) return s;
      if (Date.now() > deadline) throw new Error(`Instance ${instanceId} did not finish in ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  /** Lets steps in flight finish (and persist), then stops; a durable timer's wait ends at once, unpersisted. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    await Promise.allSettled([...this.running.values()]);
  }

  private kick(instanceId: string): Promise<InstanceState> {
    let run = this.running.get(instanceId);
    if (!run) {
      run = this.drive(instanceId).finally(() => this.running.delete(instanceId));
      // Failures are recorded on the instance; a crash (test hook) only stops this run.
      run.catch((error: unknown) => this.options.log?.(`durable runner: ${instanceId} stopped: ${error instanceof Error ? error.name : 'unknown'}`));
      this.running.set(instanceId, run);
    }
    return run;
  }

  private async drive(instanceId: string): Promise<InstanceState> {
    const state = await this.store.get(instanceId);
    if (!state) throw new Error(`No instance ${instanceId}`);
    const listener = this.orchestrators.get(state.name);
    if (!listener) throw new Error(`No orchestration named ${state.name}`);
    if (state.history.length === 0) {
      const at = this.now().toISOString();
      state.history = [event(EventType.OrchestratorStarted, at), event(EventType.ExecutionStarted, at, { Name: state.name, Input: JSON.stringify(state.input ?? null) })];
    }
    while (!this.stopping && (state.status === 'pending' || state.status === 'running')) {
      let result: OrchestratorState;
      try {
        result = await listener(
          { history: state.history, input: state.input, instanceId, isReplaying: false, upperSchemaVersion: 0, parentInstanceId: state.parentId ?? '' },
          invocationContext(state.name, { instanceId }),
        );
      } catch (error) {
        await this.finish(state, 'failed', undefined, failureMessage(error));
        break;
      }
      const progressed = result.customStatus !== undefined && JSON.stringify(result.customStatus) !== JSON.stringify(state.customStatus);
      if (progressed) state.customStatus = result.customStatus;
      if (result.isDone) {
        await this.finish(state, 'completed', result.output);
        break;
      }
      const fresh = result.actions.flat().slice(state.actionCount);
      if (fresh.length === 0) {
        await this.finish(state, 'failed', undefined, 'The orchestration waits for something the local durable runner does not deliver (external events, entities)');
        break;
      }
      // As with the Durable extension, a new custom status is readable while the new actions run (a timer may take minutes).
      if (progressed) {
        state.status = 'running';
        state.updatedAt = this.now().toISOString();
        await this.store.save(state);
      }
      const events = await this.execute(state, fresh);
      if (this.stopping && events === null) break;
      state.history.push(...(events ?? []));
      state.actionCount += fresh.length;
      state.status = 'running';
      state.updatedAt = this.now().toISOString();
      await this.store.save(state);
    }
    return state;
  }

  private async finish(state: InstanceState, status: 'completed' | 'failed', output?: unknown, error?: string) {
    state.status = status;
    if (output !== undefined) state.output = output;
    if (error !== undefined) state.error = error;
    state.updatedAt = this.now().toISOString();
    await this.store.save(state);
  }

  /** Executes one batch of new actions; returns the history events they produced (null: stopped midway, nothing to persist). */
  private async execute(state: InstanceState, actions: readonly RawAction[]): Promise<HistoryEvent[] | null> {
    let nextId = state.history.filter((e) => SCHEDULING.includes(e.EventType)).length;
    const at = () => this.now().toISOString();
    const events: HistoryEvent[] = [event(EventType.OrchestratorStarted, at())];
    interface Item {
      action: RawAction;
      id: number;
      attempt: number;
    }
    let round: Item[] = actions.map((action) => ({ action, id: nextId++, attempt: 1 }));
    for (const item of round) events.push(this.scheduled(item.action, item.id, state.instanceId, at()));

    while (round.length > 0) {
      const outcomes = await this.bounded(round, (item) => this.run(item.action, item.id, state));
      if (outcomes === null) return null;
      const retrying: Item[] = [];
      const timers: { item: Item; timerId: number; fireAt: Date }[] = [];
      round.forEach((item, i) => {
        const outcome = outcomes[i]!;
        events.push(this.completion(item.action, item.id, outcome, at()));
        const retry = item.action.retryOptions;
        if (outcome.ok || !retry) return;
        // The engine waits on a timer after each failed attempt, then fails the task or expects the next attempt.
        const delay = Math.min(retry.firstRetryIntervalInMilliseconds * (retry.backoffCoefficient ?? 1) ** (item.attempt - 1), retry.maxRetryIntervalInMilliseconds ?? Infinity);
        timers.push({ item, timerId: -1, fireAt: new Date(this.now().getTime() + delay * (this.options.delayScale ?? 1)) });
      });
      for (const t of timers) {
        t.timerId = nextId++;
        events.push(event(EventType.TimerCreated, at(), { EventId: t.timerId, FireAt: t.fireAt.toISOString() }));
      }
      const latest = Math.max(0, ...timers.map((t) => t.fireAt.getTime() - this.now().getTime()));
      if (latest > 0) await sleep(latest);
      for (const t of timers) {
        events.push(event(EventType.TimerFired, at(), { TimerId: t.timerId, FireAt: t.fireAt.toISOString() }));
        if (t.item.attempt < t.item.action.retryOptions!.maxNumberOfAttempts) retrying.push({ ...t.item, attempt: t.item.attempt + 1 });
      }
      for (const item of retrying) {
        item.id = nextId++;
        events.push(this.scheduled(item.action, item.id, state.instanceId, at()));
      }
      round = retrying;
    }
    return events;
  }

  private scheduled(action: RawAction, id: number, parentId: string, at: string): HistoryEvent {
    switch (action.actionType) {
      case ActionType.CallActivity:
      case ActionType.CallActivityWithRetry:
        return event(EventType.TaskScheduled, at, { EventId: id, Name: action.functionName });
      case ActionType.CallSubOrchestrator:
      case ActionType.CallSubOrchestratorWithRetry:
        return event(EventType.SubOrchestrationInstanceCreated, at, { EventId: id, Name: action.functionName, InstanceId: childId(action, parentId, id) });
      case ActionType.CreateTimer:
        return event(EventType.TimerCreated, at, { EventId: id, FireAt: new Date(action.fireAt!).toISOString() });
      default:
        throw new Error(`The local durable runner does not support action type ${action.actionType}`);
    }
  }

  private completion(action: RawAction, id: number, outcome: Outcome, at: string): HistoryEvent {
    if (action.actionType === ActionType.CreateTimer) return event(EventType.TimerFired, at, { TimerId: id, FireAt: new Date(action.fireAt!).toISOString() });
    const sub = action.actionType === ActionType.CallSubOrchestrator || action.actionType === ActionType.CallSubOrchestratorWithRetry;
    if (outcome.ok) {
      return event(sub ? EventType.SubOrchestrationInstanceCompleted : EventType.TaskCompleted, at, {
        TaskScheduledId: id,
        ...(outcome.result !== undefined && { Result: JSON.stringify(outcome.result) }),
      });
    }
    return event(sub ? EventType.SubOrchestrationInstanceFailed : EventType.TaskFailed, at, { TaskScheduledId: id, Reason: outcome.reason, Details: outcome.details });
  }

  /** Runs one action to its outcome. A RunnerCrash propagates (nothing of the batch is persisted). */
  private async run(action: RawAction, id: number, parent: InstanceState): Promise<Outcome> {
    const input = typeof action.input === 'string' ? (JSON.parse(action.input) as unknown) : action.input;
    if (action.actionType === ActionType.CreateTimer) {
      const wait = (new Date(action.fireAt!).getTime() - this.now().getTime()) * (this.options.delayScale ?? 1);
      // A stop ends the wait like a crash (nothing of the batch persisted): on resume the replay sets the timer again,
      // its fire time from the history's clock, and what is left of it is waited out.
      if (wait > 0) await sleep(wait, undefined, { signal: this.stopped.signal }).catch(() => Promise.reject(new RunnerCrash()));
      return { ok: true, result: undefined };
    }
    if (action.actionType === ActionType.CallSubOrchestrator || action.actionType === ActionType.CallSubOrchestratorWithRetry) {
      const instanceId = childId(action, parent.instanceId, id);
      const { started } = await this.start(action.functionName!, instanceId, input, parent.instanceId);
      const existing = await this.store.get(instanceId);
      if (!started && existing && (existing.status === 'pending' || existing.status === 'running')) await this.kick(instanceId);
      const child = await this.waitFor(instanceId, 24 * 3_600_000);
      if (child.status === 'completed') return { ok: true, result: child.output };
      if (child.status === 'failed') return { ok: false, reason: child.error ?? 'failed', details: child.error ?? '' };
      throw new RunnerCrash();
    }
    const handler = this.activities.get(action.functionName!);
    if (!handler) return { ok: false, reason: `No activity named ${action.functionName}`, details: '' };
    let outcome: Outcome;
    try {
      outcome = { ok: true, result: await handler(input, invocationContext(action.functionName!, { instanceId: parent.instanceId })) };
    } catch (error) {
      outcome = { ok: false, reason: error instanceof Error ? `${error.name}: ${error.message}` : String(error), details: error instanceof Error ? (error.stack ?? '') : '' };
    }
    await this.options.afterActivity?.(action.functionName!, parent.instanceId);
    return outcome;
  }

  /** Runs items with bounded parallelism, keeping their order. */
  private async bounded<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[] | null> {
    const results: R[] = new Array<R>(items.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await fn(items[i]!);
    };
    await Promise.all(Array.from({ length: Math.min(items.length, this.options.maxParallelActivities ?? 8) }, worker));
    return results;
  }
}

type Outcome = { ok: true; result: unknown } | { ok: false; reason: string; details: string };

function event(type: number, at: string, extra: Record<string, unknown> = {}): HistoryEvent {
  return { EventType: type, EventId: -1, Timestamp: at, IsPlayed: false, ...extra };
}

const childId = (action: RawAction, parentId: string, id: number) => action.instanceId ?? `${parentId}:${id}`;

/** The engine throws `<message>\n\n$OutOfProcData$:<state JSON>`; the state's `error` says what the orchestrator threw. */
function failureMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const [head, state] = message.split('$OutOfProcData$:');
  if (state) {
    try {
      const parsed = JSON.parse(state) as { error?: unknown };
      // "Error: <reason> \n <details>": the reason, without the stack.
      if (typeof parsed.error === 'string') return parsed.error.split(' \n ')[0]!.trim();
    } catch {
      // Not JSON: fall back to the message.
    }
  }
  return head!.trim() || 'failed';
}
