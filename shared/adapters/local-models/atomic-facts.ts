import nlp from 'compromise';

/** One atomic statement of a turn: who did what to what. Person words are resolved to the participants' names. */
export interface AtomicFact {
  subject?: string;
  predicate: string;
  object: string;
  negative: boolean;
}

/** Who says the turn and to whom: first person is the speaker, second person the addressee. */
export interface Voices {
  speaker: string;
  addressee?: string | undefined;
}

interface Term {
  text: string;
  post?: string;
  normal: string;
  tags: string[];
}

const has = (t: Term, tag: string) => t.tags.includes(tag);
/** Punctuation after a term ends a clause. */
const breaks = (t: Term) => /[,;:.!?)(\]"—–]/.test(t.post ?? '');

const FIRST_PERSON = new Set(['i', 'me', 'my', 'mine', 'myself', 'we', 'us', 'our', 'ours', 'ourselves']);
const SECOND_PERSON = new Set(['you', 'your', 'yours', 'yourself', 'yourselves']);
/** Verbs that mostly carry another verb or nothing of their own. */
const LIGHT = new Set(['be', 'have', 'do', 'get', 'go', 'make', 'let', 'seem', 'sound', 'look', 'feel', 'know', 'think', 'mean', 'guess', 'hope', 'bet', 'say', 'tell', 'thank', 'want', 'need', 'like', 'love', 'can', 'will']);
const MAX_OBJECT_WORDS = 6;

/** A person word as the participant it names; other pronouns say nothing on their own. */
function person(t: Term, voices: Voices): string | undefined {
  const w = t.normal.replace(/['’](?:s|ve|m|ll|d|re)$/, '');
  if (FIRST_PERSON.has(w)) return voices.speaker;
  if (SECOND_PERSON.has(w)) return voices.addressee;
  return undefined;
}

/**
 * The atomic facts of a turn, read by rules from compromise's parse: for each content verb, its subject (the nearest
 * person word or noun before it in the clause, "I"/"we" as the speaker, "you" as the addressee), its infinitive ("went"
 * → "go"), and its object (the content words after it, up to the clause's end or the next verb; possessives resolved,
 * "your car" → "<addressee> car"). A light verb ("be", "have", "go"…) needs an object to be a fact.
 */
export function atomicFacts(text: string, voices: Voices): AtomicFact[] {
  const doc = nlp(text);
  const infinitives = new Map<string, string>();
  for (const v of doc.verbs().json() as { verb?: { root?: string; infinitive?: string } }[]) {
    const root = v.verb?.root?.toLowerCase();
    if (root && v.verb?.infinitive) infinitives.set(root, v.verb.infinitive.toLowerCase());
  }
  const facts: AtomicFact[] = [];
  for (const { terms } of doc.json() as { terms: Term[] }[]) {
    terms.forEach((t, i) => {
      if (!has(t, 'Verb') || has(t, 'Auxiliary') || has(t, 'Modal') || has(t, 'Expression') || t.text === '') return;
      const next = terms[i + 1];
      if (next && has(next, 'Verb') && !breaks(t)) return; // "have been", "going to": the last verb carries it
      const predicate = infinitives.get(t.normal) ?? t.normal;
      if (!/^[a-z-]+$/.test(predicate)) return; // a contraction left whole ("didn't")
      const subject = subjectBefore(terms, i, voices);
      const object = objectAfter(terms, i, voices);
      if (object.length === 0 && LIGHT.has(predicate)) return;
      const negative = terms.slice(Math.max(0, i - 3), i).some((b) => has(b, 'Negative'));
      facts.push({ ...(subject && { subject }), predicate, object: object.join(' '), negative });
    });
  }
  return facts;
}

function subjectBefore(terms: readonly Term[], at: number, voices: Voices): string | undefined {
  for (let j = at - 1; j >= 0 && !breaks(terms[j]!); j--) {
    const t = terms[j]!;
    if (has(t, 'Pronoun')) return person(t, voices);
    if (has(t, 'Noun') && !has(t, 'Date')) {
      const owner = j > 0 && has(terms[j - 1]!, 'Possessive') ? person(terms[j - 1]!, voices) : undefined;
      return owner ? `${owner} ${t.normal}` : t.normal;
    }
    // Auxiliaries and adverbs between the subject and its verb ("I've been painting") are passed over.
    const inChain = has(t, 'Auxiliary') || has(t, 'Modal') || has(t, 'Adverb') || has(t, 'Negative') || (has(t, 'Verb') && has(terms[j + 1]!, 'Verb'));
    if (has(t, 'Conjunction') || (has(t, 'Verb') && !inChain)) return undefined;
  }
  return undefined;
}

function objectAfter(terms: readonly Term[], at: number, voices: Voices): string[] {
  const words: string[] = [];
  if (breaks(terms[at]!)) return words;
  for (let k = at + 1; k < terms.length && words.length < MAX_OBJECT_WORDS; k++) {
    const t = terms[k]!;
    if (has(t, 'Conjunction') || (has(t, 'Verb') && !has(t, 'Gerund'))) break;
    if (has(t, 'Pronoun') || has(t, 'Possessive')) {
      const who = person(t, voices);
      if (who) words.push(who);
    } else if ((has(t, 'Noun') || has(t, 'Adjective') || has(t, 'Gerund') || has(t, 'Value')) && t.text !== '') {
      words.push(t.normal.replace(/['’]s$/, ''));
    }
    if (breaks(t)) break;
  }
  return words;
}

/** A fact as the words it is matched with. */
export const factText = (f: AtomicFact): string => [f.subject, f.negative ? 'not' : '', f.predicate, f.object].filter(Boolean).join(' ');
