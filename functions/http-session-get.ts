import { getSessionStatus } from '../shared/application/get-session-status.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { SessionStatus } from '../shared/contracts/sessions.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, response: SessionStatus, summary: 'Session status: lifecycle, projection progress, threads and handoffs' }, async ({ params }) => getSessionStatus(await getRuntime(), params));

export default defineFunction({ name: 'http-session-get', trigger: http('GET', 'v1/users/{userId}/sessions/{sessionId}'), handler });
