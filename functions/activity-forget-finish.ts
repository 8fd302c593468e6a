import { forget } from '../shared/application/workflows/forget.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Forget, last step: the tombstone cleared (or kept, when a late write enlisted after the scan). The log line is the forget's audit record besides the operation's output: ids and counts only. */
export default activityFunction(forget.steps.finish, (input, { cleared }) => `forget ${cleared ? 'completed' : 'scans again (a late write enlisted)'} user=${input.userId}${input.sessionId ? ` session=${input.sessionId}` : ''} removed=${input.removed}`);
