import { z } from 'zod';
import { Id } from '../shared/contracts/ids.js';
import { OperationAccepted, ORCHESTRATIONS, reflectionInstanceId } from '../shared/contracts/operations.js';
import { getRuntime } from '../shared/platform/composition.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** Manual long-term reflection: one run per user and second, so a double click starts it once. */
export const handler = httpHandler({ params: z.object({ userId: Id }), status: 202, response: OperationAccepted, summary: 'Start a long-term reflection' }, async ({ params }, ctx) => {
  const runId = `manual-${(await getRuntime()).clock.now().toISOString().slice(0, 19).replace(/[^0-9T]/g, '')}`;
  const { instanceId } = await orchestrationClient(ctx).start(ORCHESTRATIONS.longTermReflection, reflectionInstanceId(params.userId, runId), { userId: params.userId });
  return { operationId: instanceId };
});

export default defineFunction({ name: 'http-reflection-start', trigger: httpDurable('POST', 'v1/users/{userId}/reflection'), handler });
