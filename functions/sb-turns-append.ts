import type { InvocationContext } from '@azure/functions';
import { appendTurns } from '../shared/application/append-turns.js';
import { AppendTurnsMessage } from '../shared/contracts/service-bus.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, serviceBusQueue } from '../shared/platform/functions.js';

/**
 * The append command over Service Bus (queue sessions keep each memory session in order). Turns without a turnId are
 * named after the message id, so a redelivered message is recorded once. A malformed message throws with the reason;
 * the platform retries it and then dead-letters it.
 */
export async function handler(message: unknown, ctx: InvocationContext): Promise<void> {
  const parsed = AppendTurnsMessage.safeParse(typeof message === 'string' ? safeJson(message) : message);
  if (!parsed.success) {
    throw new Error(`Rejected message ${messageId(ctx)}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'message'}: ${i.message}`).join('; ')}`);
  }
  const { userId, sessionId, turns } = parsed.data;
  const result = await appendTurns(await getRuntime(), { userId, sessionId }, { turns }, (index) => `${messageId(ctx)}.${index}`);
  ctx.log(`Appended ${result.accepted.length} turns to ${userId}/${sessionId} from message ${messageId(ctx)}`);
}

const messageId = (ctx: InvocationContext) => String(ctx.triggerMetadata?.messageId ?? ctx.invocationId);

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export default defineFunction({ name: 'sb-turns-append', trigger: serviceBusQueue('SERVICEBUS_QUEUE'), handler });
