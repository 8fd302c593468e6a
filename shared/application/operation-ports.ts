import type { OperationStatus, OrchestrationName } from '../contracts/operations.js';

/**
 * Starts and reads orchestrations: the Durable client in Azure, the local durable runner at home
 * (shared/platform/durable.ts picks one per invocation).
 */
export interface OrchestrationClient {
  /** Starts `name` as `instanceId` unless that instance exists and has not failed (then `started` is false). */
  start(name: OrchestrationName, instanceId: string, input: unknown): Promise<{ instanceId: string; started: boolean }>;
  /** The operation's status and its input (for authorization; never returned to a caller), or null for an unknown instance. */
  status(instanceId: string): Promise<(OperationStatus & { input?: unknown }) | null>;
}
