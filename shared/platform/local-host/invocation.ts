import { randomUUID } from 'node:crypto';
import azureFunctions, { type InvocationContext as Context, type RetryContext } from '@azure/functions';

// The package is CommonJS; its classes are reachable only through the default export under ESM.
const { InvocationContext } = azureFunctions;

const LEVELS = ['trace', 'debug', 'information', 'warning', 'error', 'critical'] as const;
const minimum = Math.max(0, LEVELS.indexOf((process.env.LOG_LEVEL ?? 'information') as (typeof LEVELS)[number]));

/** An InvocationContext like the host's, logging to stdout/stderr at LOG_LEVEL (default information). */
export function invocationContext(functionName: string, triggerMetadata: Record<string, unknown> = {}, retryContext?: RetryContext): Context {
  return new InvocationContext({
    functionName,
    invocationId: randomUUID(),
    triggerMetadata,
    ...(retryContext && { retryContext }),
    logHandler: (level, ...args) => {
      if (LEVELS.indexOf(level as (typeof LEVELS)[number]) < minimum) return;
      const line = `[${new Date().toISOString()}] ${functionName} ${level}: ${args.map(String).join(' ')}`;
      if (level === 'error' || level === 'critical' || level === 'warning') console.error(line);
      else console.log(line);
    },
  });
}
