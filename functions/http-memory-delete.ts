import { deleteMemory } from '../shared/application/artifacts.js';
import { DeletedMemory, MemoryKeyParams } from '../shared/contracts/artifacts.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: MemoryKeyParams, response: DeletedMemory, summary: 'Delete an artifact and its blob' }, async ({ params }) => deleteMemory(await getRuntime(), params.userId, params.key));

export default defineFunction({ name: 'http-memory-delete', trigger: http('DELETE', 'v1/users/{userId}/memories/{key}'), handler });
