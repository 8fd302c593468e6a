import { recordHandoff } from '../shared/application/handoff.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { HandoffBody, HandoffResult } from '../shared/contracts/sessions.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, body: HandoffBody, response: HandoffResult, status: 201, summary: 'Hand the session over from one agent to another', problems: ['session_ended', 'forget_in_progress'] }, async ({ params, body }) => recordHandoff(await getRuntime(), params, body));

export default defineFunction({ name: 'http-session-handoffs-create', trigger: http('POST', 'v1/users/{userId}/sessions/{sessionId}/handoffs'), handler });
