import { requestForget } from '../shared/application/forget.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { OperationAccepted } from '../shared/contracts/operations.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** Forget one session of the user: 202 `{operationId}`; the operation's output is the purge report. */
export const handler = httpHandler({ params: SessionKey, status: 202, response: OperationAccepted, summary: 'Forget one session (the operation\'s output is the purge report)' }, async ({ params }, ctx) => {
  const { operationId } = await requestForget(orchestrationClient(ctx), params);
  return { operationId };
});

export default defineFunction({ name: 'http-session-forget', trigger: httpDurable('DELETE', 'v1/users/{userId}/sessions/{sessionId}'), handler });
