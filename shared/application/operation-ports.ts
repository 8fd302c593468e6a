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
  /**
   * Deletes the stored history (input, output, events) of these instances if they have finished; a pending or running
   * instance is left as it is. Returns how many were deleted. Unknown ids are skipped, so a repeat is harmless.
   */
  purge(instanceIds: readonly string[]): Promise<number>;
}
