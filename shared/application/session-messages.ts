import type { SessionKey } from '../contracts/ids.js';
import type { MessagesQuery, MessagesResponse } from '../contracts/messages.js';
import { toContextTurn } from '../domain/context.js';
import { callsFor, storedTurn, toOpenAIMessage, unansweredResults } from '../domain/messages.js';
import { verbatimView } from './get-context.js';

/** How far back a thread that opens with tool results looks for their call: one assistant turn and its (at most 128) results. */
const CALL_LOOKBACK_TURNS = 129;

/**
 * The verbatim part of an agent's thread (the turns its context shows verbatim) as messages a model takes as they are.
 * When that part opens with tool results whose call lies before it, the calling assistant turn (and its other results)
 * is put back in front: a chat model refuses a tool result that follows no call.
 */
export async function getSessionMessages(deps: Parameters<typeof verbatimView>[0], key: SessionKey, query: MessagesQuery): Promise<MessagesResponse> {
  const view = await verbatimView(deps, key, query.agentId);
  let turns = view.turns.map(toContextTurn);
  const open = unansweredResults(turns);
  if (open.size > 0) {
    const before = await deps.events.readLastTurns(key, CALL_LOOKBACK_TURNS, turns[0]!.seq);
    turns = [...callsFor(before.map(toContextTurn), open), ...turns];
  }
  const head = { ...key, ...(query.agentId && { agentId: query.agentId }), summaryCoversThroughSeq: view.summaryCoversThroughSeq };
  return query.format === 'raw' ? { ...head, format: 'raw', turns: turns.map(storedTurn) } : { ...head, format: 'openai', messages: turns.map(toOpenAIMessage) };
}
