import { appendTurns } from '../shared/application/append-turns.js';
import { SessionKey } from '../shared/contracts/ids.js';
import { AppendTurnsBody, AppendTurnsResult } from '../shared/contracts/turns.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SessionKey, body: AppendTurnsBody, response: AppendTurnsResult, status: 202, summary: 'Append 1–100 turns (idempotent per turnId)', problems: ['session_ended', 'forget_in_progress', 'overloaded'] }, async ({ params, body }) =>
  appendTurns(await getRuntime(), params, body),
);

export default defineFunction({ name: 'http-turns-append', trigger: http('POST', 'v1/users/{userId}/sessions/{sessionId}/turns'), handler });
