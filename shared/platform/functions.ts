import { app, type HttpHandler, type InvocationContext } from '@azure/functions';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export type Trigger =
  | { kind: 'http'; methods: HttpMethod[]; route: string }
  /** The Cosmos DB change feed of a container in `%COSMOS_DATABASE%`, leases in `leases`. */
  | { kind: 'cosmosChangeFeed'; container: string }
  /** A session-enabled Service Bus queue named by an app setting. */
  | { kind: 'serviceBusQueue'; queueSetting: string };

export type ChangeFeedHandler = (documents: unknown[], ctx: InvocationContext) => Promise<void>;
export type MessageHandler = (message: unknown, ctx: InvocationContext) => Promise<void>;

export type FunctionDescriptor =
  | { name: string; trigger: Extract<Trigger, { kind: 'http' }>; handler: HttpHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'cosmosChangeFeed' }>; handler: ChangeFeedHandler }
  | { name: string; trigger: Extract<Trigger, { kind: 'serviceBusQueue' }>; handler: MessageHandler };

export const http = (method: HttpMethod, route: string) => ({ kind: 'http' as const, methods: [method], route });
export const cosmosChangeFeed = (container: string) => ({ kind: 'cosmosChangeFeed' as const, container });
export const serviceBusQueue = (queueSetting: string) => ({ kind: 'serviceBusQueue' as const, queueSetting });

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
  switch (d.trigger.kind) {
    case 'http':
      app.http(d.name, { methods: d.trigger.methods, route: d.trigger.route, authLevel: 'function', handler: d.handler as HttpHandler });
      break;
    case 'cosmosChangeFeed':
      app.cosmosDB(d.name, {
        connection: 'COSMOS',
        databaseName: '%COSMOS_DATABASE%',
        containerName: d.trigger.container,
        leaseContainerName: 'leases',
        createLeaseContainerIfNotExists: false,
        startFromBeginning: true,
        handler: d.handler as ChangeFeedHandler,
      });
      break;
    case 'serviceBusQueue':
      app.serviceBusQueue(d.name, {
        connection: 'SERVICEBUS',
        queueName: `%${d.trigger.queueSetting}%`,
        isSessionsEnabled: true,
        handler: d.handler as MessageHandler,
      });
      break;
  }
  return descriptor;
}
