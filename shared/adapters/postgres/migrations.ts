import type { Db } from './db.js';

/** Versioned schema changes, applied in order at start; never edit one that has shipped, add the next. */
export const MIGRATIONS: readonly { version: number; name: string; sql: string }[] = [
  {
    version: 1,
    name: 'event store, sessions, interactions',
    sql: `
      CREATE EXTENSION IF NOT EXISTS vector;

      -- One row per session; its row lock serialises appends to the session so seqs stay gapless.
      CREATE TABLE session_heads (
        user_id    text NOT NULL,
        session_id text NOT NULL,
        last_seq   integer NOT NULL,
        PRIMARY KEY (user_id, session_id)
      );

      CREATE TABLE events (
        user_id    text NOT NULL,
        session_id text NOT NULL,
        seq        integer NOT NULL,
        turn_id    text,
        type       text NOT NULL,
        doc        jsonb NOT NULL,
        position   bigserial NOT NULL,
        -- The writing transaction: the feed reads only below the oldest running one, so late commits are never skipped.
        tx_id      xid8 NOT NULL DEFAULT pg_current_xact_id(),
        PRIMARY KEY (user_id, session_id, seq)
      );
      CREATE UNIQUE INDEX events_turn_id ON events (user_id, session_id, turn_id) WHERE turn_id IS NOT NULL;
      CREATE INDEX events_last_turns ON events (user_id, session_id, seq DESC) WHERE type = 'TurnAppended';
      CREATE INDEX events_feed ON events (tx_id, position);

      -- Appends a batch in one round trip: takes the session's head row lock, returns the original seq for a
      -- turn_id already recorded, and gives every new event the next seq (stamped into its document's id and metadata).
      CREATE FUNCTION append_events(p_user text, p_session text, p_turn_ids text[], p_types text[], p_docs jsonb[])
      RETURNS TABLE (seq integer, duplicate boolean) LANGUAGE plpgsql AS $fn$
      DECLARE
        v_last integer;
        v_known integer;
      BEGIN
        INSERT INTO session_heads (user_id, session_id, last_seq) VALUES (p_user, p_session, 0) ON CONFLICT DO NOTHING;
        SELECT h.last_seq INTO v_last FROM session_heads h WHERE h.user_id = p_user AND h.session_id = p_session FOR UPDATE;
        FOR i IN 1 .. coalesce(array_length(p_types, 1), 0) LOOP
          v_known := NULL;
          IF p_turn_ids[i] IS NOT NULL THEN
            SELECT e.seq INTO v_known FROM events e
            WHERE e.user_id = p_user AND e.session_id = p_session AND e.turn_id = p_turn_ids[i];
          END IF;
          IF v_known IS NOT NULL THEN
            seq := v_known; duplicate := true;
          ELSE
            v_last := v_last + 1;
            INSERT INTO events (user_id, session_id, seq, turn_id, type, doc)
            VALUES (p_user, p_session, v_last, p_turn_ids[i], p_types[i],
              jsonb_set(p_docs[i] || jsonb_build_object('id', p_session || ':' || lpad(v_last::text, 10, '0'), 'seq', v_last),
                        '{metadata,seq}', to_jsonb(v_last)));
            seq := v_last; duplicate := false;
          END IF;
          RETURN NEXT;
        END LOOP;
        UPDATE session_heads h SET last_seq = v_last WHERE h.user_id = p_user AND h.session_id = p_session;
      END
      $fn$;

      CREATE TABLE feed_checkpoints (
        name       text PRIMARY KEY,
        cursor     text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE sessions (
        user_id    text NOT NULL,
        session_id text NOT NULL,
        version    integer NOT NULL,
        doc        jsonb NOT NULL,
        updated_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, session_id)
      );
      CREATE INDEX sessions_by_user ON sessions (user_id, updated_at DESC);

      CREATE TABLE interactions (
        user_id         text NOT NULL,
        id              text NOT NULL,
        session_id      text NOT NULL,
        from_seq        integer NOT NULL,
        doc             jsonb NOT NULL,
        embedding_model text NOT NULL,
        content_vector  vector NOT NULL,
        summary_vector  vector NOT NULL,
        PRIMARY KEY (user_id, id)
      );
      CREATE INDEX interactions_by_session ON interactions (user_id, session_id, from_seq);
    `,
  },
  {
    version: 2,
    name: 'search: turn index with full text and vectors, interaction full text',
    sql: `
      -- Every turn, searchable on its own: BM25 over the tsvector, cosine over the vector.
      CREATE TABLE memory_turns (
        user_id         text NOT NULL,
        session_id      text NOT NULL,
        seq             integer NOT NULL,
        turn_id         text NOT NULL,
        agent_id        text,
        text            text NOT NULL,
        occurred_at     timestamptz NOT NULL,
        tsv             tsvector NOT NULL,
        doc_len         integer NOT NULL,
        embedding_model text NOT NULL,
        vector          vector NOT NULL,
        PRIMARY KEY (user_id, session_id, seq)
      );
      CREATE INDEX memory_turns_tsv ON memory_turns USING gin (tsv);
      CREATE INDEX memory_turns_by_time ON memory_turns (user_id, occurred_at);

      -- Per-user corpus statistics for BM25, kept with the rows they describe.
      CREATE TABLE memory_turn_stats (
        user_id   text PRIMARY KEY,
        docs      integer NOT NULL,
        total_len bigint NOT NULL
      );

      ALTER TABLE interactions ADD COLUMN tsv tsvector;
      UPDATE interactions SET tsv = to_tsvector('english', (doc->>'content') || ' ' || (doc->>'summary'));
      CREATE INDEX interactions_tsv ON interactions USING gin (tsv);
    `,
  },
  {
    version: 4,
    name: 'detail memory: artifacts and snapshots',
    sql: `
      -- Detail memory (layer 2): metadata as jsonb, inline content in its own column; large contents live in Blob Storage.
      CREATE TABLE artifacts (
        user_id    text NOT NULL,
        key        text NOT NULL,
        -- createdAt|key: the listing order and its cursor.
        sort_key   text NOT NULL,
        type       text NOT NULL,
        source     text,
        tags       text[] NOT NULL,
        session_id text,
        agent_id   text,
        created_at timestamptz NOT NULL,
        doc        jsonb NOT NULL,
        content    text,
        PRIMARY KEY (user_id, key)
      );
      CREATE INDEX artifacts_listing ON artifacts (user_id, sort_key DESC);

      CREATE TABLE artifact_snapshots (
        user_id     text NOT NULL,
        snapshot_id text NOT NULL,
        doc         jsonb NOT NULL,
        PRIMARY KEY (user_id, snapshot_id)
      );
    `,
  },
  {
    version: 3,
    name: 'reflection: insights, profiles, local durable runner state',
    sql: `
      CREATE TABLE insights (
        user_id         text NOT NULL,
        id              text NOT NULL,
        session_id      text NOT NULL,
        type            text NOT NULL,
        status          text NOT NULL,
        category        text NOT NULL,
        created_at      timestamptz NOT NULL,
        doc             jsonb NOT NULL,
        embedding_model text NOT NULL,
        vector          vector NOT NULL,
        PRIMARY KEY (user_id, id)
      );
      CREATE INDEX insights_by_user ON insights (user_id, created_at);

      -- The single long-term profile per user.
      CREATE TABLE profiles (
        user_id    text PRIMARY KEY,
        doc        jsonb NOT NULL,
        updated_at timestamptz NOT NULL
      );

      CREATE INDEX sessions_idle ON sessions ((doc->>'lastTurnAt')) WHERE doc->>'status' = 'active';
      CREATE INDEX sessions_updated ON sessions (updated_at);

      -- The local durable runner: one row per orchestration instance with its replay history.
      CREATE TABLE durable_instances (
        instance_id  text PRIMARY KEY,
        name         text NOT NULL,
        status       text NOT NULL,
        input        jsonb,
        output       jsonb,
        error        text,
        history      jsonb NOT NULL,
        -- Actions of the replay already executed (their events are in history).
        action_count integer NOT NULL,
        parent_id    text,
        created_at   timestamptz NOT NULL,
        updated_at   timestamptz NOT NULL
      );
      CREATE INDEX durable_unfinished ON durable_instances (status) WHERE status IN ('pending', 'running');
    `,
  },
  {
    version: 5,
    name: 'fact search: insights and session summaries',
    sql: `
      -- Full text over an insight's text, kept in step with the document by PostgreSQL.
      ALTER TABLE insights ADD COLUMN tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(doc->>'text', ''))) STORED;
      CREATE INDEX insights_tsv ON insights USING gin (tsv);

      -- A session's summary (written at session end into the document) as full text and as a vector; NULL before.
      -- A summaryVector that is not a non-empty array is NULL here rather than a failed session write.
      ALTER TABLE sessions ADD COLUMN summary_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(doc->>'summary', ''))) STORED;
      ALTER TABLE sessions ADD COLUMN summary_vector vector GENERATED ALWAYS AS (
        CASE WHEN jsonb_typeof(doc->'summaryVector') IS DISTINCT FROM 'array' THEN NULL
             WHEN jsonb_array_length(doc->'summaryVector') = 0 THEN NULL
             ELSE (doc->>'summaryVector')::vector END
      ) STORED;
      CREATE INDEX sessions_summary_tsv ON sessions USING gin (summary_tsv);
    `,
  },
  {
    version: 6,
    name: 'fact search: who spoke each turn',
    sql: `
      -- The turn's speaker (its name, else its role), so search can favour the turns of a participant the query names.
      -- Existing rows: the text is written as "speaker: content".
      ALTER TABLE memory_turns ADD COLUMN speaker text;
      UPDATE memory_turns SET speaker = split_part(text, ': ', 1);
      ALTER TABLE memory_turns ALTER COLUMN speaker SET NOT NULL;
    `,
  },
];

/** Applies pending migrations; concurrent starters wait on an advisory lock instead of racing. */
export async function migrate(db: Db): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(7071001)');
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}
