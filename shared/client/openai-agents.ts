// Zero-code memory for the OpenAI Agents SDK (`@openai/agents`): a `Session` backed by the memory service.
//   const session = new MemoryServiceSession({ client, userId, sessionId });
//   await run(agent, 'Hi', { session, sessionInputCallback: session.inputCallback });
// `@openai/agents` is an optional peer dependency, imported for its types only.
import type { AgentInputItem, Session, SessionInputCallback } from '@openai/agents';
import type { ContextTurn } from '../contracts/context.js';
import type { TurnInput } from './client.js';
import { MemoryServiceError } from './errors.js';
import { guarded, MEMORY_BLOCK_HEADER, memoryBlock, readContext, searchFactsFor, type MemoryHookOptions } from './memory-block.js';

export type MemoryServiceSessionOptions = MemoryHookOptions;

type ToolCalls = NonNullable<TurnInput['toolCalls']>;

/**
 * The session's history lives in the memory service:
 * - `getItems` reads the session's context: a system item with the memory block (profile, recent sessions, the
 *   summary of older turns, handoff), then the verbatim turns as items (tool calls and results with their structure);
 * - `addItems` appends the run's items as turns (user, assistant, function calls, function results);
 * - `inputCallback` (pass it as the run's `sessionInputCallback`) appends the new input before the model call, so a
 *   new session's first request already carries the user's long-term memory, and adds the top facts for the user's
 *   message when `facts` is on. The runner's later `addItems` of the same input reuses its turn ids: stored once.
 * The service keeps every turn as an event, so `popItem` is refused; `clearSession` forgets the session.
 */
export class MemoryServiceSession implements Session {
  readonly #options: MemoryServiceSessionOptions;
  /** Turns appended ahead by `inputCallback`, oldest first, until `addItems` sees them again. */
  #ahead: TurnInput[] = [];

  constructor(options: MemoryServiceSessionOptions) {
    this.#options = options;
  }

  async getSessionId(): Promise<string> {
    return this.#options.sessionId;
  }

  async getItems(limit?: number): Promise<AgentInputItem[]> {
    const context = await guarded(this.#options, 'read', () => readContext(this.#options), null);
    if (!context) return [];
    const turns = context.sections.turns.flatMap(itemsOf);
    const recent = limit === undefined ? turns : turns.slice(-limit);
    const block = memoryBlock(context, [], 'none');
    return block === null ? recent : [{ role: 'system', content: block }, ...recent];
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    const turns = turnsOf(items, this.#options.agentId).map((turn) => {
      const ahead = this.#ahead[0];
      if (!ahead || ahead.role !== turn.role || ahead.content !== turn.content || ahead.toolCallId !== turn.toolCallId) return turn;
      this.#ahead.shift();
      return { ...turn, turnId: ahead.turnId };
    });
    if (turns.length === 0) return;
    await guarded(this.#options, 'write', () => this.#options.client.appendTurns(this.#options.userId, this.#options.sessionId, turns), undefined);
  }

  async popItem(): Promise<AgentInputItem | undefined> {
    throw new MemoryServiceError({ code: 'method_not_allowed', status: 405, detail: 'The memory service keeps every turn as an event: an item cannot be popped (clearSession forgets the session)' });
  }

  /**
   * Forgets the session and everything derived from it, and waits for the purge to finish: a forget completes its
   * grace (the service's FORGET_GRACE_SECONDS, 10 minutes by default) after its purge at the earliest, so this polls
   * every 2 s for up to 30 minutes.
   */
  async clearSession(): Promise<void> {
    const { client, userId, sessionId } = this.#options;
    const { operationId } = await client.forgetSession(userId, sessionId);
    const done = await client.waitForOperation(operationId, { intervalMs: 2_000, maxPolls: 900 });
    if (done.status === 'failed') throw new MemoryServiceError({ code: 'internal', status: 500, detail: `Forgetting session ${sessionId} failed: ${done.error ?? 'unknown error'}` });
    this.#ahead = [];
  }

  /**
   * A `sessionInputCallback`: appends the new input first, then puts a fresh memory block (and the top facts for the
   * user's message) in front of the history. The history items and the new items are kept as they are.
   */
  readonly inputCallback: SessionInputCallback = async (history, newItems) => {
    const options = this.#options;
    const turns = turnsOf(newItems, options.agentId).map((t) => ({ ...t, turnId: globalThis.crypto.randomUUID() }));
    if (turns.length > 0) {
      this.#ahead.push(...turns);
      await guarded(options, 'write', () => options.client.appendTurns(options.userId, options.sessionId, turns), undefined);
    }
    const query = [...newItems].reverse().map(userText).find((t) => t !== undefined);
    const [context, facts] = await guarded(options, 'read', () => Promise.all([readContext(options), searchFactsFor(options, query)]), [null, []]);
    const block = memoryBlock(context, facts, 'none');
    const rest = history.filter((item) => !isMemoryBlock(item));
    return [...(block === null ? [] : [{ role: 'system' as const, content: block }]), ...rest, ...newItems];
  };
}

const isMemoryBlock = (item: AgentInputItem): boolean => 'role' in item && item.role === 'system' && typeof item.content === 'string' && item.content.startsWith(MEMORY_BLOCK_HEADER);

function userText(item: AgentInputItem): string | undefined {
  if (!('role' in item) || item.role !== 'user') return undefined;
  if (typeof item.content === 'string') return item.content;
  const text = item.content.flatMap((p) => (p.type === 'input_text' ? [p.text] : [])).join('\n');
  return text || undefined;
}

/** A stored turn as the SDK's input items: an assistant turn's text and each of its tool calls are separate items. */
function itemsOf(turn: ContextTurn): AgentInputItem[] {
  switch (turn.role) {
    case 'user':
      return [{ role: 'user', content: turn.content }];
    case 'system':
      return [{ role: 'system', content: turn.content }];
    case 'assistant':
      return [
        ...(turn.content ? [{ role: 'assistant' as const, status: 'completed' as const, content: [{ type: 'output_text' as const, text: turn.content }] }] : []),
        ...(turn.toolCalls ?? []).map((c) => ({ type: 'function_call' as const, callId: c.id, name: c.function.name, arguments: c.function.arguments, status: 'completed' as const })),
      ];
    case 'tool':
      return [{ type: 'function_call_result', callId: turn.toolCallId ?? turn.turnId, name: turn.name ?? 'tool', status: 'completed', output: { type: 'text', text: turn.content } }];
  }
}

/** The SDK's items as turns: a function call joins the assistant turn before it (one turn: text and tool calls). */
function turnsOf(items: readonly AgentInputItem[], agentId: string | undefined): TurnInput[] {
  const agent = agentId === undefined ? {} : { agentId };
  const turns: TurnInput[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      const call = { id: item.callId, type: 'function' as const, function: { name: item.name, arguments: item.arguments } };
      const last = turns.at(-1);
      if (last?.role === 'assistant') last.toolCalls = [...(last.toolCalls ?? []), call] as ToolCalls;
      else turns.push({ role: 'assistant', content: null, toolCalls: [call], ...agent });
    } else if (item.type === 'function_call_result') {
      turns.push({ role: 'tool', content: outputText(item.output), toolCallId: item.callId, name: item.name, ...agent });
    } else if ('role' in item && item.role === 'user') {
      const text = userText(item);
      if (text?.trim()) turns.push({ role: 'user', content: text, ...agent });
    } else if ('role' in item && item.role === 'assistant') {
      const text = item.content.flatMap((p) => (p.type === 'output_text' ? [p.text] : p.type === 'refusal' ? [p.refusal] : [])).join('');
      if (text.trim()) turns.push({ role: 'assistant', content: text, ...agent });
    }
    // System and developer messages (instructions, the memory block), reasoning and hosted-tool items are not turns.
  }
  return turns;
}

function outputText(output: Extract<AgentInputItem, { type: 'function_call_result' }>['output']): string {
  const text = typeof output === 'string' ? output : Array.isArray(output) ? output.map((p) => (p.type === 'input_text' ? p.text : `[${p.type}]`)).join('\n') : output.type === 'text' ? output.text : `[${output.type}]`;
  return text.trim() ? text : '(empty)';
}
