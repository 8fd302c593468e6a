import { eventDocument, eventKey, MemoryEvent, TurnAppended, type EventDraft } from '../../contracts/events.js';
import type { SessionKey } from '../../contracts/ids.js';
import { InteractionDocument } from '../../contracts/interactions.js';
import { SessionDocument } from '../../contracts/sessions.js';
import { conflict, forgetInProgress, sessionEnded } from '../../domain/errors.js';
import { FORGET_IN_PROGRESS } from './forget.js';
import type { AppendOutcome, ChangeFeed, EventStore, InteractionStore, Projections, SessionStore, Stores, Versioned } from '../../application/ports.js';
import type { Db } from './db.js';
import { asRequest, inBackground, isBackground } from './priority-gate.js';
import { vectorAt, vectorsParam } from './vector-params.js';
import { codesAt, storedCodes } from './compact-vectors.js';
import { PostgresSearchIndex } from './search.js';
import { PostgresInsightStore, PostgresSessionDirectory } from './insights.js';

/** An append waiting for the next grouped write (PGlite). */
interface WaitingAppend {
  key: SessionKey;
  drafts: readonly EventDraft[];
  recordedAt: Date;
  resolve: (outcomes: AppendOutcome[]) => void;
  reject: (error: unknown) => void;
  /** Appended by background work (the projection recording what it decided), not by a request. */
  background: boolean;
}

/** Bounds of one grouped append statement. */
const GROUP_MAX_APPENDS = 64;
const GROUP_MAX_EVENTS = 500;

// seq 0 is a placeholder: append_events stamps the real seq into id, seq and metadata.seq under the session lock.
const appendParams = (key: SessionKey, drafts: readonly EventDraft[], recordedAt: Date) => [
  key.userId,
  key.sessionId,
  drafts.map(eventKey),
  drafts.map((d) => d.type),
  drafts.map((d) => JSON.stringify(eventDocument(key, 0, d, recordedAt))),
];

const outcomesOf = (drafts: readonly EventDraft[], rows: readonly { seq: number; duplicate: boolean }[]): AppendOutcome[] =>
  rows.map((r, i) => {
    const draft = drafts[i]!;
    return { seq: r.seq, duplicate: r.duplicate, ...(draft.type === 'TurnAppended' && { turnId: draft.data.turnId }) };
  });

/** An error the database raised (it carries a SQLSTATE): the statement was rolled back. */
const isSqlState = (error: unknown) => typeof (error as { code?: unknown } | null)?.code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code);

/** append_events refuses a turn after the session's end request with SQLSTATE AM409 (migration 12). */
const SESSION_ENDED = 'AM409';

export class PostgresEventStore implements EventStore, ChangeFeed {
  private waiting: WaitingAppend[] = [];
  private writing = false;

  constructor(private readonly db: Db) {}

  /**
   * One append_events call per append: it takes the session's head lock, so seqs are gapless, and a known turnId gets
   * its original seq back. On PGlite (one connection: statements run one at a time anyway), appends that arrive in the
   * same event-loop turn, or while a write is running, are written together by one statement — one append_events call
   * per append, in arrival order, so seqs, idempotency and locking are exactly as if alone, and one round trip and
   * commit instead of many. The statement is atomic: if it fails, nothing of it was written, and every append of the
   * group is retried alone so each caller gets its own outcome.
   */
  async append(key: SessionKey, drafts: readonly EventDraft[], recordedAt: Date): Promise<AppendOutcome[]> {
    if (this.db.kind !== 'pglite' || drafts.length === 0) return this.appendAlone(key, drafts, recordedAt);
    return new Promise<AppendOutcome[]>((resolve, reject) => {
      this.waiting.push({ key, drafts, recordedAt, resolve, reject, background: isBackground() });
      if (this.writing) return;
      this.writing = true;
      setImmediate(() => void this.writeWaiting());
    });
  }

  private async appendAlone(key: SessionKey, drafts: readonly EventDraft[], recordedAt: Date): Promise<AppendOutcome[]> {
    try {
      const rows = await this.db.query<{ seq: number; duplicate: boolean }>(
        'SELECT seq, duplicate FROM append_events($1, $2, $3::text[], $4::text[], $5::jsonb[])',
        appendParams(key, drafts, recordedAt),
      );
      return outcomesOf(drafts, rows);
    } catch (error) {
      if ((error as { code?: unknown }).code === SESSION_ENDED) throw sessionEnded(key.sessionId);
      if ((error as { code?: unknown }).code === FORGET_IN_PROGRESS) throw forgetInProgress(key.userId, key.sessionId);
      throw error;
    }
  }

  private async writeWaiting(): Promise<void> {
    try {
      while (this.waiting.length > 0) {
        let events = 0;
        const size = this.waiting.findIndex((a, i) => i >= GROUP_MAX_APPENDS || (events += a.drafts.length) > GROUP_MAX_EVENTS);
        const group = this.waiting.splice(0, Math.max(1, size === -1 ? this.waiting.length : size));
        // This loop runs as the append that started it does, often the projection's, in the background. A group with
        // a client's append in it is written as a request: it waits for no background work queued on PGlite.
        await (group.every((a) => a.background) ? inBackground : asRequest)(() => this.writeGroup(group));
      }
    } finally {
      this.writing = false;
    }
  }

  private async writeGroup(group: readonly WaitingAppend[]): Promise<void> {
    if (group.length > 1 && (await this.appendGroup(group))) return;
    for (const a of group) await this.appendAlone(a.key, a.drafts, a.recordedAt).then(a.resolve, a.reject);
  }

  /**
   * Writes a group with one statement: append_events once per append, in order (UNION ALL runs its branches in
   * order). Returns false when the database refused the statement — then it was rolled back and nothing of it was
   * written, and the caller appends each one alone. Any other failure (the outcome of a statement that may have
   * committed is unknown) goes to every caller of the group, as it would for a single append.
   */
  private async appendGroup(group: readonly WaitingAppend[]): Promise<boolean> {
    const params: unknown[] = [];
    let sql: string;
    try {
      const branches = group.map((a, g) => {
        const n = params.push(...appendParams(a.key, a.drafts, a.recordedAt));
        return `SELECT ${g} AS g, r.n, r.seq, r.duplicate FROM append_events($${n - 4}, $${n - 3}, $${n - 2}::text[], $${n - 1}::text[], $${n}::jsonb[]) WITH ORDINALITY AS r(seq, duplicate, n)`;
      });
      sql = `${branches.join('\nUNION ALL\n')}\nORDER BY g, n`;
    } catch {
      return false; // an append that cannot be encoded: nothing was sent; alone, it fails on its own
    }
    let rows: { g: number; seq: number; duplicate: boolean }[];
    try {
      rows = await this.db.query(sql, params);
    } catch (error) {
      if (isSqlState(error)) return false;
      for (const a of group) a.reject(error);
      return true;
    }
    const byGroup = group.map(() => [] as typeof rows);
    for (const r of rows) byGroup[r.g]?.push(r);
    group.forEach((a, g) => {
      const mine = byGroup[g]!;
      if (mine.length === a.drafts.length) a.resolve(outcomesOf(a.drafts, mine));
      else a.reject(new Error(`append_events returned ${mine.length} rows for ${a.drafts.length} events`));
    });
    return true;
  }

  async read(key: SessionKey, afterSeq: number, limit = 100_000): Promise<MemoryEvent[]> {
    const rows = await this.db.query<{ doc: unknown }>(
      'SELECT doc FROM events WHERE user_id = $1 AND session_id = $2 AND seq > $3 ORDER BY seq LIMIT $4',
      [key.userId, key.sessionId, afterSeq, limit],
    );
    return rows.map((r) => MemoryEvent.parse(r.doc));
  }

  async readLastTurns(key: SessionKey, count: number, beforeSeq = 2 ** 31 - 1, thread?: { agentId?: string }): Promise<TurnAppended[]> {
    // A thread: the turns whose agentId is the thread's ('' stands for the turns that name no agent).
    const rows = await this.db.query<{ doc: unknown }>(
      `SELECT doc FROM events WHERE user_id = $1 AND session_id = $2 AND type = 'TurnAppended' AND seq < $4
         AND ($5::text IS NULL OR coalesce(doc->'data'->>'agentId', '') = $5)
       ORDER BY seq DESC LIMIT $3`,
      [key.userId, key.sessionId, count, beforeSeq, thread ? (thread.agentId ?? '') : null],
    );
    return rows.map((r) => TurnAppended.parse(r.doc)).reverse();
  }

  async sessions(userId?: string): Promise<SessionKey[]> {
    const rows = await this.db.query<{ user_id: string; session_id: string }>(
      'SELECT user_id, session_id FROM session_heads WHERE ($1::text IS NULL OR user_id = $1) AND last_seq > 0 ORDER BY user_id, session_id',
      [userId ?? null],
    );
    return rows.map((r) => ({ userId: r.user_id, sessionId: r.session_id }));
  }

  async lastSeq(key: SessionKey): Promise<number> {
    const [row] = await this.db.query<{ last_seq: number }>('SELECT last_seq FROM session_heads WHERE user_id = $1 AND session_id = $2', [key.userId, key.sessionId]);
    return row?.last_seq ?? 0;
  }

  async readFeed(cursor: string | null, limit: number): Promise<{ events: MemoryEvent[]; cursor: string | null }> {
    const [tx, position] = (cursor ?? '0:0').split(':');
    // Only transactions older than every one still running are read: an event that commits late
    // has a tx_id at or above that horizon, so it is picked up by a later read instead of being skipped.
    // Ordered by the columns (qualified: the bare names are the text aliases), so the index serves the LIMIT and the
    // order is the cursor's: by text, '10000' sorted before '9999' and a batch cut there skipped events.
    const rows = await this.db.query<{ doc: unknown; tx_id: string; position: string }>(
      `SELECT doc, tx_id::text AS tx_id, position::text AS position FROM events
       WHERE (tx_id, position) > ($1::text::xid8, $2::bigint)
         AND tx_id < pg_snapshot_xmin(pg_current_snapshot())
       ORDER BY events.tx_id, events.position LIMIT $3`,
      [tx, position, limit],
    );
    const last = rows.at(-1);
    return { events: rows.map((r) => MemoryEvent.parse(r.doc)), cursor: last ? `${last.tx_id}:${last.position}` : cursor };
  }

  async loadCheckpoint(name: string): Promise<string | null> {
    const [row] = await this.db.query<{ cursor: string }>('SELECT cursor FROM feed_checkpoints WHERE name = $1', [name]);
    return row?.cursor ?? null;
  }

  async saveCheckpoint(name: string, cursor: string): Promise<void> {
    await this.db.query(
      `INSERT INTO feed_checkpoints (name, cursor, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET cursor = EXCLUDED.cursor, updated_at = EXCLUDED.updated_at`,
      [name, cursor],
    );
  }
}

export class PostgresSessionStore implements SessionStore {
  constructor(private readonly db: Db) {}

  async get(key: SessionKey): Promise<Versioned<SessionDocument> | null> {
    const [row] = await this.db.query<{ doc: unknown; version: number }>('SELECT doc, version FROM sessions WHERE user_id = $1 AND session_id = $2', [key.userId, key.sessionId]);
    return row ? { doc: SessionDocument.parse(row.doc), version: String(row.version) } : null;
  }

  /** One statement for all the keys, reading one field of each document rather than parsing it whole. */
  async projectedThrough(keys: readonly SessionKey[]): Promise<number[]> {
    if (keys.length === 0) return [];
    const rows = await this.db.query<{ through: number }>(
      `SELECT coalesce((s.doc->>'projectedThroughSeq')::int, 0) AS through
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS k(user_id, session_id, n) LEFT JOIN sessions s USING (user_id, session_id)
       ORDER BY k.n`,
      [keys.map((k) => k.userId), keys.map((k) => k.sessionId)],
    );
    return rows.map((r) => r.through);
  }

  async put(doc: SessionDocument, expectedVersion: string | null): Promise<string> {
    const rows =
      expectedVersion === null
        ? await this.db.query<{ version: number }>(
            `INSERT INTO sessions (user_id, session_id, version, doc, updated_at) VALUES ($1, $2, 1, $3, $4)
             ON CONFLICT DO NOTHING RETURNING version`,
            [doc.userId, doc.sessionId, JSON.stringify(doc), doc.updatedAt],
          )
        : await this.db.query<{ version: number }>(
            `UPDATE sessions SET version = version + 1, doc = $3, updated_at = $4
             WHERE user_id = $1 AND session_id = $2 AND version = $5 RETURNING version`,
            [doc.userId, doc.sessionId, JSON.stringify(doc), doc.updatedAt, Number(expectedVersion)],
          );
    if (rows.length === 0) throw conflict(`Session ${doc.sessionId} was changed concurrently`);
    return String(rows[0]!.version);
  }
}

export class PostgresInteractionStore implements InteractionStore {
  constructor(private readonly db: Db) {}

  /** The interactions and their binary codes (the vector search's scan of a large user: PostgresSearchIndex), in one statement. */
  async upsert(docs: readonly InteractionDocument[]): Promise<void> {
    if (docs.length === 0) return;
    const windowVectors = docs.flatMap((d) => [d.contentVector, d.summaryVector]);
    const vectors = vectorsParam(windowVectors);
    await this.db.query(
      `WITH upserted AS (
         INSERT INTO interactions (user_id, id, session_id, from_seq, doc, embedding_model, content_vector, summary_vector, content_codes, summary_codes, tsv)
         SELECT r.user_id, r.id, r.session_id, r.from_seq, r.doc, r.model, ${vectorAt('$9', 'r.cv', 'r.cv_size')}, ${vectorAt('$9', 'r.sv', 'r.sv_size')},
                ${codesAt('$12', 'r.cv', 'r.cv_size')}, ${codesAt('$12', 'r.sv', 'r.sv_size')},
                to_tsvector('english', (r.doc->>'content') || ' ' || (r.doc->>'summary'))
         FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::jsonb[], $6::text[], $7::int[], $8::int[], $10::int[], $11::int[])
           AS r(user_id, id, session_id, from_seq, doc, model, cv, sv, cv_size, sv_size)
         ON CONFLICT (user_id, id) DO UPDATE SET doc = EXCLUDED.doc, embedding_model = EXCLUDED.embedding_model,
           content_vector = EXCLUDED.content_vector, summary_vector = EXCLUDED.summary_vector, content_codes = EXCLUDED.content_codes,
           summary_codes = EXCLUDED.summary_codes, tsv = EXCLUDED.tsv
         RETURNING user_id, id, session_id, coalesce(doc->'agentIds', '[]') AS agent_ids, (doc->>'startedAt')::timestamptz AS started_at,
                   binary_quantize(content_vector)::varbit AS content_bits, binary_quantize(summary_vector)::varbit AS summary_bits
       )
       INSERT INTO interaction_bits (user_id, id, session_id, agent_ids, started_at, content_bits, summary_bits)
       SELECT user_id, id, session_id, agent_ids, started_at, content_bits, summary_bits FROM upserted
       ON CONFLICT (user_id, id) DO UPDATE SET session_id = EXCLUDED.session_id, agent_ids = EXCLUDED.agent_ids, started_at = EXCLUDED.started_at,
         content_bits = EXCLUDED.content_bits, summary_bits = EXCLUDED.summary_bits`,
      [
        docs.map((d) => d.userId),
        docs.map((d) => d.id),
        docs.map((d) => d.sessionId),
        docs.map((d) => d.seqRange[0]),
        docs.map(({ contentVector: _c, summaryVector: _s, ...rest }) => JSON.stringify(rest)),
        docs.map((d) => d.embeddingModel),
        docs.map((_, i) => vectors.offsets[2 * i]),
        docs.map((_, i) => vectors.offsets[2 * i + 1]),
        vectors.values,
        docs.map((_, i) => vectors.sizes[2 * i]),
        docs.map((_, i) => vectors.sizes[2 * i + 1]),
        storedCodes(this.db, windowVectors),
      ],
    );
  }

  async listBySession(key: SessionKey): Promise<InteractionDocument[]> {
    const rows = await this.db.query<{ doc: Record<string, unknown>; cv: string; sv: string }>(
      'SELECT doc, content_vector::text AS cv, summary_vector::text AS sv FROM interactions WHERE user_id = $1 AND session_id = $2 ORDER BY from_seq',
      [key.userId, key.sessionId],
    );
    return rows.map((r) => InteractionDocument.parse({ ...r.doc, contentVector: JSON.parse(r.cv), summaryVector: JSON.parse(r.sv) }));
  }
}

/** The turn index's BM25 statistics go with its rows; interaction statistics follow by trigger. */
export class PostgresProjections implements Projections {
  constructor(private readonly db: Db) {}

  async dropUser(userId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (const table of ['sessions', 'interactions', 'memory_turns', 'memory_turn_stats']) {
        await tx.query(`DELETE FROM ${table} WHERE user_id = $1`, [userId]);
      }
    });
  }
}

export interface PostgresStores extends Stores {
  events: PostgresEventStore;
  db: Db;
}

/**
 * The PostgreSQL store ports; `search` ranks in SQL (composition may put PGlite's SnapshotSearchIndex in front).
 * `exactScanMaxRows` lets a test reach the binary codes' scan with few rows (see PostgresSearchIndex).
 */
export function postgresStores(db: Db, options: { exactScanMaxRows?: number } = {}): PostgresStores {
  return {
    db,
    events: new PostgresEventStore(db),
    sessions: new PostgresSessionStore(db),
    interactions: new PostgresInteractionStore(db),
    search: new PostgresSearchIndex(db, options),
    insights: new PostgresInsightStore(db),
    directory: new PostgresSessionDirectory(db),
    projections: new PostgresProjections(db),
    close: () => db.close(),
  };
}
