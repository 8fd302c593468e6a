/** Small text utilities for the offline models: sentence splitting, word tokens, stopwords. */

export const sentences = (text: string): string[] =>
  text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

export const words = (text: string): string[] => text.toLowerCase().match(/[a-z0-9][a-z0-9'-]*/g) ?? [];

export const STOPWORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by
  can could did do does doing down during each few for from further had has have having he her here hers herself him himself
  his how i if in into is it its itself just let me more most my myself no nor not now of off on once only or other our ours
  ourselves out over own same she should so some such than that the their theirs them themselves then there these they this
  those through to too under until up very was we were what when where which while who whom why will with would you your
  yours yourself yourselves yes yeah okay ok oh hi hello thanks thank really also like get got going go know think well
  im i'm it's that's don't dont can't cant user assistant tool system sure much many one two lot things thing want would
  need make made way good great right see say said tell us`.split(/\s+/),
);

export const contentWords = (text: string): string[] => words(text).filter((w) => w.length > 2 && !STOPWORDS.has(w));

/** Cuts text at a sentence or word boundary so it stays within `max` characters. */
export function bound(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const end = Math.max(cut.lastIndexOf('. '), cut.lastIndexOf('! '), cut.lastIndexOf('? '));
  if (end > max * 0.5) return cut.slice(0, end + 1);
  return `${cut.slice(0, cut.lastIndexOf(' ') > 0 ? cut.lastIndexOf(' ') : max)}…`;
}
