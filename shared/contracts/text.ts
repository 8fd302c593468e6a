import { z } from 'zod';

/**
 * Characters no store holds faithfully: NUL (PostgreSQL `text` and `jsonb` refuse it) and a lone UTF-16 surrogate
 * (not valid Unicode: it cannot be encoded as UTF-8, so PostgreSQL, Cosmos DB and the tokenizer each treat it differently).
 * Such strings are refused at the edge with 400 validation_failed rather than stored altered.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const isStorableText = (s: string): boolean => !UNSTORABLE.test(s);

export const UNSTORABLE_MESSAGE = 'must not contain NUL (\\u0000) or a lone UTF-16 surrogate';

/** A string of a request body, query or path that reaches a store: no NUL, no lone surrogate. */
export const Text = z.string().refine(isStorableText, UNSTORABLE_MESSAGE);

/** The earliest and latest instants every store holds (PostgreSQL timestamptz and Cosmos ISO strings alike sort and parse them). */
export const MIN_TIME = '1000-01-01T00:00:00.000Z';
export const MAX_TIME = '9999-12-31T23:59:59.999Z';

/**
 * An ISO 8601 date-time with an offset, between years 1000 and 9999 once converted to UTC. Outside that range PostgreSQL,
 * Cosmos DB and `Date#toISOString` disagree (year 0, six-digit years), so such a value is refused at the edge.
 */
export const Instant = z.iso.datetime({ offset: true }).refine((s) => {
  const t = Date.parse(s);
  return Number.isFinite(t) && t >= Date.parse(MIN_TIME) && t <= Date.parse(MAX_TIME);
}, 'must lie between the years 1000 and 9999');

/** A `from`–`to` filter that can match something: `from` not after `to`. Refuses the inverted range a client mixed up. */
export const ordered = (range: { from?: string | undefined; to?: string | undefined }): boolean =>
  range.from === undefined || range.to === undefined || Date.parse(range.from) <= Date.parse(range.to);
export const ORDERED_RANGE = { message: 'from must not be after to', path: ['to'] };
