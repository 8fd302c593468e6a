import { z } from 'zod';
import { Id } from './ids.js';
import { AppendTurnsBody } from './turns.js';

/** Service Bus messages carry the HTTP bodies plus `type`; the queue session id is `<userId>:<sessionId>`. */
export const AppendTurnsMessage = AppendTurnsBody.extend({
  type: z.literal('append'),
  userId: Id,
  sessionId: Id,
}).strict();

export const EndSessionMessage = z.object({ type: z.literal('end'), userId: Id, sessionId: Id }).strict();

export const MemoryMessage = z.discriminatedUnion('type', [AppendTurnsMessage, EndSessionMessage]);
export type MemoryMessage = z.infer<typeof MemoryMessage>;
