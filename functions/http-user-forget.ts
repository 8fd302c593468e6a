import { z } from 'zod';
import { requestForget } from '../shared/application/forget.js';
import { Id } from '../shared/contracts/ids.js';
import { OperationAccepted } from '../shared/contracts/operations.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** Forget the user: 202 `{operationId}`; the operation's output is the purge report. */
export const handler = httpHandler({ params: z.object({ userId: Id }), status: 202, response: OperationAccepted, summary: 'Forget the user (the operation\'s output is the purge report)' }, async ({ params }, ctx) => {
  const { operationId } = await requestForget(orchestrationClient(ctx), { userId: params.userId });
  return { operationId };
});

export default defineFunction({ name: 'http-user-forget', trigger: httpDurable('DELETE', 'v1/users/{userId}'), handler });
