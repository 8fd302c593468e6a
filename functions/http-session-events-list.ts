import { listSessionEvents } from '../shared/application/session-events.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { SessionEventsQuery } from '../shared/contracts/sessions.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, query: SessionEventsQuery }, async ({ params, query }) => listSessionEvents(await getRuntime(), params, query));

export default defineFunction({ name: 'http-session-events-list', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/events'), handler });
