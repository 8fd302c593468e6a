// SCRATCH (issue 17 item 3 measurement): an in-process fact list, not event-sourced, not for merging.
import { atomicFacts, factText, type Voices } from '../adapters/local-models/atomic-facts.js';
import { STOPWORDS } from '../adapters/local-models/text.js';
import { asksQuestion } from '../domain/fact-ranking.js';
import type { IndexedTurn, TurnHit } from './search-ports.js';

export const FACTS_VARIANT = process.env.FACTS_VARIANT ?? '';
export const factStats = { turns: 0, facts: 0, ms: 0, words: 0 };

const stem = (w: string) => w.replace(/(?:ies)$/, 'y').replace(/(?:ing|ed|es|s)$/, '').replace(/(.)\1$/, '$1');
export const terms = (text: string): string[] =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOPWORDS.has(w) && w.length > 1).map(stem);

export function factsOf(content: string, voices: Voices): string[] {
  const t0 = performance.now();
  const facts = atomicFacts(content, voices).map(factText);
  factStats.ms += performance.now() - t0;
  factStats.turns++;
  factStats.facts += facts.length;
  factStats.words += facts.join(' ').split(/\s+/).filter(Boolean).length;
  return facts;
}

interface Doc { hit: TurnHit; terms: string[] }
const byUser = new Map<string, Doc[]>();

export function addFacts(turn: IndexedTurn, facts: readonly string[], extra: string): void {
  // A turn projected again (a write conflict) replaces its facts.
  const docs = (byUser.get(turn.userId) ?? []).filter((d) => d.hit.sessionId !== turn.sessionId || d.hit.seq !== turn.seq);
  byUser.set(turn.userId, docs);
  const hit: TurnHit = {
    kind: 'turn', sessionId: turn.sessionId, seq: turn.seq, ...(turn.agentId && { agentId: turn.agentId }), speaker: turn.speaker,
    timestamp: turn.timestamp, ...(turn.refers && { refers: turn.refers }), ...(asksQuestion(turn.text) && { asks: true as const }),
    shown: { turnId: turn.turnId, text: turn.text },
  };
  for (const f of facts) {
    const ts = terms(`${f} ${extra}`);
    if (ts.length > 0) docs.push({ hit, terms: ts });
  }
}

/** BM25 (k1 1.2, b 0.75) over the user's facts, best fact per turn. */
export function rankFactList(userId: string, text: string, limit: number): TurnHit[] {
  const docs = byUser.get(userId) ?? [];
  if (docs.length === 0) return [];
  const q = [...new Set(terms(text))];
  const df = new Map<string, number>();
  let total = 0;
  for (const d of docs) {
    total += d.terms.length;
    for (const w of new Set(d.terms)) if (q.includes(w)) df.set(w, (df.get(w) ?? 0) + 1);
  }
  const avg = total / docs.length;
  const best = new Map<string, { hit: TurnHit; score: number }>();
  for (const d of docs) {
    let score = 0;
    for (const w of q) {
      const n = df.get(w);
      if (!n) continue;
      const tf = d.terms.filter((x) => x === w).length;
      if (tf === 0) continue;
      const idf = Math.log(1 + (docs.length - n + 0.5) / (n + 0.5));
      score += (idf * tf * 2.2) / (tf + 1.2 * (0.25 + (0.75 * d.terms.length) / avg));
    }
    if (score <= 0) continue;
    const key = `${d.hit.sessionId}#${d.hit.seq}`;
    if ((best.get(key)?.score ?? 0) < score) best.set(key, { hit: d.hit, score });
  }
  return [...best.values()].sort((a, b) => b.score - a.score).slice(0, limit).map((b) => b.hit);
}
