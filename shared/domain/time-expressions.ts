import nlp from 'compromise';
import datePlugin from 'compromise-dates';

/** A period of time, as ISO 8601 instants (inclusive). */
export interface Period {
  from: string;
  to: string;
}

const parser = nlp.extend(datePlugin);

/**
 * Words without which a text names no calendar period. The date parser costs tens of milliseconds, so a query without
 * any of them (most queries) skips it.
 */
const TIME_WORDS =
  /\b(jan(uary)?|feb(ruary)?|mar(ch)?|apr(il)?|may|june?|july?|aug(ust)?|sept?(ember)?|oct(ober)?|nov(ember)?|dec(ember)?|mon(day)?|tue(sday)?|wed(nesday)?|thu(rsday)?|fri(day)?|sat(urday)?|sun(day)?|yesterday|today|week(end)?s?|months?|years?|spring|summer|autumn|fall|winter|ago|(19|20)\d\d)\b/i;

/**
 * The first calendar period a text names ("last May", "in July 2023", "on 8 May, 2023", "last week"), read relative
 * to `now` in UTC, or undefined. Memory is about the past, so a period that starts after `now` (a bare "June" read as
 * next June) is not returned.
 */
export function periodNamedIn(text: string, now: Date): Period | undefined {
  if (!TIME_WORDS.test(text)) return undefined;
  const [found] = parser(text).dates({ timezone: 'UTC', today: now.toISOString().slice(0, 10) }).get() as { start?: string; end?: string }[];
  if (!found?.start || !found.end) return undefined;
  const from = new Date(found.start);
  const to = new Date(found.end);
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()) || from > now || to < from) return undefined;
  return { from: from.toISOString(), to: to.toISOString() };
}

export const isWithin = (period: Period, timestamp: string): boolean => {
  const at = new Date(timestamp).toISOString();
  return at >= period.from && at <= period.to;
};
