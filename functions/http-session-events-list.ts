import { listSessionEvents } from '../shared/application/session-events.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { SessionEventsPage, SessionEventsQuery } from '../shared/contracts/sessions.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, query: SessionEventsQuery, response: SessionEventsPage, summary: 'The session\'s event stream, a page at a time' }, async ({ params, query }) => listSessionEvents(await getRuntime(), params, query));

export default defineFunction({ name: 'http-session-events-list', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}/events'), handler });
