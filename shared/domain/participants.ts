/**
 * How a question refers to the people of the conversation. In a conversation, a participant's name is mostly a word
 * addressed to them by the other ("Thanks, Melanie!") or a speaker label, so as a search term it matches the wrong
 * turns; it says whose turns the answer is in. Names are matched by their first word ("Melanie" for "Melanie Smith"),
 * case-insensitively, with or without a possessive ("Melanie's").
 */

const firstWord = (speaker: string) => speaker.trim().toLowerCase().split(/\s+/)[0] ?? '';
const wordsOf = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu));
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The one participant whose name the query uses as a word, or undefined when it names none or several. */
export function namedParticipant(query: string, speakers: readonly string[]): string | undefined {
  const words = wordsOf(query);
  const named = [...new Set(speakers)].filter((s) => words.has(firstWord(s)));
  return named.length === 1 ? named[0] : undefined;
}

/**
 * The query without the participants' names, for matching by words and by meaning. A query made of names alone is
 * returned as it is: there is nothing else to match.
 */
export function withoutParticipantNames(query: string, speakers: readonly string[]): string {
  const names = [...new Set(speakers.map(firstWord))].filter((n) => n.length > 0);
  if (names.length === 0) return query;
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:${names.map(escape).join('|')})(?:['’]s)?(?![\\p{L}\\p{N}])`, 'giu');
  const stripped = query.replace(pattern, ' ').replace(/\s+/g, ' ').trim();
  return /[\p{L}\p{N}]/u.test(stripped) ? stripped : query;
}

/**
 * The query as the participant it names would put it: their name as "I", its possessive as "my" ("What are
 * Melanie's pets' names?" → "What are my pets' names?"), a role with its article ("the user") the same way. What a
 * question asks about a participant is in that participant's own turns, told in the first person.
 */
export function inFirstPerson(query: string, participant: string): string {
  const name = firstWord(participant);
  if (name.length === 0) return query;
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(?:the\\s+)?${escape(name)}(['’]s)?(?![\\p{L}\\p{N}])`, 'giu');
  return query.replace(pattern, (_match, possessive: string | undefined) => (possessive ? 'my' : 'I'));
}
