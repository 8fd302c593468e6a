import { createHash } from 'node:crypto';
import type { TurnAppended } from '../contracts/events.js';
import type { SessionKey } from '../contracts/ids.js';
import { offloadTokens, placeholder } from '../domain/memory-ref.js';
import { DEFAULT_ARTIFACT_TTL_CLASS } from '../domain/retention.js';
import { countTokens } from '../domain/tokens.js';
import type { DetailMemory } from './artifact-ports.js';
import { storeArtifact } from './artifacts.js';
import type { Clock, Ids } from './ports.js';

type TurnData = TurnAppended['data'];

/** The artifact key of an offloaded turn: derived from user, session and turnId, so a retried append finds it. */
export const turnArtifactKey = (key: SessionKey, turnId: string) =>
  `turn-${createHash('sha256').update(`${key.userId}\n${key.sessionId}\n${turnId}`).digest('hex').slice(0, 24)}`;

/**
 * Offload at append: a turn with more than OFFLOAD_THRESHOLD_TOKENS tokens is stored as an artifact (nothing is cut),
 * and the event keeps the placeholder as its content plus the reference (key, description, tokens, bytes). A tool
 * output is episodic memory (7 days, then its MemoryRef resolves like a missing one); a large user, assistant or system
 * message is part of what was said and is kept (semantic).
 */
export async function offloadTurn(deps: { detail: DetailMemory; clock: Clock; ids: Ids }, key: SessionKey, turn: TurnData): Promise<TurnData> {
  const withCalls = turn.toolCalls ? { ...turn, toolCalls: await Promise.all(turn.toolCalls.map((call, index) => offloadToolCall(deps, key, turn, call, index))) } : turn;
  const tokens = offloadTokens(turn.content, deps.detail.limits.offloadThresholdTokens, countTokens);
  if (tokens === undefined) return withCalls;
  const record = await storeArtifact(
    deps,
    key.userId,
    {
      content: turn.content,
      key: turnArtifactKey(key, turn.turnId),
      type: turn.role === 'tool' ? 'tool_output' : `${turn.role}_message`,
      tokens,
      ttlClass: turn.role === 'tool' ? DEFAULT_ARTIFACT_TTL_CLASS.offloadedToolOutput : DEFAULT_ARTIFACT_TTL_CLASS.offloadedMessage,
      sessionId: key.sessionId,
      turnId: turn.turnId,
      ...(turn.name && { source: turn.name }),
      ...(turn.agentId && { agentId: turn.agentId }),
    },
    // A retry of the same turnId keeps the first recording, as the event store does.
    { reuseExisting: true },
  );
  const ref = { key: record.key, description: record.description, tokens: record.tokens, bytes: record.bytes };
  return { ...withCalls, content: placeholder(ref), memoryRef: ref };
}

type ToolCall = NonNullable<TurnData['toolCalls']>[number];

/**
 * A tool call whose arguments have more than OFFLOAD_THRESHOLD_TOKENS tokens is offloaded like large content: the
 * arguments are stored as an artifact (`tool_call_arguments`, kept like the turn's other content) and the call keeps the
 * MemoryRef placeholder as its `arguments`, so context reads and searches never carry (or tokenize) them again.
 */
async function offloadToolCall(deps: { detail: DetailMemory; clock: Clock; ids: Ids }, key: SessionKey, turn: TurnData, call: ToolCall, index: number): Promise<ToolCall> {
  const tokens = offloadTokens(call.function.arguments, deps.detail.limits.offloadThresholdTokens, countTokens);
  if (tokens === undefined) return call;
  const record = await storeArtifact(
    deps,
    key.userId,
    {
      content: call.function.arguments,
      key: turnArtifactKey(key, `${turn.turnId}\ntool-call\n${index}`),
      type: 'tool_call_arguments',
      tokens,
      ttlClass: DEFAULT_ARTIFACT_TTL_CLASS.offloadedMessage,
      sessionId: key.sessionId,
      turnId: turn.turnId,
      source: call.function.name,
      ...(turn.agentId && { agentId: turn.agentId }),
    },
    { reuseExisting: true },
  );
  return { ...call, function: { ...call.function, arguments: placeholder({ key: record.key, description: record.description, tokens: record.tokens }) } };
}
