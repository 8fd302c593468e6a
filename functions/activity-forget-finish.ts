import { forget } from '../shared/application/workflows/forget.js';
import { activityFunction } from '../shared/platform/workflows.js';

/** Forget, last step: the tombstone cleared. The log line is the forget's audit record besides the operation's output: ids and counts only. */
export default activityFunction(forget.steps.finish, (input) => `forget completed user=${input.userId}${input.sessionId ? ` session=${input.sessionId}` : ''} removed=${input.removed}`);
