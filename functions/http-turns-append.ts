import { appendTurns } from '../shared/application/append-turns.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { AppendTurnsBody } from '../shared/contracts/turns.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, body: AppendTurnsBody, status: 202 }, async ({ params, body }) =>
  appendTurns(await getRuntime(), params, body),
);

export default defineFunction({ name: 'http-turns-append', trigger: http('POST', 'v1/users/{userId}/sessions/{sessionId}/turns'), handler });
