import { getSlot } from '../shared/application/slots.js';
import { SlotParams, SlotQuery, Slot } from '../shared/contracts/slots.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler, Reply } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SlotParams, query: SlotQuery, response: Slot, summary: 'Read a slot (core memory)', problems: ['scope_owner_required'] }, async ({ params, query, principal }) => {
  const slot = await getSlot(await getRuntime(), principal, params.userId, params.name, query);
  return new Reply(slot, { headers: { etag: `"${slot.version}"` } });
});

export default defineFunction({ name: 'http-slot-get', trigger: http('GET', 'v1/users/{userId}/slots/{name}'), handler });
