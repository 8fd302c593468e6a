/** Deterministic, conversation-like turn text of realistic length (about 110–310 characters). */
const SENTENCES = [
  'I am 45 and want to retire at 60 with enough to travel.',
  'Then let us look at your savings rate and your current pension pot.',
  'My partner Maria works part time and earns about 28,000 a year.',
  'We also have a mortgage of 180,000 with twelve years left on it.',
  'A common rule of thumb is to save fifteen percent of gross income.',
  'Could you compare index funds with the workplace pension scheme?',
  'Index funds have low fees, while the workplace scheme adds an employer match.',
  'I would rather not take too much risk in the last five years.',
  'Shifting gradually into bonds reduces volatility as retirement approaches.',
  'What happens to the plan if interest rates stay high in Berlin?',
  'Higher rates help savings accounts but make the mortgage more expensive.',
  'Please remind me to review the budget again next quarter.',
];

export { rng } from '../support/random.js';

/**
 * Turn `i`'s text: one to three of the sentences above, and a reference made of letters that no other turn has, as no
 * two turns of a real conversation are alike (the runtime's embedder answers a text it embedded lately from memory).
 */
export function turnContent(i: number): string {
  const n = 1 + (i % 3);
  return `${Array.from({ length: n }, (_, k) => SENTENCES[(i * 7 + k * 5) % SENTENCES.length]!).join(' ')} (ref ${letters(i)})`;
}

/** `i` in base 26, as the letters a–z, at least four. */
const letters = (i: number): string => i.toString(26).padStart(4, '0').replace(/[0-9a-p]/g, (c) => String.fromCharCode(97 + parseInt(c, 26)));

export const role = (i: number): 'user' | 'assistant' => (i % 2 === 0 ? 'user' : 'assistant');

/** The JSON body of POST .../turns with `count` turns whose turnIds start at `prefix-<first>`. */
export function appendBody(prefix: string, first: number, count: number): string {
  return JSON.stringify({
    turns: Array.from({ length: count }, (_, k) => ({ role: role(first + k), content: turnContent(first + k), turnId: `${prefix}-${first + k}` })),
  });
}
