import { z } from 'zod';
import { OperationId } from '../shared/contracts/operations.js';
import { notFound } from '../shared/domain/errors.js';
import { orchestrationClient } from '../shared/platform/durable.js';
import { defineFunction, httpDurable } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

const Params = z.object({ operationId: OperationId });

export const handler = httpHandler({ params: Params }, async ({ params }, ctx) => {
  const status = await orchestrationClient(ctx).status(params.operationId);
  if (!status) throw notFound(`Operation ${params.operationId}`);
  return status;
});

export default defineFunction({ name: 'http-operation-get', trigger: httpDurable('GET', 'v1/operations/{operationId}'), handler });
