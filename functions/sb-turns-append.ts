import type { InvocationContext } from '@azure/functions';
import { appendTurns } from '../shared/application/append-turns.js';
import { endSession } from '../shared/application/session-end.js';
import { MemoryMessage } from '../shared/contracts/service-bus.js';
import { getRuntime } from '../shared/platform/composition.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, serviceBusQueue } from '../shared/platform/functions.js';

/**
 * The append and end commands over Service Bus (queue sessions keep each memory session in order). Turns without a turnId are
 * named after the message id, so a redelivered message is recorded once. A malformed message throws with the reason;
 * the platform retries it and then dead-letters it. Over the memory budget (MEMORY_BUDGET_MB) an append waits for it,
 * then throws `overloaded` having written nothing, so the message is delivered again.
 */
export async function handler(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = MemoryMessage.safeParse(typeof message === 'string' ? safeJson(message) : message);
  if (!parsed.success) {
    throw new Error(`Rejected message ${messageId(ctx)}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'message'}: ${i.message}`).join('; ')}`);
  }
  if (parsed.data.type === 'end') {
    const { userId, sessionId } = parsed.data;
    const { operationId, started } = await endSession(await getRuntime(), orchestrationClient(ctx), { userId, sessionId }, 'client');
    ctx.log(`Session end ${operationId} ${started ? 'started' : 'already started'} from message ${messageId(ctx)}`);
    return;
  }
  const { userId, sessionId, turns } = parsed.data;
  const runtime = await getRuntime();
  // Over the memory budget the message waits here (the queue session with it); still refused after the wait, it throws
  // before anything is written, so Service Bus delivers it again later.
  await runtime.admission?.whenAdmitted(ADMISSION_WAIT_MS);
  const result = await appendTurns(runtime, { userId, sessionId }, { turns }, (index) => `${messageId(ctx)}.${index}`);
  ctx.log(`Appended ${result.accepted.length} turns to ${userId}/${sessionId} from message ${messageId(ctx)}`);
}

/** How long a message waits for the memory budget to take appends again, well inside the session lock (60 s by default). */
const ADMISSION_WAIT_MS = 20_000;

const messageId = (ctx: InvocationContext) => String(ctx.triggerMetadata?.messageId ?? ctx.invocationId);

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export default defineFunction({ name: 'sb-turns-append', trigger: serviceBusQueue('SERVICEBUS_QUEUE'), handler });
