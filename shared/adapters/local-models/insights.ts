import nlp from 'compromise';
import type { ExtractedInsight } from '../../application/model-tasks.js';
import { bound, jaccard, sentences, squash, stem, STOPWORDS, terminate, words, type TranscriptTurn } from './text.js';

type Importance = ExtractedInsight['importance'];

/** A pattern that signals a category; `weight` 1 is enough on its own, 0.5 needs company. */
interface Signal {
  pattern: RegExp;
  weight: number;
}

interface CategoryRules {
  signals: Signal[];
  /** Importance when the statement is explicit (first person, not hedged, not a question); one step lower otherwise. */
  importance: Importance;
  /** Questions can carry this category (a worry asked as a question is still a worry). */
  questions?: boolean;
}

const strong = (pattern: RegExp): Signal => ({ pattern, weight: 1 });
const weak = (pattern: RegExp): Signal => ({ pattern, weight: 0.5 });

/**
 * Keyword and pattern rules for the design's default categories (§8.2). Categories are configurable: a category not
 * listed here is matched by the words of its name and a few synonyms (see `genericRules`).
 */
const KNOWN: Record<string, CategoryRules> = {
  demographics: {
    importance: 'high',
    signals: [
      strong(/\b(i'?m|i am|we'?re|we are|turn(ed|ing)?)\s+(\d{2})\b(?!\s*(%|k\b|years? (ago|from)))/i),
      strong(/\b\d{2}\s*(years?[- ]old|yo)\b|\bage[d]?\s+\d{2}\b/i),
      strong(/\b(married|divorced|widow(ed|er)?|single mom|single dad|engaged|separated)\b/i),
      strong(/\b(my|our)\s+(wife|husband|spouse|partner|kids?|children|son|daughter|twins|grandchild(ren)?|grandkids)\b/i),
      strong(/\b(two|three|four|five|\d)\s+(kids|children|sons|daughters|grandchildren|grandkids)\b/i),
      strong(/\bi\s+(work|worked)\s+(as|at|for|in)\b|\bi'?m\s+an?\s+[a-z]+\s+(at|for|in)\b|\bself[- ]employed\b|\bi\s+(own|run)\s+(a|my)\s+(business|company|firm)\b/i),
      strong(/\b(i|we)\s+(live|moved|grew up)\s+(in|to|near)\b|\bborn in\b/i),
      strong(/\bi'?m\s+(retired|unemployed|a widow|a widower|a teacher|a nurse|a doctor|an engineer|a lawyer|a contractor|a freelancer|a student)\b/i),
      weak(/\b(kids?|children|son|daughter|wife|husband|family|job|career|profession)\b/i),
    ],
  },
  financial_goals: {
    importance: 'high',
    signals: [
      strong(/\bretire(ment)?\s+(at|by|in|before|early|when)\b|\b(want|plan|hope|like|aim)\w*\s+to\s+retire\b/i),
      strong(/\bsav(e|ing)\s+(up\s+)?(for|towards?|enough)\b/i),
      strong(/\b(want|plan|hope|need|would like|'d like|aim|intend)\w*\s+to\s+(buy|save|pay\s+(off|down)|afford|fund|build|start|travel|leave|put|set aside|invest|grow|have|own|send|help|retire)\b/i),
      strong(/\b(my|our)\s+(goal|aim|target|priority|dream)\b|\bgoal is\b/i),
      strong(/\b(college|tuition|university)\s+(fund|savings|costs?|for)\b|\b(daughter|son|kids?|children)'?s?\s+(college|education|tuition|university)\b/i),
      strong(/\bdown\s*payment\b|\bemergency fund\b|\bnest egg\b|\bpay off (the|my|our) (mortgage|loan|debt|car)\b/i),
      weak(/\b(by|before|in)\s+(19|20)\d{2}\b|\b(goal|target|plan|future|retirement)\b/i),
    ],
  },
  risk_profile: {
    importance: 'high',
    signals: [
      strong(/\brisk\b|\b(conservative|aggressive|cautious|risk[- ]averse)\b|\bvolatil/i),
      strong(/\b(can'?t|cannot|couldn'?t|don'?t want to)\s+(stomach|handle|afford|tolerate|take|bear|deal with)\s+(big\s+|large\s+|any\s+|major\s+|more\s+)?(loss|losses|swings|drops|volatility|risk)\b/i),
      strong(/\blos(e|ing)\s+(money|sleep|it all|everything)\b|\bplay(ing)?\s+it\s+safe\b|\bsleep at night\b/i),
      strong(/\b(comfortable|fine|ok|okay)\s+with\s+(some\s+|more\s+|a lot of\s+)?(risk|volatility|ups and downs|swings)\b/i),
      strong(/\b(prefer|like|love|hate|avoid|stay away from)\s+(index funds|bonds|stocks|equities|crypto|etfs?|real estate|annuities|cds?|individual stocks)\b/i),
      weak(/\b(stocks?|bonds?|equit(y|ies)|crypto\w*|index funds?|etfs?|growth|speculat\w*|safe(r|ty)?|invest(ing|ment|ments)?|portfolio|moderate)\b/i),
    ],
  },
  current_situation: {
    importance: 'high',
    signals: [
      strong(/[$£€]\s?\d|\b\d[\d,.]*\s?(k|grand|million|thousand|dollars)\b/i),
      strong(/\b(401\(?k\)?|403\(?b\)?|ira|roth|pension|brokerage account|savings account|hsa|529)\b/i),
      strong(/\b(my|our|a|the)\s+(mortgage|debt|loans?|student loans?|car loan|credit cards?|salary|income|rent|expenses|bills|inheritance|assets|portfolio|savings|house|home|condo|rental property)\b/i),
      strong(/\b(i|we)\s+(earn|make|own|owe|rent|pay|inherited|have\s+(about\s+|around\s+|roughly\s+)?[$£€\d])/i),
      strong(/\b(paid off|in debt|living paycheck to paycheck|no savings)\b/i),
      weak(/\b(savings|account|income|salary|expenses|budget|assets|balance)\b/i),
    ],
  },
  concern: {
    importance: 'medium',
    questions: true,
    signals: [
      strong(/\b(worr(y|ied|ies|ying)|concern(ed|s)?|afraid|fear(ful|s)?|scared|anxious|nervous|stress(ed)?|frightened|panick?(ed|ing)?)\b/i),
      strong(/\b(not sure|unsure|uncertain|confus(ed|ing)|don'?t understand|keeps? me up|lose sleep|what if|what happens if)\b/i),
      strong(/\b(run out of money|outlive (my|our) (money|savings)|can'?t afford|market crash)\b/i),
      weak(/\b(inflation|recession|crash|downturn|layoffs?|medical bills|healthcare costs|taxes)\b/i),
    ],
  },
  preference: {
    importance: 'medium',
    signals: [
      strong(/\b(prefer|preferably|rather than|instead of|i'?d rather|would rather)\b/i),
      strong(/\b(please\s+)?(email|call|text|phone|message|contact|reach)\s+me\b|\bby\s+(email|phone|text|mail)\b/i),
      strong(/\b(meet|meeting|check[- ]in|call|review|talk)s?\s+(every|each|once a|twice a|monthly|weekly|quarterly|annually)\b|\b(monthly|weekly|quarterly|annual)\s+(meetings?|check[- ]ins?|calls?|reviews?|updates?)\b/i),
      strong(/\b(in person|video call|zoom|plain (english|language)|no jargon|short answers|in writing|mornings? (are|is|work)|evenings? (are|is|work))\b/i),
      strong(/\b(don'?t|do not|never)\s+(call|email|text|contact)\b/i),
      weak(/\b(i like|i love|i hate|i don'?t like|i'?d like|works best|best for me)\b/i),
    ],
  },
};

/** Other spellings of the default categories. */
const ALIASES: Record<string, string> = {
  demographic: 'demographics',
  profile: 'demographics',
  background: 'demographics',
  goal: 'financial_goals',
  goals: 'financial_goals',
  financial_goal: 'financial_goals',
  risk: 'risk_profile',
  risk_tolerance: 'risk_profile',
  situation: 'current_situation',
  financial_situation: 'current_situation',
  concerns: 'concern',
  worries: 'concern',
  preferences: 'preference',
  communication_preference: 'preference',
  communication_preferences: 'preference',
};

/** Synonyms for words that configured category names often use. */
const SYNONYMS: Record<string, string[]> = {
  health: ['doctor', 'diagnos', 'medic', 'illness', 'sick', 'surgery', 'hospital', 'diabet', 'cancer', 'therapy', 'allerg', 'injur'],
  hobby: ['enjoy', 'love', 'weekend', 'play', 'fan', 'spare time', 'free time', 'passion'],
  interest: ['enjoy', 'love', 'fan', 'passion', 'curious'],
  family: ['wife', 'husband', 'partner', 'kid', 'child', 'son', 'daughter', 'mother', 'father', 'mom', 'dad', 'sister', 'brother', 'parent'],
  pet: ['dog', 'cat', 'puppy', 'kitten', 'retriever', 'terrier', 'horse', 'parrot', 'hamster'],
  career: ['job', 'work', 'employ', 'promot', 'boss', 'colleague', 'company', 'profession'],
  employment: ['job', 'work', 'employ', 'boss', 'company', 'profession'],
  travel: ['trip', 'flight', 'vacation', 'holiday', 'visit', 'abroad'],
  education: ['school', 'college', 'university', 'degree', 'course', 'study', 'student'],
  tax: ['irs', 'deduct', 'refund', 'filing'],
  insurance: ['policy', 'coverage', 'premium', 'insur'],
  property: ['house', 'home', 'condo', 'apartment', 'real estate', 'rental'],
  diet: ['vegan', 'vegetarian', 'gluten', 'food', 'eat'],
};

const normaliseCategory = (c: string) =>
  c
    .replace(/([a-z])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_|_$/g, '');

/** Rules for a configured category: the known ones by name or alias, others from the words of the name. */
function rulesFor(category: string): CategoryRules | undefined {
  const key = normaliseCategory(category);
  const known = KNOWN[key] ?? KNOWN[ALIASES[key] ?? ''];
  return known ?? genericRules(key);
}

function genericRules(key: string): CategoryRules | undefined {
  const nameWords = key.split('_').filter((w) => w.length > 2 && !STOPWORDS.has(w) && !['user', 'client', 'info', 'other', 'misc', 'general'].includes(w));
  if (nameWords.length === 0) return undefined;
  const stems = nameWords.map(stem);
  const synonyms = nameWords.flatMap((w) => SYNONYMS[w] ?? SYNONYMS[stem(w)] ?? SYNONYMS[w.replace(/s$/, '')] ?? []);
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  // One signal per word of the name, so a clause naming the category outright ("travel plans") beats a loose rule.
  return {
    importance: 'medium',
    signals: [
      ...stems.map((s) => strong(new RegExp(`\\b${escape(s)}\\w*`, 'i'))),
      ...(synonyms.length > 0 ? [strong(new RegExp(`\\b(${synonyms.map(escape).join('|')})\\w*`, 'i'))] : []),
    ],
  };
}

/** A statement of the user, cut at clause boundaries that start a new first-person statement. */
interface Statement {
  text: string;
  order: number;
}

const CLAUSE_BREAK = /\s*;\s*|,?\s+(?:but|and|although|though|while|plus|also|so)\s+(?=(?:i|i'm|i've|i'd|i'll|my|we|we're|we've|our)\b)/i;
/** "I'm 45 and want to retire at 60": a second verb phrase of the same first-person subject. */
const SAME_SUBJECT_BREAK = /,?\s+and\s+(?=(?:want|plan|hope|need|would like|intend|expect|prefer|have|own|earn|make|work|live)\b)/i;

function statements(turns: readonly TranscriptTurn[]): Statement[] {
  const out: Statement[] = [];
  for (const turn of turns) {
    if (turn.role !== 'user') continue;
    for (const sentence of sentences(turn.content.replace(/[’‘]/g, "'"))) {
      const question = sentence.trim().endsWith('?');
      for (const clause of sentence.split(CLAUSE_BREAK)) {
        const [first, ...more] = clause.split(SAME_SUBJECT_BREAK);
        const pieces = /^i\b/i.test(first ?? '') ? [first!, ...more.map((m) => `I ${m}`)] : [clause];
        for (const piece of pieces) {
          const text = squash(piece).replace(/^(and|but|so|also|plus|well|oh|um|uh)\b,?\s*/i, '');
          if (words(text).length < 2) continue;
          out.push({ text: question && !text.endsWith('?') ? `${text.replace(/[.!,]$/, '')}?` : text, order: out.length });
        }
      }
    }
  }
  return out;
}

const FIRST_PERSON = /\b(i|i'm|i've|i'd|i'll|my|me|mine|we|we're|we've|our|us)\b/i;
const NUMBER = /\d|\b(one|two|three|four|five|six|seven|eight|nine|ten|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred)\b/i;
const HEDGE = /\b(maybe|might|perhaps|possibly|probably|i guess|i suppose|not sure yet|kind of|sort of|thinking about|considering)\b/i;
const NEGATED_WORRY = /(\bnot|\bnever|\bno longer|n't|\bnothing to be)\s+(\w+\s+)?(worried|concerned|afraid|scared|anxious|nervous)\b/i;

function scoreFor(rules: CategoryRules, text: string): number {
  let score = 0;
  for (const s of rules.signals) if (s.pattern.test(text)) score += s.weight;
  return score;
}

const lower = (i: Importance): Importance => (i === 'high' ? 'medium' : 'low');

/**
 * Insights in the configured categories from the user's own statements (assistant, tool and system lines are ignored):
 * each clause is scored against every category's rules and kept for the categories it clearly signals (a strong
 * pattern, or two weak ones). Confidence is higher for explicit first-person statements with numbers and lower for
 * hedged ones or questions; near-identical insights in a category are merged. Deterministic rules, not understanding:
 * an empty list (`no-insight`) when nothing matches.
 */
export function extractInsights(turns: readonly TranscriptTurn[], categories: readonly string[], max = 30): ExtractedInsight[] {
  const configured = [...new Set(categories)].flatMap((category) => {
    const rules = rulesFor(category);
    return rules ? [{ category, rules }] : [];
  });
  const found: (ExtractedInsight & { order: number; terms: Set<string> })[] = [];
  for (const statement of statements(turns)) {
    const isQuestion = statement.text.endsWith('?');
    const scored = configured
      .filter(({ rules }) => !isQuestion || rules.questions)
      .map(({ category, rules }) => ({ category, rules, score: scoreFor(rules, statement.text) }))
      .filter(({ rules, score }) => score >= 1 && !(rules === KNOWN.concern && NEGATED_WORRY.test(statement.text)))
      .sort((a, b) => b.score - a.score);
    // The clause's best category, and any other it signals twice over (one clause rarely states two kinds of fact).
    const chosen = scored.filter(({ score }, i) => i === 0 || score >= 2);
    for (const { category, rules, score } of chosen) {
      const firstPerson = FIRST_PERSON.test(statement.text);
      const hasNumber = NUMBER.test(statement.text);
      const hedged = HEDGE.test(statement.text);
      const known = Boolean(KNOWN[normaliseCategory(category)] ?? KNOWN[ALIASES[normaliseCategory(category)] ?? '']);
      let confidence = 0.5 + Math.min(score - 1, 1) * 0.1;
      if (firstPerson) confidence += 0.15;
      if (hasNumber) confidence += 0.1;
      if (/^(i|my|we|our)\b/i.test(statement.text)) confidence += 0.05;
      if (hedged) confidence -= 0.2;
      if (isQuestion) confidence -= 0.15;
      if (!known) confidence -= 0.1;
      const explicit = firstPerson && !hedged && !isQuestion;
      const importance = explicit ? rules.importance : lower(rules.importance);
      const text = bound(aboutTheUser(statement.text), MAX_INSIGHT_CHARS);
      found.push({
        category,
        text,
        confidence: round(Math.min(0.95, Math.max(0.05, confidence))),
        importance,
        order: statement.order,
        terms: factTerms(text),
      });
    }
  }
  // Near-identical insights in a category: keep the first wording, with the higher confidence.
  const kept: typeof found = [];
  for (const insight of found) {
    const twin = kept.find((k) => k.category === insight.category && jaccard(k.terms, insight.terms) >= 0.8);
    if (twin) twin.confidence = Math.max(twin.confidence, insight.confidence);
    else kept.push(insight);
  }
  const rank = { high: 3, medium: 2, low: 1 } as const;
  return kept
    .sort((a, b) => rank[b.importance] - rank[a.importance] || b.confidence - a.confidence || a.order - b.order)
    .slice(0, max)
    .sort((a, b) => a.order - b.order)
    .map(({ category, text, confidence, importance }) => ({ category, text, confidence, importance }));
}

const MAX_INSIGHT_CHARS = 300;
const round = (n: number) => Math.round(n * 100) / 100;

const FILLER = new Set(['the', 'a', 'an', 'user', 'said', 'like', 'i', 'my', 'me', 'they', 'their', 'them', 'is', 'are', 'am', 'to', 'and', 'just', 'so', 'really']);
/** Words that carry the fact (numbers included: "retire at 60" and "retire at 62" are different facts). */
const factTerms = (text: string) => new Set(words(text).filter((w) => !FILLER.has(w)).map(stem));

const THIRD_PERSON_REST: [RegExp, string][] = [
  [/\bI'm\b|\bI am\b/gi, 'they are'],
  [/\bI was\b/gi, 'they were'],
  [/\bI've\b/gi, "they've"],
  [/\bI'd\b/gi, "they'd"],
  [/\bI'll\b/gi, "they'll"],
  [/\b(and|or) I\b/gi, '$1 the user'],
  [/\bI\b/gi, 'they'],
  [/\bmyself\b/gi, 'themselves'],
  [/\bmine\b/gi, 'theirs'],
  [/\bmy\b/gi, 'their'],
  [/\bme\b/gi, 'them'],
];

const OPENERS: [RegExp, string][] = [
  [/^(I'm|I am)\b/i, 'The user is'],
  [/^I was\b/i, 'The user was'],
  [/^(I've|I have)\b/i, 'The user has'],
  [/^(I'd|I would)\b/i, 'The user would'],
  [/^(I'll|I will)\b/i, 'The user will'],
  [/^(I don't|I do not)\b/i, "The user doesn't"],
  [/^(I can't|I cannot)\b/i, "The user can't"],
  [/^I (can|could|should|must|might|may|did|didn't|couldn't|wouldn't|won't|shouldn't)\b/i, 'The user $1'],
  [/^My\b/i, "The user's"],
];

/**
 * A clause of the user restated about "the user": "I'm 45" → "The user is 45", "I want to retire at 60" → "The user
 * wants to retire at 60", "my 401k" → "their 401k". Clauses that do not open with I/my are quoted instead.
 */
export function aboutTheUser(clause: string): string {
  const text = terminate(clause.charAt(0).toUpperCase() + clause.slice(1));
  const opener = OPENERS.find(([pattern]) => pattern.test(text));
  let head: string | undefined;
  let rest: string;
  if (opener) {
    const m = opener[0].exec(text)!;
    head = m[0].replace(opener[0], opener[1]);
    rest = text.slice(m[0].length);
  } else {
    const verb = /^I ((?:(?:\w+ly|also|just|still|already|now|never|always|often|usually|rarely|actually|definitely|really) )*)([a-z]+)\b/i.exec(text);
    const conjugated = verb && presentThirdPerson(text, verb[2]!);
    if (!verb || !conjugated) return `The user said: "${text}"`;
    head = `The user ${verb[1]}${conjugated}`;
    rest = text.slice(verb[0].length);
  }
  for (const [pattern, replacement] of THIRD_PERSON_REST) rest = rest.replace(pattern, replacement);
  return `${head}${rest}`;
}

/** `want` → `wants` when compromise reads the word as a present-tense verb in the clause; undefined otherwise. */
function presentThirdPerson(clause: string, verb: string): string | undefined {
  const term = (nlp(clause).json() as { terms: { normal: string; tags: string[] }[] }[])[0]?.terms.find((t) => t.normal === verb.toLowerCase());
  if (!term || !term.tags.includes('Verb') || term.tags.includes('PastTense') || term.tags.includes('Modal') || term.tags.includes('Gerund')) return undefined;
  const irregular: Record<string, string> = { have: 'has', do: 'does', go: 'goes', be: 'is' };
  if (irregular[verb]) return irregular[verb];
  if (/(s|sh|ch|x|z|o)$/.test(verb)) return `${verb}es`;
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}
