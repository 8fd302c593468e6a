import type { ChatMessage, ToolCallRequest, ToolDefinition } from '../../application/ports.js';
import { bound, parseTranscript, sentences, squash, terms } from './text.js';

/** Semantic similarity of a query to texts (cosine, −1…1); optional — without it answers are matched on words only. */
export interface SentenceRanker {
  similarities(query: string, texts: readonly string[]): Promise<number[]>;
}

export interface PlannedTurn {
  content: string | null;
  toolCalls: ToolCallRequest[];
}

export const NO_FACTS = 'No relevant facts found: the stored memories the tools returned do not answer this question.';

const MAX_QUERY_CHARS = 500;
const MAX_FACTS = 5;
const MAX_ANSWER_CHARS = 1_200;
const MAX_CANDIDATES = 400;
/** Cosine similarity from which the sentence encoder's match counts as relevant (USE Lite: related ≈0.4+, unrelated <0.2). */
const SEMANTIC_THRESHOLD = 0.35;

/**
 * One turn of the retrieval agent, planned without a language model. Phase 1 — the conversation ends with the
 * question and no tool has answered since: call every offered tool once with the question as its query (ids
 * `call_<n>`, numbered after any earlier calls). Phase 2 — tool results are in: answer with the result sentences that
 * best match the question (shared content words, and the sentence encoder's similarity when a ranker is given), most
 * relevant first with the id of the result they came from, or say plainly that nothing relevant was found.
 */
export async function planTurn(messages: readonly ChatMessage[], tools: readonly ToolDefinition[], ranker?: SentenceRanker): Promise<PlannedTurn> {
  const lastUser = messages.findLastIndex((m) => m.role === 'user');
  const asked = messages[lastUser];
  const question = asked?.role === 'user' ? squash(asked.content) : '';
  const results = messages.slice(lastUser + 1).filter((m): m is Extract<ChatMessage, { role: 'tool' }> => m.role === 'tool');

  if (results.length === 0 && tools.length > 0 && question) {
    const earlier = messages.reduce((n, m) => n + (m.role === 'assistant' ? (m.toolCalls?.length ?? 0) : 0), 0);
    const query = bound(question, MAX_QUERY_CHARS);
    return { content: null, toolCalls: tools.map((tool, i) => ({ id: `call_${earlier + i + 1}`, name: tool.name, arguments: { [queryArgument(tool)]: query } })) };
  }
  if (!question) return { content: 'No question was asked.', toolCalls: [] };
  return { content: await answer(question, results.map((r) => r.content), ranker), toolCalls: [] };
}

/** `query` unless the tool's JSON schema names no such property but another string one. */
function queryArgument(tool: ToolDefinition): string {
  const properties = tool.parameters.properties;
  if (!properties || typeof properties !== 'object' || 'query' in properties) return 'query';
  const string = Object.entries(properties as Record<string, { type?: unknown }>).find(([, p]) => p?.type === 'string');
  return string?.[0] ?? 'query';
}

interface Fact {
  text: string;
  source?: string;
  order: number;
}

async function answer(question: string, contents: readonly string[], ranker?: SentenceRanker): Promise<string> {
  const facts = uniqueFacts(contents.flatMap((c) => documents(parse(c))).flatMap((d) => splitFacts(d.text, d.id))).slice(0, MAX_CANDIDATES);
  if (facts.length === 0) return NO_FACTS;
  const wanted = terms(question);
  const lexical = facts.map((f) => {
    if (wanted.size === 0) return 0;
    const have = terms(f.text);
    let shared = 0;
    for (const t of wanted) if (have.has(t)) shared++;
    return shared / wanted.size;
  });
  const semantic = ranker ? await ranker.similarities(question, facts.map((f) => f.text)) : facts.map(() => 0);
  const scored = facts
    .map((fact, i) => ({ fact, lexical: lexical[i]!, semantic: semantic[i] ?? 0 }))
    .filter((s) => s.lexical > 0 || s.semantic >= SEMANTIC_THRESHOLD)
    .map((s) => ({ ...s, score: s.lexical + (ranker ? s.semantic : 0) }))
    .sort((a, b) => b.score - a.score || a.fact.order - b.fact.order);
  if (scored.length === 0) return NO_FACTS;
  const lines: string[] = [];
  let used = 0;
  for (const { fact } of scored.slice(0, MAX_FACTS)) {
    const line = `- ${bound(fact.text, 400)}${fact.source ? ` [${fact.source}]` : ''}`;
    if (used + line.length + 1 > MAX_ANSWER_CHARS) break;
    lines.push(line);
    used += line.length + 1;
  }
  return ['Relevant facts found in memory (quoted from the search results):', ...lines].join('\n');
}

function parse(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

const ID_KEYS = ['id', 'interactionId', 'insightId', 'sessionId', 'summaryId'];
const TEXT_KEYS = ['text', 'summary', 'content', 'profile', 'insight', 'answer', 'cumulativeSummary', 'snippet'];

/** Texts in a tool result: strings, or objects' text fields with the object's id, found at any depth. */
function documents(value: unknown): { id?: string; text: string }[] {
  if (typeof value === 'string') return value.trim() ? [{ text: value }] : [];
  if (Array.isArray(value)) return value.flatMap(documents);
  if (!value || typeof value !== 'object') return [];
  const record = value as Record<string, unknown>;
  const idKey = ID_KEYS.find((k) => typeof record[k] === 'string' || typeof record[k] === 'number');
  const id = idKey ? String(record[idKey]) : undefined;
  const own = TEXT_KEYS.flatMap((k) => (typeof record[k] === 'string' && record[k] ? [{ ...(id && { id }), text: record[k] }] : []));
  const nested = Object.entries(record)
    .filter(([k, v]) => !TEXT_KEYS.includes(k) && v !== null && typeof v === 'object')
    .flatMap(([, v]) => documents(v));
  return [...own, ...nested];
}

/** Sentences of a text; a transcript's turns lose their role prefix but keep who spoke (`User: …`). */
function splitFacts(text: string, source?: string): Omit<Fact, 'order'>[] {
  const turns = /^(user|assistant|tool|system)\b[^:\n]{0,80}: /m.test(text) ? parseTranscript(text) : [{ role: undefined, content: text }];
  return turns.flatMap((t) =>
    sentences(t.content)
      .map(squash)
      .filter((s) => s.length > 3)
      .map((s) => ({ text: t.role === 'user' || t.role === 'assistant' ? `${t.role === 'user' ? 'User' : 'Assistant'}: ${s}` : s, ...(source && { source }) })),
  );
}

function uniqueFacts(facts: readonly Omit<Fact, 'order'>[]): Fact[] {
  const seen = new Set<string>();
  const out: Fact[] = [];
  for (const f of facts) {
    const key = f.text.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ ...f, order: out.length });
  }
  return out;
}
