import type { TurnAppended } from '../contracts/events.js';
import type { ContextResponse } from '../contracts/context.js';
import { MemoryError } from '../domain/errors.js';
import { canSee, type Viewer } from '../domain/scopes.js';
import type { DetailMemory } from './artifact-ports.js';
import { readContent } from './artifacts.js';

/**
 * First use: the most recent offloaded turn is shown in full while no assistant turn follows it (the agent has not
 * answered it yet); every other offloaded turn, and this one once answered, appears as its MemoryRef placeholder.
 * `turns` is the contiguous tail of the session the context shows (ascending). Returns the seq to expand, if any.
 */
export function firstUseSeq(turns: readonly TurnAppended[]): number | undefined {
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i]!;
    if (turn.data.role === 'assistant') return undefined;
    if (turn.data.memoryRef) return turn.metadata.seq;
  }
  return undefined;
}

/**
 * The turns with the first-use turn's full content in place of its placeholder (unchanged if its artifact is gone or
 * expired at `now`, or one `viewer` may not see: the placeholder then stands, like any reference to a missing artifact).
 * Without a viewer, every artifact of the user counts as visible (the behaviour before scopes).
 */
export async function expandFirstUse(
  detail: DetailMemory | undefined,
  userId: string,
  turns: readonly TurnAppended[],
  now: Date = new Date(),
  viewer?: Viewer,
): Promise<{ turns: TurnAppended[]; expandedSeq?: number }> {
  const seq = firstUseSeq(turns);
  if (!detail || seq === undefined) return { turns: [...turns] };
  const turn = turns.find((t) => t.metadata.seq === seq)!;
  const record = await detail.artifacts.get(userId, turn.data.memoryRef!.key, now);
  if (!record || (viewer && !canSee(record, viewer))) return { turns: [...turns] };
  let content: string;
  try {
    content = await readContent(detail, record);
  } catch (error) {
    if (error instanceof MemoryError && error.code === 'not_found') return { turns: [...turns] };
    throw error;
  }
  return { turns: turns.map((t) => (t === turn ? { ...t, data: { ...t.data, content } } : t)), expandedSeq: seq };
}

/** The references the context shows as placeholders (the expanded first-use turn is not one of them). */
export function memoryRefsIn(shown: readonly TurnAppended[], verbatimSeqs: ReadonlySet<number>, expandedSeq?: number): ContextResponse['memoryRefs'] {
  return shown.flatMap((t) =>
    t.data.memoryRef && verbatimSeqs.has(t.metadata.seq) && t.metadata.seq !== expandedSeq
      ? [{ key: t.data.memoryRef.key, tokens: t.data.memoryRef.tokens, description: t.data.memoryRef.description, seq: t.metadata.seq, turnId: t.data.turnId }]
      : [],
  );
}

/**
 * The references `viewer` may see: a reference to an artifact it may not see (or one gone or expired at `now`) is
 * left out, as the listing and search leave it out. One point read per distinct key.
 */
export async function visibleMemoryRefs(
  detail: DetailMemory | undefined,
  viewer: Viewer,
  refs: ContextResponse['memoryRefs'],
  now: Date = new Date(),
): Promise<ContextResponse['memoryRefs']> {
  if (!detail || refs.length === 0) return refs;
  const keys = [...new Set(refs.map((r) => r.key))];
  const records = await Promise.all(keys.map((key) => detail.artifacts.get(viewer.userId, key, now)));
  const visible = new Set(keys.filter((_, i) => records[i] && canSee(records[i], viewer)));
  return refs.filter((r) => visible.has(r.key));
}
