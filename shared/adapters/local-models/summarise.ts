import { bound, contentWords, label, sentences, squash, stem, terminate, type Speaker, type TranscriptTurn } from './text.js';

interface Candidate {
  text: string;
  role: Speaker;
  order: number;
  /** Distinct stemmed content words. */
  stems: string[];
  /** Score factors that do not change while sentences are picked. */
  prior: number;
}

/** Roles whose words summaries quote: tool output and system text are material, not conversation. */
const SPOKEN: ReadonlySet<Speaker> = new Set(['user', 'assistant']);
const SMALL_TALK = /^(hi|hello|hey|thanks|thank you|ok|okay|sure|great|bye|good (morning|afternoon|evening)|you're welcome|sounds good|got it)\b/i;

function prior(text: string, role: Speaker, distinct: number): number {
  let p = Math.min(1, distinct / 4); // fragments say little
  if (SMALL_TALK.test(text) && distinct < 4) p *= 0.2;
  if (/\d/.test(text)) p *= 1.2; // amounts, ages and dates are what later questions ask about
  if (role === 'user') p *= 1.15; // the user's own statements matter most for memory
  if (text.endsWith('?') && role === 'assistant') p *= 0.6;
  return p;
}

/**
 * An extractive summary of a conversation: whole sentences chosen greedily by how many of the conversation's frequent
 * content words they carry (SumBasic: a chosen sentence's words count less afterwards, so the summary does not repeat
 * itself), within `max` characters, in conversation order, each run of sentences labelled with its speaker
 * (`User: … Assistant: …`). Quotes what was said; never paraphrases or infers.
 */
export function extractiveSummary(turns: readonly TranscriptTurn[], max: number): string {
  const spoken = turns.filter((t) => SPOKEN.has(t.role));
  const candidates: Candidate[] = [];
  for (const turn of spoken.length > 0 ? spoken : turns) {
    for (const s of sentences(turn.content)) {
      const text = squash(s);
      if (text.length < 2) continue;
      const stems = [...new Set(contentWords(text).map(stem))];
      candidates.push({ text: terminate(text), role: turn.role, order: candidates.length, stems, prior: prior(text, turn.role, stems.length) });
    }
  }
  if (candidates.length === 0) return 'Empty conversation: nothing was said.';

  const weight = new Map<string, number>();
  for (const c of candidates) for (const w of c.stems) weight.set(w, (weight.get(w) ?? 0) + 1 / candidates.length);
  const score = (c: Candidate) => (c.stems.length === 0 ? 0 : (c.prior * c.stems.reduce((sum, w) => sum + weight.get(w)!, 0)) / (c.stems.length + 2));

  const picked: Candidate[] = [];
  let used = 0;
  const pool = new Set(candidates);
  while (pool.size > 0 && max - used > 20) {
    let best: Candidate | undefined;
    let bestScore = -1;
    for (const c of pool) {
      const s = score(c);
      if (s > bestScore) [best, bestScore] = [c, s];
    }
    pool.delete(best!);
    if (bestScore <= 0 && picked.length > 0) break;
    const cost = best!.text.length + 1 + label(best!.role).length + 2;
    if (used + cost > max) {
      if (picked.length === 0) {
        picked.push({ ...best!, text: bound(best!.text, max - label(best!.role).length - 2) });
        break;
      }
      continue;
    }
    picked.push(best!);
    used += cost;
    for (const w of best!.stems) weight.set(w, weight.get(w)! ** 2);
  }
  return bound(render(picked.sort((a, b) => a.order - b.order)), max);
}

/** `User: s1 s2 Assistant: s3` — a label wherever the speaker changes. */
function render(picked: readonly { text: string; role?: Speaker }[]): string {
  const parts: string[] = [];
  let previous: Speaker | undefined;
  for (const p of picked) {
    parts.push(p.role && p.role !== previous ? `${label(p.role)}: ${p.text}` : p.text);
    previous = p.role;
  }
  return parts.join(' ');
}

const LABELLED = /^(User|Assistant|Tool|System): (.*)$/s;
const ELLIPSIS = '… ';

/**
 * The running summary extended by an interaction's summary: previous + new, without sentences already in it. When it outgrows
 * `max`, the oldest sentences are dropped whole (the newest part is kept, opening with `…`), and every kept sentence
 * keeps its speaker label, so the text stays readable. Works on summaries from other models too (no labels).
 */
export function extendCumulative(previous: string, addition: string, max: number): string {
  const old = units(previous);
  const seen = new Set(old.map((u) => normal(u.text)));
  const all = [...old, ...units(addition).filter((u) => !seen.has(normal(u.text)))];
  let trimmed = previous.startsWith(ELLIPSIS.trim());
  const length = () => render(all).length + (trimmed ? ELLIPSIS.length : 0);
  while (all.length > 1 && length() > max) {
    all.shift();
    trimmed = true;
  }
  const text = (trimmed ? ELLIPSIS : '') + render(all);
  return text.length > max ? bound(text, max) : text;
}

/** Sentences of a summary, each with the speaker label in force where it stands. */
function units(summary: string): { text: string; role?: Speaker }[] {
  const out: { text: string; role?: Speaker }[] = [];
  let role: Speaker | undefined;
  for (const s of sentences(summary.replace(/^…\s*/, ''))) {
    const m = LABELLED.exec(s);
    if (m) role = m[1]!.toLowerCase() as Speaker;
    const text = m ? m[2]!.trim() : s;
    if (text) out.push({ text, ...(role && { role }) });
  }
  return out;
}

const normal = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();
