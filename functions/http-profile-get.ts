import { z } from 'zod';
import { getProfile } from '../shared/application/long-term-reflection.js';
import { Id } from '../shared/contracts/ids.js';
import { ProfileDocument } from '../shared/contracts/insights.js';
import { getRuntime } from '../shared/platform/composition.js';
import { defineFunction, http } from '../shared/platform/functions.js';
import { httpHandler } from '../shared/platform/http.js';

export const handler = httpHandler({ params: z.object({ userId: Id }), response: ProfileDocument, summary: 'The long-term profile (404 before the first reflection)' }, async ({ params }) => getProfile(await getRuntime(), params.userId));

export default defineFunction({ name: 'http-profile-get', trigger: http('GET', 'v1/users/{userId}/profile'), handler });
