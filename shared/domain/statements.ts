import { inFirstPerson, namedParticipant, withoutParticipantNames } from './participants.js';

/**
 * A query put as the statement that would answer it, for its vector (search-facts.ts): a sentence encoder places a
 * statement nearer the statements a conversation is made of than the question that asks for it. The participant the
 * query names says it, in the first person (participants.ts `inFirstPerson`), and participants' names are left out,
 * as from the text that is matched: "What activities does Melanie partake in?" → "I partake in activities". A query
 * of names only stays as it is.
 */
export function answerStatement(query: string, speakers: readonly string[]): string {
  const named = namedParticipant(query, speakers);
  if (named && withoutParticipantNames(query, speakers) === query) return query;
  return withoutParticipantNames(asStatement(named ? inFirstPerson(query, named) : query), speakers);
}

const AUXILIARIES = new Set(['do', 'does', 'did', 'has', 'have', 'had', 'is', 'are', 'was', 'were', 'can', 'could', 'would', 'will', 'should', 'might', 'may']);
const SUPPORT = new Set(['do', 'does', 'did']);
const COPULAS = new Set(['is', 'are', 'was', 'were']);
const QUESTION_WORDS = new Set(['what', 'which', 'who', 'whom', 'whose', 'where', 'when', 'why', 'how']);
/** "how many", "how long": the second word belongs to the question phrase. */
const HOW_WHAT = new Set(['many', 'much', 'long', 'often', 'old', 'far']);
/** The auxiliary after "I": "has I taken" → "I have taken". */
const FIRST_PERSON = new Map([
  ['has', 'have'],
  ['is', 'am'],
]);
/** Words between the question word and its auxiliary, at most ("what writing classes has …"). */
const MAX_PHRASE = 3;

/**
 * A question put as the statement that would answer it, in its own words: "What writing classes has Maria taken?" →
 * "Maria has taken writing classes", "Would she enjoy a concert?" → "she would enjoy a concert". Rules of English word
 * order only: the auxiliary after the question phrase moves after its subject (the word that follows it) and the
 * question phrase's noun goes to the end; "do", "does" and "did" are dropped. Anything else (a question without an
 * auxiliary, or not a question) keeps its words.
 */
export function asStatement(question: string): string {
  const words = question.replace(/\?+\s*$/, '').trim().split(/\s+/).filter((w) => w.length > 0);
  const first = words[0]?.toLowerCase();
  if (first === undefined) return question;
  if (QUESTION_WORDS.has(first)) {
    const phraseEnd = first === 'how' && HOW_WHAT.has(words[1]?.toLowerCase() ?? '') ? 2 : 1;
    const at = words.findIndex((w, i) => i >= 1 && i <= phraseEnd + MAX_PHRASE && AUXILIARIES.has(w.toLowerCase()));
    // "Who supports her?": no auxiliary, the rest is a statement already.
    if (at < 0) return words.slice(1).join(' ');
    const auxiliary = words[at]!.toLowerCase();
    // "What is her identity?" → "her identity is".
    if (at === 1 && COPULAS.has(auxiliary)) return [...words.slice(2), auxiliary].join(' ');
    const phrase = words.slice(1, at);
    const [subject, ...rest] = words.slice(at + 1);
    if (subject === undefined) return phrase.join(' ');
    return [...clause(subject, auxiliary), ...rest, ...phrase].join(' ');
  }
  if (AUXILIARIES.has(first) && words.length > 2) {
    const [, subject, ...rest] = words;
    return [...clause(subject!, first), ...rest].join(' ');
  }
  return question;
}

/** The subject and its auxiliary in statement order; a supporting "do" is dropped. */
function clause(subject: string, auxiliary: string): string[] {
  if (SUPPORT.has(auxiliary)) return [subject];
  return [subject, subject === 'I' ? (FIRST_PERSON.get(auxiliary) ?? auxiliary) : auxiliary];
}
