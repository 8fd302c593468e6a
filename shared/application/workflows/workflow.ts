import type { ZodType } from 'zod';
import type { OrchestrationName } from '../../contracts/operations.js';

/**
 * A workflow is one orchestration and its steps (activities), each declared once here: name, input schema, output
 * schema, retry, run. The orchestrator (functions/orch-*.ts) calls a step through `callStep`, which schedules the
 * step's activity under its name and parses what comes back with its output schema; the activity (functions/activity-*.ts)
 * is built from the same declaration by `activityFunction` (shared/platform/workflows.ts). Nothing here imports
 * durable-functions.
 */

/** How the orchestrator retries a failed step (Durable's RetryOptions, as plain data). */
export interface RetryPolicy {
  readonly firstRetryIntervalMs: number;
  readonly maxAttempts: number;
  readonly backoffCoefficient: number;
  readonly maxRetryIntervalMs: number;
}

/** Steps that call models or stores: 4 attempts, 2 s doubling, at most 30 s apart. */
export const MODEL_RETRY: RetryPolicy = { firstRetryIntervalMs: 2_000, maxAttempts: 4, backoffCoefficient: 2, maxRetryIntervalMs: 30_000 };

/** What is known of a step without its dependencies: enough to schedule it and to check its result. */
export interface StepInfo<I = unknown, O = unknown> {
  /** The activity's function name, and its file: functions/<name>.ts. */
  readonly name: `activity-${string}`;
  /** Parsed by the orchestrator before it schedules the step and by the activity when it runs. */
  readonly input: ZodType<I>;
  /**
   * Parsed by the activity before the result enters the history and by the orchestrator when it reads the result (also
   * from a history written by an older version: a field added later needs a default).
   */
  readonly output: ZodType<O>;
  /** Absent: the first failure fails the orchestration. */
  readonly retry?: RetryPolicy;
}

/** A step: the use case it runs, with the ports `D` it needs (the runtime provides them). */
export interface Step<D, I, O> extends StepInfo<I, O> {
  readonly run: (deps: D, input: I) => Promise<O>;
}

export interface Workflow<In, Out, Steps extends Record<string, StepInfo>> {
  /** The orchestration's function name (ORCHESTRATIONS). */
  readonly name: OrchestrationName;
  readonly input: ZodType<In>;
  /** What the orchestration returns (the operation's output); a parent orchestration parses it with this. */
  readonly output: ZodType<Out>;
  readonly steps: Steps;
}

/** Declares a step; the identity, for inference. */
export const step = <D, I, O>(declaration: Step<D, I, O>): Step<D, I, O> => declaration;

/** Declares a workflow; the identity, for inference. */
export const workflow = <In, Out, Steps extends Record<string, StepInfo>>(declaration: Workflow<In, Out, Steps>): Workflow<In, Out, Steps> => declaration;
