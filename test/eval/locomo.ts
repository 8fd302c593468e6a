/**
 * LoCoMo evidence-recall evaluation (Maharana et al., ACL 2024; data CC BY-NC 4.0, read from ../shared, never copied).
 * Ingests each conversation through the local host's HTTP API, ends every session, then asks every question of categories 1–4 and reports
 * evidence recall at budgets of 10, 25 and 50 turns for hybrid search, BM25-only and vector-only, per category. Then the
 * ablations: hybrid search again with each kept part of the ranking turned off in turn (fact-ranking.ts RankingPolicy),
 * in process. Parts decided when turns are indexed need a fresh store with a setting instead (CATEGORY_LEVELS=0).
 *
 *   npm run eval:locomo [-- path/to/locomo.json]       (EVAL_DATA_DIR=<folder> keeps the ingested store for reruns)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sessionDate } from '../support/locomo.js';

const dataPath = process.argv[2] ?? new URL('../../../shared/data/locomo/locomo-dev.json', import.meta.url).pathname;
// EVAL_DATA_DIR keeps the store: a rerun then re-sends the turns (idempotent by turnId) and re-ends the sessions (one
// run each), so only the questions cost time, e.g. after a ranking change. Indexing changes need a fresh folder.
const keptDir = process.env.EVAL_DATA_DIR;
const dataDir = keptDir ?? mkdtempSync(join(tmpdir(), 'locomo-'));
process.env.MEMORY_DATA_DIR = dataDir;
process.env.LOG_LEVEL ??= 'warning';

const { startLocalHost } = await import('../../shared/platform/local-host/host.js');
const { countTokens } = await import('../../shared/domain/tokens.js');
const { searchFacts } = await import('../../shared/application/search-facts.js');
const { DEFAULT_RANKING, RANKING_WEIGHTS } = await import('../../shared/domain/fact-ranking.js');
const { RRF_K } = await import('../../shared/domain/ranking.js');

interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}
interface Qa {
  question: string;
  evidence?: string[];
  category: number;
}
interface Conversation {
  sample_id: string;
  conversation: Record<string, string | Turn[]>;
  qa: Qa[];
}

const CATEGORIES: Record<number, string> = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop' };
const BUDGETS = [10, 25, 50] as const;
const STRATEGIES = { hybrid: ['fulltext', 'vector'], bm25: ['fulltext'], vector: ['vector'] } as const;
type Strategy = keyof typeof STRATEGIES;
/** Each kept part of the ranking, turned off: what hybrid search loses without it is what it is worth. */
const ABLATIONS: [string, Partial<typeof DEFAULT_RANKING>][] = [
  ['none (hybrid, in process)', {}],
  ["turns' full text at RRF k 60", { turnFullTextK: RRF_K }],
  ["turns' vectors at the windows' weight", { turnVectorWeight: RANKING_WEIGHTS.vector }],
  ["no window's score lent to its turns", { windowToTurnWeight: 0 }],
  ["no share of the next turn's score", { nextTurnWeight: 0 }],
  ['no named-speaker boost', { namedSpeakerBoost: 0 }],
  ['no named-period boost', { namedPeriodBoost: 0 }],
  ['turns that ask not lowered', { askingTurnFactor: 1 }],
  ['no answer statement in the vector', { answerStatement: false }],
  ["participants' names kept in the query", { namesOutOfQuery: false }],
];

/** Evidence ids, with the data set's few malformed entries ("D8:6; D9:17") split. */
const evidenceIds = (qa: Qa): string[] => (qa.evidence ?? []).flatMap((e) => e.split(/[;,\s]+/)).filter((e) => /^D\d+:\d+$/.test(e));
/** The share of the evidence among the first turns of a ranking, at each budget. */
const recallAt = (facts: readonly { turnIds: string[] }[], evidence: ReadonlySet<string>) => {
  const ranked = [...new Set(facts.flatMap((f) => f.turnIds))];
  return BUDGETS.map((k) => ranked.slice(0, k).filter((id) => evidence.has(id)).length / evidence.size);
};

function progress(label: string, done: number, total: number) {
  const width = 30;
  const filled = Math.round((done / total) * width);
  process.stderr.write(`\r${label.padEnd(28)} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
  if (done === total) process.stderr.write('\n');
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
};

const conversations = JSON.parse(readFileSync(dataPath, 'utf8')) as Conversation[];
const host = await startLocalHost({ port: 0 });
// Appends carry turnIds and searches are reads, so a request that failed on the wire is safely sent again.
async function post(path: string, body: unknown, attempt = 1): Promise<unknown> {
  let res: Response;
  try {
    // A route without a body (session end) refuses one.
    res = await fetch(`${host.url}/${path}`, body === undefined ? { method: 'POST' } : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  } catch (error) {
    if (attempt >= 3) throw error;
    await sleep(500);
    return post(path, body, attempt + 1);
  }
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

try {
  // Ingest.
  const sessionsOf = (c: Conversation) =>
    Object.keys(c.conversation)
      .filter((k) => /^session_\d+$/.test(k) && Array.isArray(c.conversation[k]) && (c.conversation[k] as Turn[]).length > 0)
      .sort((a, b) => Number(a.split('_')[1]) - Number(b.split('_')[1]));
  const totalTurns = conversations.reduce((n, c) => n + sessionsOf(c).reduce((m, s) => m + (c.conversation[s] as Turn[]).length, 0), 0);
  let ingested = 0;
  const fullTexts = new Map<string, string>();
  const started = performance.now();
  for (const c of conversations) {
    const speakerA = c.conversation.speaker_a as string;
    const lines: string[] = [];
    for (const session of sessionsOf(c)) {
      const at = sessionDate(c.conversation[`${session}_date_time`] as string);
      const turns = (c.conversation[session] as Turn[]).map((t, i) => {
        const content = t.blip_caption ? `${t.text} [shared a photo: ${t.blip_caption}]` : t.text;
        lines.push(`${t.speaker}: ${content}`);
        return { role: t.speaker === speakerA ? 'user' : 'assistant', name: t.speaker, content, turnId: t.dia_id, timestamp: new Date(at.getTime() + i * 1000).toISOString() };
      });
      for (let i = 0; i < turns.length; i += 100) {
        await post(`v1/users/${c.sample_id}/sessions/${session}/turns`, { turns: turns.slice(i, i + 100) });
        ingested += Math.min(100, turns.length - i);
        progress('ingesting turns', ingested, totalTurns);
      }
    }
    fullTexts.set(c.sample_id, lines.join('\n'));
  }
  // Wait for the projection (summaries, embeddings, search index) to catch up.
  const allSessions = conversations.flatMap((c) => sessionsOf(c).map((s) => ({ userId: c.sample_id, sessionId: s })));
  let settledCount = 0;
  for (const key of allSessions) {
    for (;;) {
      const status = (await (await fetch(`${host.url}/v1/users/${key.userId}/sessions/${key.sessionId}`)).json()) as { pending: number };
      if (status.pending === 0) break;
      await sleep(200);
    }
    progress('projecting sessions', ++settledCount, allSessions.length);
  }
  // End every session: the final prune chunks the last partial window, then summary and reflection run.
  let ended = 0;
  for (const key of allSessions) {
    const { operationId } = (await post(`v1/users/${key.userId}/sessions/${key.sessionId}/end`, undefined)) as { operationId: string };
    for (;;) {
      const op = (await (await fetch(`${host.url}/v1/operations/${encodeURIComponent(operationId)}`)).json()) as { status: string; error?: unknown };
      if (op.status === 'completed') break;
      if (op.status === 'failed') throw new Error(`${operationId} failed: ${JSON.stringify(op.error)}`);
      await sleep(100);
    }
    progress('ending sessions', ++ended, allSessions.length);
  }
  const ingestSeconds = (performance.now() - started) / 1000;

  // Ask.
  const questions = conversations.flatMap((c) => c.qa.filter((q) => q.category >= 1 && q.category <= 4 && evidenceIds(q).length > 0).map((q) => ({ userId: c.sample_id, q })));
  /** Per ranking (a strategy, or an ablation), per category, each question's recall at each budget. */
  const hits: Record<string, Record<number, number[][]>> = {};
  const latencies: number[] = [];
  /** Per question, where each evidence turn came in the hybrid ranking (1-based; null past 50): for error analysis. */
  const details: { userId: string; category: string; question: string; evidence: Record<string, number | null> }[] = [];
  let asked = 0;
  for (const { userId, q } of questions) {
    const evidence = new Set(evidenceIds(q));
    for (const strategy of Object.keys(STRATEGIES) as Strategy[]) {
      const t0 = performance.now();
      const result = (await post(`v1/users/${userId}/facts/search`, { query: q.question, topK: 50, sources: ['turns'], retrievers: STRATEGIES[strategy] })) as { facts: { turnIds: string[] }[] };
      if (strategy === 'hybrid') {
        latencies.push(performance.now() - t0);
        const ranked = [...new Set(result.facts.flatMap((f) => f.turnIds))];
        const rankOf = (id: string) => ranked.indexOf(id) + 1 || null;
        details.push({ userId, category: CATEGORIES[q.category]!, question: q.question, evidence: Object.fromEntries([...evidence].map((id) => [id, rankOf(id)])) });
      }
      ((hits[strategy] ??= {})[q.category] ??= []).push(recallAt(result.facts, evidence));
    }
    progress('asking questions', ++asked, questions.length);
  }
  // The ablations call the route's use case in process: only the ranking policy differs. The first, which changes
  // nothing, must give the hybrid row (checked below).
  /** Per ablation, per conversation, each question's R@10: a part that helps in every conversation more likely helps in others. */
  const byConversation: Record<string, Record<string, number[]>> = {};
  let ablated = 0;
  for (const [label, change] of ABLATIONS) {
    for (const { userId, q } of questions) {
      const result = await searchFacts(host.runtime, userId, { query: q.question, topK: 50, sources: ['turns'], mode: 'search' }, undefined, { ...DEFAULT_RANKING, ...change });
      const recalls = recallAt(result.facts, new Set(evidenceIds(q)));
      ((hits[label] ??= {})[q.category] ??= []).push(recalls);
      ((byConversation[label] ??= {})[userId] ??= []).push(recalls[0]!);
    }
    progress('ablations', ++ablated, ABLATIONS.length);
  }

  // Context size at the end of each conversation, against the whole conversation.
  const contextRatios = [];
  for (const c of conversations) {
    const last = sessionsOf(c).at(-1)!;
    const ctx = (await (await fetch(`${host.url}/v1/users/${c.sample_id}/sessions/${last}/context`)).json()) as { tokens: number };
    contextRatios.push({ conversation: c.sample_id, contextTokens: ctx.tokens, conversationTokens: countTokens(fullTexts.get(c.sample_id)!) });
  }

  const mean = (rows: number[][], i: number) => rows.reduce((s, r) => s + r[i]!, 0) / Math.max(1, rows.length);
  type Recall = { n: number } & Record<string, number>;
  /** A ranking's mean recall at each budget, per category and overall. */
  const summarise = (byCategory: Record<number, number[][]>): Record<string, Recall> => {
    const per: Record<string, Recall> = {};
    const all: number[][] = [];
    for (const [cat, name] of Object.entries(CATEGORIES)) {
      const rows = byCategory[Number(cat)] ?? [];
      all.push(...rows);
      per[name] = { n: rows.length, ...Object.fromEntries(BUDGETS.map((k, i) => [`R@${k}`, Number(mean(rows, i).toFixed(3))])) };
    }
    per.overall = { n: all.length, ...Object.fromEntries(BUDGETS.map((k, i) => [`R@${k}`, Number(mean(all, i).toFixed(3))])) };
    return per;
  };
  const summary = Object.fromEntries(Object.keys(STRATEGIES).map((s) => [s, summarise(hits[s]!)]));
  const ablations = Object.fromEntries(ABLATIONS.map(([label]) => [label, summarise(hits[label]!)]));

  console.log(`\nLoCoMo evidence recall (${dataPath.split('/').pop()}, ${conversations.length} conversations, ${totalTurns} turns, ${questions.length} questions; models: ${host.runtime.chat.model}, ${host.runtime.embedder.model})`);
  console.log('strategy  category       n     R@10   R@25   R@50');
  for (const [strategy, per] of Object.entries(summary)) {
    for (const [cat, r] of Object.entries(per)) console.log(`${strategy.padEnd(9)} ${cat.padEnd(12)} ${String(r.n).padStart(4)}   ${r['R@10']!.toFixed(3)}  ${r['R@25']!.toFixed(3)}  ${r['R@50']!.toFixed(3)}`);
  }
  const cells = (r: Recall) => BUDGETS.map((k) => r[`R@${k}`]!.toFixed(3)).join(' / ');
  const columns = [...Object.values(CATEGORIES), 'overall'];
  const base = ablations[ABLATIONS[0]![0]]!.overall!;
  console.log(`\nAblations, hybrid: R@10 / R@25 / R@50, and overall R@10 against the first row\n${'part turned off'.padEnd(40)}${columns.map((c) => c.padEnd(23)).join('')}ΔR@10`);
  for (const [label, per] of Object.entries(ablations)) {
    const delta = per.overall!['R@10']! - base['R@10']!;
    console.log(`${label.padEnd(40)}${columns.map((c) => cells(per[c]!).padEnd(23)).join('')}${delta >= 0 ? '+' : ''}${delta.toFixed(3)}`);
  }
  const users = conversations.map((c) => c.sample_id);
  const r10 = (label: string, user: string) => byConversation[label]![user]!.reduce((a, b) => a + b, 0) / byConversation[label]![user]!.length;
  console.log(`\nAblations by conversation: R@10\n${'part turned off'.padEnd(40)}${users.map((u) => u.padEnd(10)).join('')}`);
  for (const [label] of ABLATIONS) console.log(`${label.padEnd(40)}${users.map((u) => r10(label, u).toFixed(3).padEnd(10)).join('')}`);
  if (cells(base) !== cells(summary.hybrid!.overall!)) console.log('WARNING: the ablations\' first row differs from hybrid search over HTTP: the two paths do not rank alike');
  console.log(`hybrid search latency over HTTP: p50 ${percentile(latencies, 50).toFixed(1)} ms, p95 ${percentile(latencies, 95).toFixed(1)} ms (n=${latencies.length})`);
  for (const r of contextRatios) console.log(`context at the end of ${r.conversation}: ${r.contextTokens} tokens vs ${r.conversationTokens} for the whole conversation (${((100 * r.contextTokens) / r.conversationTokens).toFixed(1)}%)`);
  console.log(`ingest + projection: ${ingestSeconds.toFixed(1)} s`);
  const reportDir = join(process.cwd(), '.eval');
  mkdirSync(reportDir, { recursive: true });
  const report = { data: dataPath, turns: totalTurns, questions: questions.length, recall: summary, ablations, ablationsR10ByConversation: Object.fromEntries(ABLATIONS.map(([label]) => [label, Object.fromEntries(users.map((u) => [u, Number(r10(label, u).toFixed(3))]))])), latencyMs: { p50: percentile(latencies, 50), p95: percentile(latencies, 95) }, context: contextRatios, ingestSeconds };
  writeFileSync(join(reportDir, 'locomo-questions.json'), JSON.stringify(details, null, 1));
  const out = join(reportDir, 'locomo.json');
  writeFileSync(out, JSON.stringify(report, null, 2));
  console.log(JSON.stringify(report));
} finally {
  await host.stop();
  if (!keptDir) rmSync(dataDir, { recursive: true, force: true });
}
