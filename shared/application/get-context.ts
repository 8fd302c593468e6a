import { isTurn } from '../contracts/events.js';
import type { ContextQuery, ContextResponse } from '../contracts/context.js';
import type { SessionKey } from '../contracts/ids.js';
import { buildContext } from '../domain/context.js';
import { notFound } from '../domain/errors.js';
import { countTokens } from '../domain/tokens.js';
import type { Deps } from './ports.js';

/**
 * The compact context block for a session: what the projection has summarised plus every turn it has not,
 * read straight from the events so a turn is never missing while the projection catches up.
 */
export async function getContext(deps: Pick<Deps, 'events' | 'sessions' | 'memory'>, key: SessionKey, query: ContextQuery): Promise<ContextResponse> {
  const stored = await deps.sessions.get(key);
  const coveredThrough = stored?.doc.chunkedThroughSeq ?? 0;
  const [unsummarised, lastTurns] = await Promise.all([
    deps.events.read(key, coveredThrough),
    deps.events.readLastTurns(key, deps.memory.nActiveTurns),
  ]);
  if (!stored && unsummarised.length === 0) throw notFound(`Session ${key.sessionId}`);

  const bySeq = new Map([...lastTurns, ...unsummarised.filter(isTurn)].map((t) => [t.metadata.seq, t]));
  const turns = [...bySeq.values()].sort((a, b) => a.metadata.seq - b.metadata.seq);
  const built = buildContext({
    profile: null,
    recentSessions: [],
    summary: stored?.doc.cumulativeSummary ?? '',
    summaryCoversThroughSeq: coveredThrough,
    turns,
    nActiveTurns: deps.memory.nActiveTurns,
    countTokens,
    ...(query.maxTokens !== undefined && { maxTokens: query.maxTokens }),
  });
  return { ...key, ...built, summaryCoversThroughSeq: coveredThrough, memoryRefs: [] };
}
