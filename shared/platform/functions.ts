import { app, type CosmosDBv4FunctionOptions, type ExponentialBackoffRetryOptions, type HttpHandler, type InvocationContext, type Timer } from '@azure/functions';
import * as df from 'durable-functions';
import type { OrchestrationHandler } from 'durable-functions';
import { settings } from './config.js';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type Trigger =
  /**
   * `durableClient`: the function starts or queries orchestrations (a durable client input binding in Azure).
   * `anonymous`: Azure asks no function key for it (the API reference, which a browser opens as it is); every other
   * HTTP function has `authLevel: 'function'`.
   */
  | { kind: 'http'; methods: HttpMethod[]; route: string; durableClient?: boolean; anonymous?: boolean }
  /**
   * The Cosmos DB change feed of a container in `%COSMOS_DATABASE%`, leases in `leases`. `retry`: the function-level
   * retry policy, without which the trigger would checkpoint past a batch whose function threw.
   */
  | { kind: 'cosmosChangeFeed'; container: string; retry: ExponentialBackoffRetryOptions }
  /** A session-enabled Service Bus queue named by an app setting. */
  | { kind: 'serviceBusQueue'; queueSetting: string; durableClient?: boolean }
  /** A timer whose NCRONTAB schedule is an app setting; it always gets a durable client. */
  | { kind: 'timer'; scheduleSetting: string }
  /** A Durable Functions orchestrator (a generator; deterministic) and an activity. */
  | { kind: 'orchestration' }
  /** `durableClient`: the activity purges or reads orchestration instances (a durable client input binding in Azure). */
  | { kind: 'activity'; durableClient?: boolean };

export type ChangeFeedHandler = (documents: unknown[], ctx: InvocationContext) => Promise<void>;
export type MessageHandler = (message: unknown, ctx: InvocationContext) => Promise<void>;
export type TimerHandler = (timer: Timer, ctx: InvocationContext) => Promise<void>;
export type ActivityHandler = (input: unknown, ctx: InvocationContext) => Promise<unknown>;
export type { OrchestrationHandler };

export type FunctionDescriptor =
  | { name: string; trigger: Extract<Trigger, { kind: 'http' }>; handler: HttpHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'cosmosChangeFeed' }>; handler: ChangeFeedHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'serviceBusQueue' }>; handler: MessageHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'timer' }>; handler: TimerHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'orchestration' }>; handler: OrchestrationHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'activity' }>; handler: ActivityHandler };

export const http = (method: HttpMethod | HttpMethod[], route: string, options: { anonymous?: boolean; durableClient?: boolean } = {}) => ({
  kind: 'http' as const,
  methods: Array.isArray(method) ? method : [method],
  route,
  ...(options.anonymous && { anonymous: true }),
  ...(options.durableClient && { durableClient: true }),
});

/**
 * The retry of a change-feed function in Azure. The Cosmos DB trigger checkpoints after every invocation, failed or
 * not, so without a retry policy a batch whose function threw is never delivered again. With it, the host re-runs the
 * same batch in place (the lease does not advance meanwhile) after 2 s, 4 s, 8 s … up to 2 min between attempts, 10
 * retries (≈ 10 min) in all; only then does it checkpoint past the batch. A handler that projects from per-session
 * checkpoints (cosmos-events-project) still catches up those sessions on their next event or at session end.
 */
export const CHANGE_FEED_RETRY = {
  strategy: 'exponentialBackoff',
  maxRetryCount: 10,
  minimumInterval: { seconds: 2 },
  maximumInterval: { minutes: 2 },
} as const satisfies ExponentialBackoffRetryOptions;

/** True on the last attempt the retry policy allows (the local pump passes the same retry context). */
export const isLastRetry = (ctx: InvocationContext): boolean => {
  const retry = ctx.retryContext;
  return retry !== undefined && retry.maxRetryCount >= 0 && retry.retryCount >= retry.maxRetryCount;
};

export const cosmosChangeFeed = (container: string, retry: ExponentialBackoffRetryOptions = CHANGE_FEED_RETRY) => ({ kind: 'cosmosChangeFeed' as const, container, retry });
/** The queue's one consumer also ends sessions, so it gets a durable client. */
export const serviceBusQueue = (queueSetting: string) => ({ kind: 'serviceBusQueue' as const, queueSetting, durableClient: true });
/** An HTTP function that starts or queries orchestrations. */
export const httpDurable = (method: HttpMethod, route: string) => http(method, route, { durableClient: true });
export const timer = (scheduleSetting: string) => ({ kind: 'timer' as const, scheduleSetting });
export const orchestration = () => ({ kind: 'orchestration' as const });
export const activity = (options: { durableClient?: boolean } = {}) => ({ kind: 'activity' as const, ...(options.durableClient && { durableClient: true }) });

let registerWithAzure = true;

/** The local host serves descriptors itself; it turns registration off so the library does not warn per function. */
export function disableAzureRegistration(): void {
  registerWithAzure = false;
}

/**
 * Declares a function once for both hosts: registers it with the Azure Functions app (a no-op with a one-line
 * notice outside the Functions host) and returns the descriptor the local host serves.
 */
export function defineFunction<D extends FunctionDescriptor>(descriptor: D): D {
  const d: FunctionDescriptor = descriptor;
  if (!registerWithAzure) return descriptor;
  // Under the Functions host the settings are read at registration, so a host without AUTH_MODE (or with a malformed
  // setting) fails to start instead of answering requests (shared/platform/config.ts, checkAuth).
  settings();
  switch (d.trigger.kind) {
    case 'http':
      app.http(d.name, {
        methods: d.trigger.methods,
        route: d.trigger.route,
        authLevel: d.trigger.anonymous ? 'anonymous' : 'function',
        ...(d.trigger.durableClient && { extraInputs: [df.input.durableClient()] }),
        handler: d.handler as HttpHandler,
      });
      break;
    case 'cosmosChangeFeed':
      app.cosmosDB(d.name, changeFeedOptions(d.trigger, d.handler as ChangeFeedHandler));
      break;
    case 'serviceBusQueue':
      app.serviceBusQueue(d.name, {
        connection: 'SERVICEBUS',
        queueName: `%${d.trigger.queueSetting}%`,
        isSessionsEnabled: true,
        ...(d.trigger.durableClient && { extraInputs: [df.input.durableClient()] }),
        handler: d.handler as MessageHandler,
      });
      break;
    case 'timer':
      app.timer(d.name, { schedule: `%${d.trigger.scheduleSetting}%`, extraInputs: [df.input.durableClient()], handler: d.handler as TimerHandler });
      break;
    case 'orchestration':
      df.app.orchestration(d.name, d.handler as OrchestrationHandler);
      break;
    case 'activity':
      df.app.activity(d.name, { handler: d.handler as ActivityHandler, ...(d.trigger.durableClient && { extraInputs: [df.input.durableClient()] }) });
      break;
  }
  return descriptor;
}

/** What a change-feed function registers with: identity connection `COSMOS`, settings-named database, its retry policy. */
export function changeFeedOptions(trigger: Extract<Trigger, { kind: 'cosmosChangeFeed' }>, handler: ChangeFeedHandler): CosmosDBv4FunctionOptions {
  return {
    connection: 'COSMOS',
    databaseName: '%COSMOS_DATABASE%',
    containerName: trigger.container,
    leaseContainerName: 'leases',
    createLeaseContainerIfNotExists: false,
    startFromBeginning: true,
    retry: trigger.retry,
    handler,
  };
}
