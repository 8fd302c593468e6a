import { deleteSlot } from '../shared/application/slots.js';
import { SlotDeleteHeaders, SlotParams, SlotQuery, DeletedSlot } from '../shared/contracts/slots.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SlotParams, query: SlotQuery, headers: SlotDeleteHeaders, response: DeletedSlot, summary: 'Delete a slot (its stream goes on)', problems: ['precondition_failed', 'scope_owner_required', 'forget_in_progress'] }, async ({ params, query, headers, principal }) =>
  deleteSlot(await getRuntime(), principal, params.userId, params.name, query, headers['if-match'] === undefined ? {} : { ifMatch: headers['if-match'] }),
);

export default defineFunction({ name: 'http-slot-delete', trigger: http('DELETE', 'v1/users/{userId}/slots/{name}'), handler });
