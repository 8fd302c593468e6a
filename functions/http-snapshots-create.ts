import { z } from 'zod';
import { createSnapshot } from '../shared/application/artifacts.js';
import { CreateSnapshotBody, Snapshot } from '../shared/contracts/artifacts.js';
import { Id } from '../shared/contracts/ids.js';
import { viewerFor } from '../shared/application/viewer.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), body: CreateSnapshotBody, response: Snapshot, status: 201, summary: 'Snapshot chosen artifacts for a sub-agent', problems: ['forget_in_progress'] }, async ({ params, body, principal }) => {
  const runtime = await getRuntime();
  return createSnapshot(runtime, await viewerFor(runtime, principal, { userId: params.userId, agentId: body.fromAgentId, sessionId: body.sessionId }), body);
});

export default defineFunction({ name: 'http-snapshots-create', trigger: http('POST', 'v1/users/{userId}/snapshots'), handler });
