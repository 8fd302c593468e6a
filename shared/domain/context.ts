import type { TurnAppended } from '../contracts/events.js';
import type { ContextHandoff, ContextTurn, OtherAgent, RecentSession } from '../contracts/context.js';
import type { ContextSlot } from '../contracts/slots.js';
import { MemoryError } from './errors.js';
import { placeholder } from './memory-ref.js';
import { renderTurn } from './turns.js';

/** The turns of one thread the context reads: every turn after its summary's coverage, plus (at least) its last `nActiveTurns`. */
export interface ThreadTurns {
  /** The thread's turns up to this seq are covered by the context's summary. */
  coversThroughSeq: number;
  /** Ascending by seq. */
  turns: readonly TurnAppended[];
}

export interface ContextInput {
  profile: string | null;
  recentSessions: readonly RecentSession[];
  /** The last handoff to the agent whose context this is. */
  handoff?: ContextHandoff | null;
  /** The other agents' thread summaries: what the session shares with this agent. */
  otherAgents?: readonly OtherAgent[];
  /** Slots the caller may see: shown after the init block, counted in the budget, never dropped. */
  slots?: readonly ContextSlot[];
  summary: string;
  /** The threads shown verbatim: the whole session as one, or an agent's thread and the turns every agent shares. */
  threads: readonly ThreadTurns[];
  nActiveTurns: number;
  maxTokens?: number;
  countTokens: (text: string) => number;
}

export interface BuiltContext {
  text: string;
  tokens: number;
  sections: {
    profile: string | null;
    recentSessions: RecentSession[];
    handoff?: ContextHandoff | null;
    otherAgents?: OtherAgent[];
    slots: ContextSlot[];
    summary: string;
    turns: ContextTurn[];
  };
}

/** A thread's verbatim turns: those its summary does not cover, and never fewer than its last `n`. */
function verbatimOf(thread: ThreadTurns, n: number): readonly TurnAppended[] {
  const unsummarised = thread.turns.filter((t) => t.metadata.seq > thread.coversThroughSeq);
  return unsummarised.length >= n ? unsummarised : thread.turns.slice(-n);
}

/** The verbatim turns of a view's threads, in seq order: what the context shows of them word for word. */
export const verbatimTurns = (threads: readonly ThreadTurns[], nActiveTurns: number): TurnAppended[] =>
  threads.flatMap((t) => verbatimOf(t, nActiveTurns)).sort((a, b) => a.metadata.seq - b.metadata.seq);

/**
 * The context block of the design: (agent view: the handoff received first), init block (profile, recent sessions),
 * slots, (agent view: what other agents did), cumulative summary, active turns. Invariant, per thread: every turn is
 * in the summary's coverage or verbatim, and never fewer than `nActiveTurns` are verbatim. The budget may drop the
 * init block (oldest session summaries first, then the profile) and then the other agents' summaries, but never a
 * turn, a slot or the handoff; if what must stay does not fit, the request fails with `context_budget_exceeded`.
 */
export function buildContext(input: ContextInput): BuiltContext {
  const verbatim = verbatimTurns(input.threads, input.nActiveTurns);
  const turns = verbatim.map(toContextTurn);
  const handoff = input.handoff ?? null;
  const slots = [...(input.slots ?? [])];

  let profile = input.profile;
  let recentSessions = [...input.recentSessions];
  let otherAgents = [...(input.otherAgents ?? [])];
  for (;;) {
    const text = renderContext({ profile, recentSessions, handoff, otherAgents, slots, summary: input.summary, turns: verbatim });
    const tokens = input.countTokens(text);
    const sections = {
      profile,
      recentSessions,
      ...(input.handoff !== undefined && { handoff }),
      ...(input.otherAgents !== undefined && { otherAgents }),
      slots,
      summary: input.summary,
      turns,
    };
    if (input.maxTokens === undefined || tokens <= input.maxTokens) return { text, tokens, sections };
    if (recentSessions.length > 0) recentSessions = recentSessions.slice(1);
    else if (profile !== null) profile = null;
    else if (otherAgents.length > 0) otherAgents = otherAgents.slice(0, -1);
    else {
      throw new MemoryError('context_budget_exceeded', `The session's slots, handoff, summary and unsummarised turns need ${tokens} tokens; maxTokens is ${input.maxTokens}`, {
        requiredTokens: tokens,
        maxTokens: input.maxTokens,
      });
    }
  }
}

interface Shown {
  profile: string | null;
  recentSessions: readonly RecentSession[];
  handoff: ContextHandoff | null;
  otherAgents: readonly OtherAgent[];
  slots: readonly ContextSlot[];
  summary: string;
  turns: readonly TurnAppended[];
}

function renderContext({ profile, recentSessions, handoff, otherAgents, slots, summary, turns }: Shown): string {
  const blocks: string[] = [];
  if (handoff) blocks.push(renderHandoff(handoff));
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
  if (otherAgents.length > 0) blocks.push(`### Other Agents\n${otherAgents.map((a) => `- ${a.agentId}: ${a.summary}`).join('\n')}`);
  if (summary) blocks.push(`### Conversation Summary\n${summary}`);
  if (turns.length > 0) blocks.push(`### Active Conversation\n${turns.map(renderTurn).join('\n')}`);
  return blocks.join('\n\n');
}

function renderHandoff(h: ContextHandoff): string {
  const lines = [`### Handoff\nFrom ${h.fromAgentId} at ${formatWhen(h.at)}${h.note ? `: ${h.note}` : ''}`];
  if (h.senderSummary) lines.push(`${h.fromAgentId}'s thread: ${h.senderSummary}`);
  if (h.memoryRefs.length > 0) lines.push(`Memory passed along: ${h.memoryRefs.map(placeholder).join(' ')}`);
  return lines.join('\n');
}

/** "12:00 PM, Dec 04, 2024" in UTC, as in the design's init block. */
function formatWhen(iso: string): string {
  const d = new Date(iso);
  const time = d.toLocaleTimeString('en-US', { hour: '2-digit', minute: '2-digit', hour12: true, timeZone: 'UTC' });
  const date = d.toLocaleDateString('en-US', { month: 'short', day: '2-digit', year: 'numeric', timeZone: 'UTC' });
  return `${time}, ${date}`;
}

export function toContextTurn(turn: TurnAppended): ContextTurn {
  const { turnId, role, name, agentId, content, timestamp, toolCalls, toolCallId, memoryRef } = turn.data;
  return { seq: turn.metadata.seq, turnId, role, content, timestamp, ...(name && { name }), ...(agentId && { agentId }), ...(toolCalls && { toolCalls }), ...(toolCallId && { toolCallId }), ...(memoryRef && { memoryRef }) };
}
