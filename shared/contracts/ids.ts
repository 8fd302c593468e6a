import { z } from 'zod';

/** User, session, agent and turn ids: safe in URLs, document ids and partition keys. */
export const Id = z.string().regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must match [A-Za-z0-9._:-]{1,128}');

export const SessionKey = z.object({ userId: Id, sessionId: Id });
export type SessionKey = z.infer<typeof SessionKey>;
