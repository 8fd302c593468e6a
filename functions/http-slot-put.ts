import { putSlot } from '../shared/application/slots.js';
import { PutSlotBody, SlotParams, SlotQuery, SlotWriteHeaders, Slot } from '../shared/contracts/slots.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler, Reply } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SlotParams, query: SlotQuery, body: PutSlotBody, headers: SlotWriteHeaders, response: Slot, summary: 'Write a slot (core memory); If-Match / If-None-Match make it conditional', problems: ['precondition_failed', 'scope_owner_required', 'forget_in_progress'] }, async ({ params, query, body, headers, principal }) => {
  const condition = { ...(headers['if-match'] !== undefined && { ifMatch: headers['if-match'] }), ...(headers['if-none-match'] && { ifNoneMatch: headers['if-none-match'] }) };
  const { slot, created } = await putSlot(await getRuntime(), principal, params.userId, params.name, query, body, condition);
  return new Reply(slot, { status: created ? 201 : 200, headers: { etag: `"${slot.version}"` } });
});

export default defineFunction({ name: 'http-slot-put', trigger: http('PUT', 'v1/users/{userId}/slots/{name}'), handler });
