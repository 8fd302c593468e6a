// The demo's content and its checks: the design's three demo scenarios (section 6) as data, and pure functions that
// decide from the API's answers whether memory did what the scenario expects. main.ts does the I/O and the narration.
import type { ContextResponse, Fact, TurnInput } from '../../client/index.js';
import { countTokens } from '../../domain/tokens.js';

/** A turn the demo sends, always with its turnId, so a fact's provenance can be checked against it. */
export type DemoTurn = TurnInput & { turnId: string; content: string };

/** One user line and the advisor's answer to it, as two turns with ids `<sessionId>-u<i>` and `<sessionId>-a<i>`. */
export function dialogue(sessionId: string, exchanges: readonly (readonly [user: string, assistant: string])[]): DemoTurn[] {
  return exchanges.flatMap(([user, assistant], i) => [
    { role: 'user' as const, content: user, turnId: `${sessionId}-u${i + 1}` },
    { role: 'assistant' as const, content: assistant, turnId: `${sessionId}-a${i + 1}` },
  ]);
}

/** Turns as a transcript (`role: content` lines), the way a model would be sent them without memory. */
export const transcriptTokens = (turns: readonly DemoTurn[]): number => countTokens(turns.map((t) => `${t.role}: ${t.content}`).join('\n'));

// ---- Scenario 1: a long conversation over several sessions, and retrieval from them ----

export interface PastSession {
  sessionId: string;
  turns: DemoTurn[];
}

export const PAST_SESSIONS: readonly PastSession[] = [
  {
    sessionId: 'work-and-401k',
    turns: dialogue('work-and-401k', [
      ['I work as a nurse at the regional hospital, mostly night shifts.', 'Night shifts often come with a pay differential; is that part of your salary?'],
      ['Yes, my salary is about 78,000 dollars a year including the night differential.', 'Good, that gives us a baseline for your savings plan.'],
      ['I put 6 percent of my pay into my 401k and the hospital matches half of that.', 'Keep at least 6 percent so you collect the full employer match in the 401k.'],
      ['Should I raise my 401k contribution next year?', 'Raising the 401k contribution by one percent a year is a painless way to save more.'],
    ]),
  },
  {
    sessionId: 'dog-and-trip',
    turns: dialogue('dog-and-trip', [
      ['Our dog Biscuit needs knee surgery, a golden retriever of nine years.', 'I am sorry to hear about Biscuit; vet bills are worth planning for.'],
      ['The surgery for Biscuit will cost around 4,000 dollars.', 'We can take that from the emergency fund and refill it over six months.'],
      ['We are also planning a trip to Lisbon in May for our anniversary.', 'A trip to Lisbon in May sounds lovely; let us set aside a travel budget.'],
      ['The Lisbon trip should stay under 3,500 dollars for flights and hotels.', 'Then put about 600 dollars a month into a travel account until May.'],
    ]),
  },
  {
    sessionId: 'home-and-savings',
    turns: dialogue('home-and-savings', [
      ['We still owe 210,000 dollars on the mortgage at 3.1 percent.', 'At that rate there is no rush to pay the mortgage off early.'],
      ['Our emergency fund holds about 15,000 dollars in a savings account.', 'That covers roughly four months of expenses, a solid cushion.'],
      ['My sister wants to borrow money for her restaurant.', 'Lend only what you could afford to lose, and put the terms in writing.'],
      ['I would like to start investing in index funds outside of work.', 'A low-cost index fund in a brokerage account is a fine next step.'],
    ]),
  },
];

/** A question the new session asks, and the session whose turns answer it: the fact search must find one of them. */
export interface Recall {
  query: string;
  /** Text the answering turns, and the fact that finds them, contain. */
  needle: string;
  sessionId: string;
}

export const RECALLS: readonly Recall[] = [
  { query: 'What did we discuss about my 401k?', needle: '401k', sessionId: 'work-and-401k' },
  { query: "What is my dog's name and what does he need?", needle: 'Biscuit', sessionId: 'dog-and-trip' },
  { query: 'Where are we going on our anniversary trip?', needle: 'Lisbon', sessionId: 'dog-and-trip' },
];

/** How far down the ranking the answering fact may be. */
export const RECALL_RANK = 3;

/**
 * The first fact (best first) that holds the needle and whose provenance points at a turn that said it: the turn's
 * session, and the turn among the fact's `turnIds` or (a session summary, an insight) its seq within the `seqRange`.
 */
export function answeringFact(
  facts: readonly Fact[],
  recall: Recall,
  turns: readonly DemoTurn[],
  seqOf: (turnId: string) => number | undefined,
): { fact: Fact; rank: number; turnId: string } | undefined {
  const saying = turns.filter((t) => t.content.includes(recall.needle));
  for (const [index, fact] of facts.entries()) {
    if (!fact.text.includes(recall.needle) || fact.sessionId !== recall.sessionId) continue;
    const source = saying.find((t) => {
      const seq = seqOf(t.turnId);
      return fact.turnIds.includes(t.turnId) || (seq !== undefined && fact.seqRange !== undefined && fact.seqRange[0] <= seq && seq <= fact.seqRange[1]);
    });
    if (source) return { fact, rank: index + 1, turnId: source.turnId };
  }
  return undefined;
}

// ---- Scenario 2: reflection-powered session initialisation ----

export const ADVISOR_SESSIONS: readonly PastSession[] = [
  {
    sessionId: 'first-meeting',
    turns: dialogue('first-meeting', [
      ["Hi, I'm 52 and I'm married with three children.", 'Welcome! Let us start with what you would like to achieve.'],
      ['My goal is to retire at 62 and pay off the mortgage first.', 'Retiring at 62 is realistic if we plan the next ten years well.'],
    ]),
  },
  {
    sessionId: 'risk-talk',
    turns: dialogue('risk-talk', [
      ["I'm a conservative investor, I don't want to lose money.", 'Then bonds and a cash buffer will carry more of the portfolio.'],
      ["I'm worried that inflation and healthcare costs could make us run out of money.", 'We can plan for rising healthcare costs with a dedicated fund.'],
    ]),
  },
  {
    sessionId: 'retirement-plan',
    turns: dialogue('retirement-plan', [
      ['I prefer to get a short summary by email after each meeting.', 'I will send you a short summary by email after each meeting.'],
      ['Let us review the retirement plan for 2034 next time.', 'Next time we go through the retirement plan for 2034 step by step.'],
    ]),
  },
];

/** The first turn of the new session: nothing in it about the user, so whatever the context knows comes from memory. */
export const GREETING: DemoTurn = { role: 'user', content: 'Hello again, where were we?', turnId: 'hello-u1' };

// ---- Scenario 3: real-time context compression ----

const TOPICS = [
  ['groceries', 540], ['commuting', 180], ['utilities', 230], ['streaming services', 45], ['eating out', 320],
  ['the gym', 60], ['phone plans', 95], ['insurance', 410], ['childcare', 1200], ['gifts', 150],
  ['clothing', 140], ['home repairs', 260], ['pet food', 70], ['books', 35], ['car maintenance', 110],
  ['charity', 200], ['hobbies', 90], ['travel', 300], ['medical bills', 130], ['subscriptions', 55],
] as const;

/** A long budgeting conversation: `exchanges` user/assistant pairs, each about one spending category. */
export function budgetConversation(sessionId: string, exchanges: number): DemoTurn[] {
  return dialogue(
    sessionId,
    Array.from({ length: exchanges }, (_, i) => {
      const [topic, amount] = TOPICS[i % TOPICS.length]!;
      return [
        `Next on my list is ${topic}: we spend about ${amount} dollars a month on it, and I am not sure that is reasonable for a family of four living in the city.`,
        `For ${topic}, ${amount} dollars a month is within the usual range; tracking it for two months and setting a cap ten percent lower would free money for savings without much pain.`,
      ] as const;
    }),
  );
}

/** What the context shows of the turns appended so far, checked against the context's invariant. */
export interface Compression {
  /** Turns the summary covers (some of them may still be shown verbatim). */
  covered: number;
  /** Turns covered by the summary and not shown verbatim. */
  summarised: number;
  verbatim: number;
  /** Turns neither covered by the summary nor verbatim: must be none. */
  missing: string[];
  /** The last `nActive` turns appended are the last verbatim turns, in order. */
  lastVerbatim: boolean;
  rawTokens: number;
  contextTokens: number;
}

export function compression(context: ContextResponse, appended: readonly DemoTurn[], seqs: ReadonlyMap<string, number>, nActive: number): Compression {
  const verbatimIds = context.sections.turns.map((t) => t.turnId);
  const verbatim = new Set(verbatimIds);
  const covered = (t: DemoTurn) => (seqs.get(t.turnId) ?? Infinity) <= context.summaryCoversThroughSeq;
  const expectedLast = appended.slice(-nActive).map((t) => t.turnId);
  return {
    covered: appended.filter(covered).length,
    summarised: appended.filter((t) => covered(t) && !verbatim.has(t.turnId)).length,
    verbatim: verbatim.size,
    missing: appended.filter((t) => !covered(t) && !verbatim.has(t.turnId)).map((t) => t.turnId),
    lastVerbatim: verbatimIds.slice(-expectedLast.length).join('\n') === expectedLast.join('\n'),
    rawTokens: transcriptTokens(appended),
    contextTokens: context.tokens,
  };
}
