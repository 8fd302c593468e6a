import { z } from 'zod';
import { storeMemory } from '../shared/application/artifacts.js';
import { ArtifactSummary, StoreMemoryBody } from '../shared/contracts/artifacts.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { settings } from '../shared/platform/config.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

/** Room for the JSON escaping of an artifact at the maximum size; the content itself is checked against ARTIFACT_MAX_BYTES (413). */
const maxBodyBytes = () => Math.max(settings().MAX_REQUEST_BYTES, settings().ARTIFACT_MAX_BYTES * 2 + 65_536);

export const handler = httpHandler({ params: z.object({ userId: Id }), body: StoreMemoryBody, response: ArtifactSummary, status: 201, maxBodyBytes, summary: 'Store an artifact in detail memory', problems: ['conflict', 'forget_in_progress', 'scope_owner_required'] }, async ({ params, body, principal }) =>
  storeMemory(await getRuntime(), principal, params.userId, body),
);

export default defineFunction({ name: 'http-memories-create', trigger: http('POST', 'v1/users/{userId}/memories'), handler });
