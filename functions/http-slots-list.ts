import { z } from 'zod';
import { listSlots } from '../shared/application/slots.js';
import { Id } from '../shared/contracts/ids.js';
import { ListSlotsQuery, SlotList } from '../shared/contracts/slots.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), query: ListSlotsQuery, response: SlotList, summary: 'The slots the reader may see' }, async ({ params, query, principal }) =>
  listSlots(await getRuntime(), principal, params.userId, query),
);

export default defineFunction({ name: 'http-slots-list', trigger: http('GET', 'v1/users/{userId}/slots'), handler });
