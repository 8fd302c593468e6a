import { restoreSnapshot } from '../shared/application/artifacts.js';
import { RestoreSnapshotBody, RestoreSnapshotResult, SnapshotParams } from '../shared/contracts/artifacts.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: SnapshotParams, body: RestoreSnapshotBody, response: RestoreSnapshotResult, summary: 'Copy a snapshot\'s artifacts into an agent\'s view', problems: ['forget_in_progress'] }, async ({ params, body }) =>
  restoreSnapshot(await getRuntime(), params.userId, params.snapshotId, body),
);

export default defineFunction({ name: 'http-snapshot-restore', trigger: http('POST', 'v1/users/{userId}/snapshots/{snapshotId}/restore'), handler });
