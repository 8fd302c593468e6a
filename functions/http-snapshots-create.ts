import { z } from 'zod';
import { createSnapshot } from '../shared/application/artifacts.js';
import { CreateSnapshotBody, Snapshot } from '../shared/contracts/artifacts.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), body: CreateSnapshotBody, response: Snapshot, status: 201, summary: 'Snapshot chosen artifacts for a sub-agent' }, async ({ params, body }) =>
  createSnapshot(await getRuntime(), params.userId, body),
);

export default defineFunction({ name: 'http-snapshots-create', trigger: http('POST', 'v1/users/{userId}/snapshots'), handler });
