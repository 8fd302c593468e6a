import { endSession } from '../shared/application/session-end.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { OperationAccepted } from '../shared/contracts/operations.js';
import { getRuntime } from '../shared/platform/composition.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, status: 202, response: OperationAccepted, summary: 'End a session: starts the session-end orchestration once', problems: ['forget_in_progress'] }, async ({ params }, ctx) => {
  const { operationId } = await endSession(await getRuntime(), orchestrationClient(ctx), params, 'client');
  return { operationId };
});

export default defineFunction({ name: 'http-session-end', trigger: httpDurable('POST', 'v1/users/{userId}/sessions/{sessionId}/end'), handler });
