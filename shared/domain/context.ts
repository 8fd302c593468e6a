import type { TurnAppended } from '../contracts/events.js';
import type { ContextTurn, RecentSession } from '../contracts/context.js';
import type { ContextSlot } from '../contracts/slots.js';
import { MemoryError } from './errors.js';
import { renderTurn } from './turns.js';

export interface ContextInput {
  profile: string | null;
  recentSessions: readonly RecentSession[];
  /** Slots the caller may see: shown after the init block, counted in the budget, never dropped. */
  slots?: readonly ContextSlot[];
  summary: string;
  /** Turns up to this seq are covered by `summary`. */
  summaryCoversThroughSeq: number;
  /** Every turn after the coverage, plus (at least) the session's last `nActiveTurns` turns; ascending by seq. */
  turns: readonly TurnAppended[];
  nActiveTurns: number;
  maxTokens?: number;
  countTokens: (text: string) => number;
}

export interface BuiltContext {
  text: string;
  tokens: number;
  sections: { profile: string | null; recentSessions: RecentSession[]; slots: ContextSlot[]; summary: string; turns: ContextTurn[] };
}

/**
 * The context block of the design: init block (profile, recent sessions), cumulative summary, active turns.
 * Invariant: every turn is in the summary's coverage or verbatim, and never fewer than `nActiveTurns` are verbatim.
 * The budget may drop the init block (oldest session summaries first, then the profile) but never a turn;
 * if what must stay does not fit, the request fails with `context_budget_exceeded`.
 */
export function buildContext(input: ContextInput): BuiltContext {
  const unsummarised = input.turns.filter((t) => t.metadata.seq > input.summaryCoversThroughSeq);
  const verbatim = unsummarised.length >= input.nActiveTurns ? unsummarised : input.turns.slice(-input.nActiveTurns);
  const turns = verbatim.map(toContextTurn);
  const slots = [...(input.slots ?? [])];

  let profile = input.profile;
  let recentSessions = [...input.recentSessions];
  for (;;) {
    const text = renderContext(profile, recentSessions, slots, input.summary, verbatim);
    const tokens = input.countTokens(text);
    const sections = { profile, recentSessions, slots, summary: input.summary, turns };
    if (input.maxTokens === undefined || tokens <= input.maxTokens) return { text, tokens, sections };
    if (recentSessions.length > 0) recentSessions = recentSessions.slice(1);
    else if (profile !== null) profile = null;
    else {
      throw new MemoryError('context_budget_exceeded', `The session's slots, summary and unsummarised turns need ${tokens} tokens; maxTokens is ${input.maxTokens}`, {
        requiredTokens: tokens,
        maxTokens: input.maxTokens,
      });
    }
  }
}

function renderContext(profile: string | null, recentSessions: readonly RecentSession[], slots: readonly ContextSlot[], summary: string, turns: readonly TurnAppended[]): string {
  const blocks: string[] = [];
  if (profile || recentSessions.length > 0) {
    const init = ['<session_initialization>'];
    if (profile) init.push('### Key Insights', profile);
    if (recentSessions.length > 0) {
      init.push('### Recent Session Summaries', ...recentSessions.map((s) => `- At ${formatWhen(s.endedAt)}: ${s.summary}`));
    }
    init.push('</session_initialization>');
    blocks.push(init.join('\n'));
  }
  if (slots.length > 0) blocks.push(`### Slots\n${slots.map((s) => `- ${s.name} (${s.scope}): ${JSON.stringify(s.value)}`).join('\n')}`);
  if (summary) blocks.push(`### Conversation Summary\n${summary}`);
  if (turns.length > 0) blocks.push(`### Active Conversation\n${turns.map(renderTurn).join('\n')}`);
  return blocks.join('\n\n');
}

/** "12:00 PM, Dec 04, 2024" in UTC, as in the design's init block. */
function formatWhen(iso: string): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString('en-US', { hour: '2-digit', minute: '2-digit', hour12: true, timeZone: 'UTC' });
  const date = d.toLocaleDateString('en-US', { month: 'short', day: '2-digit', year: 'numeric', timeZone: 'UTC' });
  return `${time}, ${date}`;
}

function toContextTurn(turn: TurnAppended): ContextTurn {
  const { turnId, role, name, agentId, content, timestamp } = turn.data;
  return { seq: turn.metadata.seq, turnId, role, content, timestamp, ...(name && { name }), ...(agentId && { agentId }) };
}
