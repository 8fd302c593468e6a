import type { InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import type { OrchestrationClient } from '../application/operation-ports.js';
import { progressOf, type OperationStatus } from '../contracts/operations.js';

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
  const status = async (instanceId: string): Promise<(OperationStatus & { input?: unknown }) | null> => {
    let s: df.DurableOrchestrationStatus | undefined;
    try {
      s = await client.getStatus(instanceId, { showInput: true });
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
      ...progressOf(s.customStatus),
      ...(s.output !== undefined && s.output !== null && { output: s.output }),
      ...(s.input !== undefined && { input: s.input }),
      ...(String(s.runtimeStatus) === 'Failed' && { error: typeof s.output === 'string' ? s.output : 'failed' }),
    };
  };
  return {
    status,
    async purge(instanceIds) {
      let deleted = 0;
      for (const id of instanceIds) {
        const existing = await status(id);
        if (!existing || existing.status === 'pending' || existing.status === 'running') continue;
        deleted += (await client.purgeInstanceHistory(id)).instancesDeleted;
      }
      return deleted;
    },
    async start(name, instanceId, input) {
      const existing = await status(instanceId);
      // A failed or terminated instance may be started again under its id; anything else already ran or runs.
      if (existing && existing.status !== 'failed') return { instanceId, started: false };
      await client.startNew(name, { instanceId, input });
      return { instanceId, started: true };
    },
  };
}
