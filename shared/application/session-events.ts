import type { SessionKey } from '../contracts/ids.js';
import type { SessionEventsPage, SessionEventsQuery } from '../contracts/sessions.js';
import { notFound } from '../domain/errors.js';
import type { Deps } from './ports.js';

/** A page of the session's stream, lifecycle events included, for audit and debugging; `next` is the `after` of the next page. */
export async function listSessionEvents(deps: Pick<Deps, 'events'>, key: SessionKey, query: SessionEventsQuery): Promise<SessionEventsPage> {
  const events = await deps.events.read(key, query.after, query.limit + 1);
  if (events.length === 0 && (await deps.events.lastSeq(key)) === 0) throw notFound(`Session ${key.sessionId}`);
  const page = events.slice(0, query.limit);
  return { ...key, events: page, next: events.length > query.limit ? page.at(-1)!.metadata.seq : null };
}
