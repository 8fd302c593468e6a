import { z } from 'zod';
import { ProfileResult, synthesiseLongTermProfile } from '../shared/application/long-term-reflection.js';
import { Id } from '../shared/contracts/ids.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Long-term reflection: pending insights + current profile → the new profile; insights processed or superseded. */
export const handler = activityHandler(z.object({ userId: Id }), ProfileResult, async ({ userId }) => synthesiseLongTermProfile(await getRuntime(), userId));

export default defineFunction({ name: 'activity-profile-synthesise', trigger: activity(), handler });
