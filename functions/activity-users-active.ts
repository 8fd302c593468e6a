import { z } from 'zod';
import { ActiveUsersResult, usersActiveSince } from '../shared/application/long-term-reflection.js';
import { getRuntime } from '../shared/platform/composition.js';
import { activityHandler } from '../shared/platform/durable.js';
import { activity, defineFunction } from '../shared/platform/functions.js';

/** Nightly consolidation: the users whose sessions changed since the last run. */
export const handler = activityHandler(z.object({ since: z.iso.datetime() }), ActiveUsersResult, async ({ since }) => usersActiveSince(await getRuntime(), since));

export default defineFunction({ name: 'activity-users-active', trigger: activity(), handler });
