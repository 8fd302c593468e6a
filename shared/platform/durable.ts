import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { ZodType } from 'zod';
import type { OperationStatus } from '../contracts/insights.js';
import type { ActivityHandler } from './functions.js';

/** What functions need from Durable Functions' client: start an instance once, read its status. */
export interface OrchestrationClient {
  /** Starts `name` as `instanceId` unless that instance exists already (then `started` is false). */
  start(name: string, instanceId: string, input: unknown): Promise<{ instanceId: string; started: boolean }>;
  status(instanceId: string): Promise<OperationStatus | null>;
}

let local: OrchestrationClient | undefined;

/** The local host (and tests) run orchestrations with the local durable runner instead of the Durable extension. */
export function useLocalOrchestrationClient(client: OrchestrationClient | undefined): void {
  local = client;
}

const STATUS: Record<string, OperationStatus['status']> = {
  Pending: 'pending',
  Running: 'running',
  ContinuedAsNew: 'running',
  Suspended: 'running',
  Completed: 'completed',
  Failed: 'failed',
  Terminated: 'failed',
  Canceled: 'failed',
};

/** The orchestration client of this invocation: the Durable extension's (durable client input) or the local runner. */
export function orchestrationClient(ctx: InvocationContext): OrchestrationClient {
  if (local) return local;
  const client = df.getClient(ctx);
  const status = async (instanceId: string): Promise<OperationStatus | null> => {
    let s: df.DurableOrchestrationStatus | undefined;
    try {
      s = await client.getStatus(instanceId);
    } catch (error) {
      // The client answers an unknown instance with a 404 error; anything else is a real failure.
      if (error instanceof Error && /404|not found/i.test(error.message)) return null;
      throw error;
    }
    if (!s?.name) return null;
    return {
      operationId: instanceId,
      name: s.name,
      status: STATUS[String(s.runtimeStatus)] ?? 'running',
      createdAt: new Date(s.createdTime).toISOString(),
      updatedAt: new Date(s.lastUpdatedTime).toISOString(),
      ...(s.output !== undefined && s.output !== null && { output: s.output }),
      ...(String(s.runtimeStatus) === 'Failed' && { error: typeof s.output === 'string' ? s.output : 'failed' }),
    };
  };
  return {
    status,
    async start(name, instanceId, input) {
      const existing = await status(instanceId);
      // A failed or terminated instance may be started again under its id; anything else already ran or runs.
      if (existing && existing.status !== 'failed') return { instanceId, started: false };
      await client.startNew(name, { instanceId, input });
      return { instanceId, started: true };
    },
  };
}

/** An activity: input parsed with its schema, the use case run, and its result checked before it enters the history. */
export function activityHandler<I, O>(input: ZodType<I>, output: ZodType<O>, run: (input: I) => Promise<O>): ActivityHandler {
  return async (raw) => output.parse(await run(input.parse(raw)));
}

/** The retry policy of activities that call models or stores: 4 attempts, 2 s doubling, at most 30 s apart. */
export function modelRetry(): df.RetryOptions {
  const retry = new df.RetryOptions(2_000, 4);
  retry.backoffCoefficient = 2;
  retry.maxRetryIntervalInMilliseconds = 30_000;
  return retry;
}
