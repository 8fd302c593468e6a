import type { InvocationContext, Timer } from '@azure/functions';
import { endIdleSessions } from '../shared/application/session-end.js';
import { getRuntime } from '../shared/platform/composition.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, timer } from '../shared/platform/functions.js';

/** Idle timeout: active sessions without a turn for SESSION_IDLE_TIMEOUT_MINUTES are ended (session-end orchestration). */
export async function handler(_timer: Timer, ctx: InvocationContext): Promise<void> {
  const runtime = await getRuntime();
  const { ended } = await endIdleSessions(runtime, orchestrationClient(ctx), runtime.settings.SESSION_IDLE_TIMEOUT_MINUTES);
  ctx.log(`Idle check: ${ended.length} sessions ended`);
}

export default defineFunction({ name: 'timer-sessions-idle', trigger: timer('IDLE_CHECK_SCHEDULE'), handler });
