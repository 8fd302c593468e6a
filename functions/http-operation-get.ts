import { z } from 'zod';
import { OperationId, OperationStatus } from '../shared/contracts/operations.js';
import { notFound } from '../shared/domain/errors.js';
import { authorizeOperation } from '../shared/platform/auth.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

const Params = z.object({ operationId: OperationId });

/** Readable only by the user the operation acts on (its input's userId) or an all-users principal; else 404. */
export const handler = httpHandler({ params: Params, access: 'handler', response: OperationStatus, summary: 'The status of an operation (session end, reflection, forget)' }, async ({ params, principal }, ctx) => {
  const found = await orchestrationClient(ctx).status(params.operationId);
  if (!found) throw notFound(`Operation ${params.operationId}`);
  const { input, ...status } = found;
  authorizeOperation(principal, input);
  return status;
});

export default defineFunction({ name: 'http-operation-get', trigger: httpDurable('GET', 'v1/operations/{operationId}'), handler });
