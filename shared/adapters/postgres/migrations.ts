import type { Db } from './db.js';
import { EXACT_SCAN_MAX_ROWS } from './search.js';

/** Drops the search tables' HNSW indexes, whatever model and size their names hash (migrations 25 and 29: the same SQL in both). */
const DROP_HNSW_INDEXES = `DO $do$
      DECLARE
        v_index text;
      BEGIN
        FOR v_index IN SELECT indexname FROM pg_indexes
                       WHERE schemaname = current_schema() AND tablename IN ('memory_turns', 'interactions') AND indexname LIKE '%\\_hnsw\\_%' LOOP
          EXECUTE format('DROP INDEX %I', v_index);
        END LOOP;
      END
      $do$;`;

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
  {
    version: 7,
    name: 'fact search at scale: BM25 postings, vectors stored inline, HNSW search function',
    sql: `
      DO $check$ BEGIN
        IF (SELECT string_to_array(extversion, '.')::int[] < ARRAY[0, 8] FROM pg_extension WHERE extname = 'vector') THEN
          RAISE EXCEPTION 'pgvector 0.8 or later is needed (iterative HNSW scans): ALTER EXTENSION vector UPDATE';
        END IF;
      END $check$;

      -- The inverted index of turn BM25: one posting per user, lexeme and turn, with the lexeme's frequency in the turn
      -- (its positions in the tsvector, as before) and the turn's length, so a search reads only its terms' postings.
      -- It replaces the GIN index on memory_turns.tsv, which matched every user's turns and left tf to unnest.
      CREATE TABLE memory_turn_terms (
        user_id    text NOT NULL,
        lexeme     text COLLATE "C" NOT NULL,
        session_id text NOT NULL,
        seq        integer NOT NULL,
        tf         integer,
        doc_len    integer NOT NULL,
        PRIMARY KEY (user_id, lexeme, session_id, seq)
      );
      INSERT INTO memory_turn_terms (user_id, lexeme, session_id, seq, tf, doc_len)
      SELECT t.user_id, l.lexeme, t.session_id, t.seq, array_length(l.positions, 1), t.doc_len
      FROM memory_turns t CROSS JOIN unnest(t.tsv) AS l(lexeme, positions, weights);
      DROP INDEX memory_turns_tsv;

      -- pgvector's type stores vectors out of line once a row passes 2 kB (512 dimensions do), so every exact distance
      -- paid a TOAST lookup. MAIN keeps them in the row unless it cannot fit a page. New rows only; old ones stay valid.
      ALTER TABLE memory_turns ALTER COLUMN vector SET STORAGE MAIN;
      ALTER TABLE interactions ALTER COLUMN content_vector SET STORAGE MAIN, ALTER COLUMN summary_vector SET STORAGE MAIN;
      ALTER TABLE insights ALTER COLUMN vector SET STORAGE MAIN;

      -- One vector search in one round trip (PGlite runs one statement at a time, so each costs): counts the user's
      -- rows with p_size; above p_max_exact runs p_hnsw, the HNSW query, as an iterative scan with sorting off (the
      -- only plan left that yields rows in distance order is the index walk, whatever the planner guesses of the
      -- user's share), and keeps its rows if it found p_limit; otherwise runs p_exact, the exact scan. The queries
      -- take their parameters as one text array ($1). The SET clauses keep every setting inside the call.
      CREATE FUNCTION memory_nearest(p_size text, p_max_exact integer, p_hnsw text, p_exact text, p_ef_search integer, p_limit integer, p_params text[])
      RETURNS SETOF jsonb LANGUAGE plpgsql
      SET enable_sort = on SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 40 AS $fn$
      DECLARE
        v_size integer;
        v_rows jsonb[];
      BEGIN
        IF p_hnsw IS NOT NULL THEN
          EXECUTE p_size INTO v_size USING p_params;
        END IF;
        IF coalesce(v_size, 0) > p_max_exact THEN
          PERFORM set_config('hnsw.ef_search', p_ef_search::text, true), set_config('enable_sort', 'off', true);
          EXECUTE format('SELECT array_agg(to_jsonb(r) ORDER BY r.distance) FROM (%s) r', p_hnsw) INTO v_rows USING p_params;
          PERFORM set_config('enable_sort', 'on', true);
          IF coalesce(cardinality(v_rows), 0) >= p_limit THEN
            RETURN QUERY SELECT unnest(v_rows);
            RETURN;
          END IF;
        END IF;
        RETURN QUERY EXECUTE format('SELECT to_jsonb(r) FROM (%s) r', p_exact) USING p_params;
      END
      $fn$;
    `,
  },
  {
    version: 8,
    name: 'detail memory: TTL classes and the expiry sweep',
    sql: `
      -- When an artifact stops existing for readers (NULL = permanent, as every artifact written before this is).
      ALTER TABLE artifacts ADD COLUMN expires_at timestamptz;
      CREATE INDEX artifacts_expiry ON artifacts (user_id, expires_at) WHERE expires_at IS NOT NULL;
      -- The sweep's queue: blobs whose artifacts are gone (queued in the statement that deletes them), dropped once the
      -- blob is deleted, so a crash between the two never loses a blob.
      CREATE TABLE artifact_blob_deletions (
        user_id   text NOT NULL,
        blob_name text NOT NULL,
        queued_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_id, blob_name)
      );
    `,
  },
  {
    version: 9,
    name: 'idle sessions by the service clock',
    sql: `
      -- The idle sweep judges by when the service recorded the last turn (lastActivityAt), not by the client's
      -- timestamps: imported history with old timestamps was ended at the next sweep. Older documents fall back.
      DROP INDEX sessions_idle;
      CREATE INDEX sessions_idle ON sessions ((coalesce(doc->>'lastActivityAt', doc->>'lastTurnAt'))) WHERE doc->>'status' = 'active';
    `,
  },
  {
    version: 10,
    name: "the participants of a user's conversations, for reading queries",
    sql: `
      ALTER TABLE memory_turn_stats ADD COLUMN speakers text[] NOT NULL DEFAULT '{}';
      UPDATE memory_turn_stats s SET speakers = ARRAY(SELECT DISTINCT t.speaker FROM memory_turns t WHERE t.user_id = s.user_id ORDER BY 1);
    `,
  },
  {
    version: 11,
    name: 'search revisions for in-process snapshots, and BM25 lengths of interactions',
    sql: `
      -- Every write to the searched tables takes the next revision: a new row by default, a changed one by trigger.
      -- Deleted rows leave the user's newest revision in search_purges. A reader holding a copy of a user's rows
      -- (PGlite's in-process search snapshots) asks for the rows past the revision it has, and starts again after a
      -- purge.
      CREATE SEQUENCE search_rev;
      ALTER TABLE memory_turns ADD COLUMN rev bigint NOT NULL DEFAULT nextval('search_rev');
      ALTER TABLE interactions ADD COLUMN rev bigint NOT NULL DEFAULT nextval('search_rev');
      CREATE INDEX memory_turns_by_rev ON memory_turns (user_id, rev);
      CREATE INDEX interactions_by_rev ON interactions (user_id, rev);
      CREATE FUNCTION search_next_rev() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        NEW.rev := nextval('search_rev');
        RETURN NEW;
      END
      $fn$;
      CREATE TRIGGER memory_turns_rev BEFORE UPDATE ON memory_turns FOR EACH ROW EXECUTE FUNCTION search_next_rev();
      CREATE TRIGGER interactions_rev BEFORE UPDATE ON interactions FOR EACH ROW EXECUTE FUNCTION search_next_rev();
      CREATE TABLE search_purges (user_id text PRIMARY KEY, rev bigint NOT NULL);
      CREATE FUNCTION search_record_purge() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        INSERT INTO search_purges (user_id, rev) SELECT g.user_id, nextval('search_rev') FROM (SELECT DISTINCT user_id FROM gone) g
        ON CONFLICT (user_id) DO UPDATE SET rev = EXCLUDED.rev;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER memory_turns_purge AFTER DELETE ON memory_turns REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION search_record_purge();
      CREATE TRIGGER interactions_purge AFTER DELETE ON interactions REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION search_record_purge();

      -- Interactions are ranked by BM25 like turns; a window's length is its tokens (the positions in its tsvector),
      -- and each user's window count and total length are kept by statement triggers, whoever writes.
      CREATE FUNCTION tsvector_tokens(tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS 'SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest($1)';
      ALTER TABLE interactions ADD COLUMN doc_len integer GENERATED ALWAYS AS (tsvector_tokens(tsv)) STORED;
      CREATE TABLE interaction_stats (user_id text PRIMARY KEY, docs bigint NOT NULL, total_len bigint NOT NULL);
      INSERT INTO interaction_stats SELECT user_id, count(*), coalesce(sum(doc_len), 0) FROM interactions GROUP BY user_id;
      CREATE FUNCTION interaction_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF TG_OP IN ('UPDATE', 'DELETE') THEN
          INSERT INTO interaction_stats AS s (user_id, docs, total_len) SELECT user_id, -count(*), -coalesce(sum(doc_len), 0) FROM old_rows GROUP BY user_id
          ON CONFLICT (user_id) DO UPDATE SET docs = s.docs + EXCLUDED.docs, total_len = s.total_len + EXCLUDED.total_len;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') THEN
          INSERT INTO interaction_stats AS s (user_id, docs, total_len) SELECT user_id, count(*), coalesce(sum(doc_len), 0) FROM new_rows GROUP BY user_id
          ON CONFLICT (user_id) DO UPDATE SET docs = s.docs + EXCLUDED.docs, total_len = s.total_len + EXCLUDED.total_len;
        END IF;
        RETURN NULL;
      END
      $fn$;
      CREATE TRIGGER interaction_stats_insert AFTER INSERT ON interactions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_stats_apply();
      CREATE TRIGGER interaction_stats_update AFTER UPDATE ON interactions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_stats_apply();
      CREATE TRIGGER interaction_stats_delete AFTER DELETE ON interactions REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION interaction_stats_apply();
    `,
  },
  {
    version: 12,
    name: 'event keys for lifecycle events; no turns after the end request',
    sql: `
      -- The turn_id column becomes every event's idempotency key: a turn's turnId, or a lifecycle event's key ('@end',
      -- '@summary', '@interaction:<fromSeq>', ...), which no turnId can take. A key is recorded once per session.
      ALTER TABLE events RENAME COLUMN turn_id TO event_key;
      ALTER INDEX events_turn_id RENAME TO events_key;
      UPDATE events e SET event_key = '@end' FROM (
        SELECT DISTINCT ON (user_id, session_id) user_id, session_id, seq FROM events WHERE type = 'SessionEndRequested' ORDER BY user_id, session_id, seq
      ) f WHERE e.user_id = f.user_id AND e.session_id = f.session_id AND e.seq = f.seq;

      -- As before, under the session's head lock; a turn after the session's end request is refused (SQLSTATE AM409),
      -- unless it repeats a turn recorded earlier, which gets its seq back as any repeat does.
      DROP FUNCTION append_events(text, text, text[], text[], jsonb[]);
      CREATE FUNCTION append_events(p_user text, p_session text, p_keys text[], p_types text[], p_docs jsonb[])
      RETURNS TABLE (seq integer, duplicate boolean) LANGUAGE plpgsql AS $fn$
      DECLARE
        v_last integer;
        v_known integer;
        v_ended boolean;
      BEGIN
        INSERT INTO session_heads (user_id, session_id, last_seq) VALUES (p_user, p_session, 0) ON CONFLICT DO NOTHING;
        SELECT h.last_seq INTO v_last FROM session_heads h WHERE h.user_id = p_user AND h.session_id = p_session FOR UPDATE;
        v_ended := EXISTS (SELECT 1 FROM events e WHERE e.user_id = p_user AND e.session_id = p_session AND e.event_key = '@end');
        FOR i IN 1 .. coalesce(array_length(p_types, 1), 0) LOOP
          SELECT e.seq INTO v_known FROM events e WHERE e.user_id = p_user AND e.session_id = p_session AND e.event_key = p_keys[i];
          IF v_known IS NOT NULL THEN
            seq := v_known; duplicate := true;
          ELSIF v_ended AND p_types[i] = 'TurnAppended' THEN
            RAISE EXCEPTION 'session has ended' USING ERRCODE = 'AM409';
          ELSE
            v_last := v_last + 1;
            INSERT INTO events (user_id, session_id, seq, event_key, type, doc)
            VALUES (p_user, p_session, v_last, p_keys[i], p_types[i],
              jsonb_set(p_docs[i] || jsonb_build_object('id', p_session || ':' || lpad(v_last::text, 10, '0'), 'seq', v_last),
                        '{metadata,seq}', to_jsonb(v_last)));
            v_ended := v_ended OR p_keys[i] = '@end';
            seq := v_last; duplicate := false;
          END IF;
          RETURN NEXT;
        END LOOP;
        UPDATE session_heads h SET last_seq = v_last WHERE h.user_id = p_user AND h.session_id = p_session;
      END
      $fn$;
    `,
  },
  {
    version: 13,
    name: 'API keys (hashes only)',
    sql: `
      -- One row per key made by \`npm run keys\`: the SHA-256 of the key, never the key. user_id NULL = a service key for all users.
      CREATE TABLE api_keys (
        key_id     text PRIMARY KEY,
        key_hash   text NOT NULL,
        user_id    text,
        agent_id   text,
        label      text,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
    `,
  },
  {
    version: 14,
    name: 'forget: tombstones, and every user table refusing writes while its user (or session) is being forgotten',
    sql: `
      -- One row per forget in progress: session_id '' forgets the whole user. Deleted once the purge verified zero
      -- residuals; the operation's output (the purge report) is the audit trail of the forget.
      CREATE TABLE forget_tombstones (
        user_id      text NOT NULL,
        session_id   text NOT NULL DEFAULT '',
        operation_id text NOT NULL,
        requested_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, session_id)
      );

      -- Every write to a user's rows takes the user's forget lock in shared mode until it commits, then looks for a
      -- tombstone; recording a tombstone takes the lock exclusively (ForgetStore.markForgetting). So once a tombstone is
      -- committed, every write that did not see it has committed already (the purge that follows deletes it), and every
      -- later write sees it and fails with SQLSTATE AM410: an append racing a forget is purged or refused, never half-kept.
      -- (session_heads needs no guard: append_events writes it in the transaction of the events it refuses.)
      CREATE FUNCTION forget_guard_user() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(7071014, hashtext(NEW.user_id));
        IF EXISTS (SELECT 1 FROM forget_tombstones t WHERE t.user_id = NEW.user_id AND t.session_id = '') THEN
          RAISE EXCEPTION 'a forget of this user is in progress' USING ERRCODE = 'AM410';
        END IF;
        RETURN NEW;
      END
      $fn$;
      CREATE FUNCTION forget_guard_session() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(7071014, hashtext(NEW.user_id));
        IF EXISTS (SELECT 1 FROM forget_tombstones t WHERE t.user_id = NEW.user_id AND (t.session_id = '' OR t.session_id = NEW.session_id)) THEN
          RAISE EXCEPTION 'a forget of this user or session is in progress' USING ERRCODE = 'AM410';
        END IF;
        RETURN NEW;
      END
      $fn$;
      CREATE TRIGGER events_forget_guard BEFORE INSERT OR UPDATE ON events FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER sessions_forget_guard BEFORE INSERT OR UPDATE ON sessions FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER interactions_forget_guard BEFORE INSERT OR UPDATE ON interactions FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER memory_turns_forget_guard BEFORE INSERT OR UPDATE ON memory_turns FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER insights_forget_guard BEFORE INSERT OR UPDATE ON insights FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER artifacts_forget_guard BEFORE INSERT OR UPDATE ON artifacts FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
      CREATE TRIGGER artifact_snapshots_forget_guard BEFORE INSERT OR UPDATE ON artifact_snapshots FOR EACH ROW EXECUTE FUNCTION forget_guard_user();
      CREATE TRIGGER profiles_forget_guard BEFORE INSERT OR UPDATE ON profiles FOR EACH ROW EXECUTE FUNCTION forget_guard_user();
    `,
  },
  {
    version: 15,
    name: 'sessions with set-aside events, indexed for /health',
    sql: `
      -- /health counts the events the projection set aside; the partial index holds only those sessions, so the count
      -- does not scan every session on each liveness probe.
      CREATE INDEX sessions_set_aside ON sessions (user_id) WHERE doc ? 'setAside';
    `,
  },
  {
    version: 17,
    name: 'slots (core memory): one event stream per slot',
    sql: `
      -- One row per SlotWritten / SlotDeleted event; a slot is the latest row of its stream (user_id, scope, owner, name).
      -- The primary key is the optimistic append: two writers that decided the same version, one insert wins.
      -- user_id is the slot's user, or '~global' for global slots (not an Id, so no user id collides with it).
      -- owner: the agentId (private), the sessionId (session), '' (user, global); session_id is set for session slots
      -- only, so a session forget removes them. sort_key (C collation) orders the listing and its cursor.
      CREATE TABLE slot_events (
        user_id    text NOT NULL,
        scope      text NOT NULL,
        owner      text NOT NULL,
        name       text NOT NULL,
        version    integer NOT NULL CHECK (version > 0),
        session_id text,
        sort_key   text COLLATE "C" NOT NULL,
        event      jsonb NOT NULL,
        PRIMARY KEY (user_id, scope, owner, name, version)
      );
      CREATE INDEX slot_events_heads ON slot_events (user_id, sort_key, version DESC);
      CREATE TRIGGER slot_events_forget_guard BEFORE INSERT OR UPDATE ON slot_events FOR EACH ROW EXECUTE FUNCTION forget_guard_session();
    `,
  },
  {
    version: 18,
    name: 'artifact scopes',
    sql: `
      -- Who may see an artifact (shared/domain/scopes.ts); rows written before scopes are 'user', as their documents read.
      -- Global artifacts belong to no user: they live under the reserved owner '@global' (outside the Id alphabet).
      ALTER TABLE artifacts ADD COLUMN scope text NOT NULL DEFAULT 'user' CHECK (scope IN ('private', 'session', 'user', 'global'));
      -- The listing of one scope (?scope=), newest first; the unfiltered listing keeps artifacts_listing.
      CREATE INDEX artifacts_scope_listing ON artifacts (user_id, scope, sort_key DESC);
    `,
  },
  {
    version: 19,
    name: 'the period a turn refers to',
    sql: `
      -- "last week", "next month": the period a turn's text refers to, resolved against its own time when it is indexed
      -- (shared/domain/time-expressions.ts periodReferredTo). Null when it names none; rows indexed before this get it
      -- when their session is projected again (npm run rebuild).
      ALTER TABLE memory_turns ADD COLUMN refers_from timestamptz, ADD COLUMN refers_to timestamptz;
    `,
  },
  {
    version: 20,
    name: 'projection queue: sessions whose projection may be pending, served a slice at a time',
    sql: `
      -- One row per queued session (shared/application/projection-ports.ts). Claims take those never served
      -- (served_at -infinity) in the order queued, then the least recently served, among those due (backoff) and not
      -- leased; generation goes up on each
      -- enqueue, so a scheduler that finishes a session removes the row only if nobody queued it again meanwhile.
      CREATE TABLE projection_queue (
        user_id     text NOT NULL,
        session_id  text NOT NULL,
        generation  integer NOT NULL DEFAULT 1,
        failures    integer NOT NULL DEFAULT 0,
        queued_at   timestamptz NOT NULL,
        served_at   timestamptz NOT NULL,
        due_at      timestamptz NOT NULL,
        lease_until timestamptz NOT NULL,
        PRIMARY KEY (user_id, session_id)
      );
      CREATE INDEX projection_queue_next ON projection_queue (served_at, queued_at);
      -- Under a forget tombstone nothing of the scope is queued (the forget purges the row anyway): the insert is skipped
      -- rather than refused, so a change-feed batch never fails on it. Same lock as the guards of migration 14.
      CREATE FUNCTION projection_queue_forget_skip() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(7071014, hashtext(NEW.user_id));
        IF EXISTS (SELECT 1 FROM forget_tombstones t WHERE t.user_id = NEW.user_id AND (t.session_id = '' OR t.session_id = NEW.session_id)) THEN
          RETURN NULL;
        END IF;
        RETURN NEW;
      END
      $fn$;
      CREATE TRIGGER projection_queue_forget_skip BEFORE INSERT ON projection_queue FOR EACH ROW EXECUTE FUNCTION projection_queue_forget_skip();
    `,
  },
  {
    version: 21,
    name: 'memory_nearest takes the query vector as a vector argument',
    sql: `
      -- As migration 7's, but the query vector is its own argument (p_vector, $2 in the queries), which the caller sends
      -- in binary (vector-params.ts): as an element of the text array PGlite parsed it from text, about 1 ms a search.
      DROP FUNCTION memory_nearest(text, integer, text, text, integer, integer, text[]);
      CREATE FUNCTION memory_nearest(p_size text, p_max_exact integer, p_hnsw text, p_exact text, p_ef_search integer, p_limit integer, p_params text[], p_vector vector)
      RETURNS SETOF jsonb LANGUAGE plpgsql
      SET enable_sort = on SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 40 AS $fn$
      DECLARE
        v_size integer;
        v_rows jsonb[];
      BEGIN
        IF p_hnsw IS NOT NULL THEN
          EXECUTE p_size INTO v_size USING p_params, p_vector;
        END IF;
        IF coalesce(v_size, 0) > p_max_exact THEN
          PERFORM set_config('hnsw.ef_search', p_ef_search::text, true), set_config('enable_sort', 'off', true);
          EXECUTE format('SELECT array_agg(to_jsonb(r) ORDER BY r.distance) FROM (%s) r', p_hnsw) INTO v_rows USING p_params, p_vector;
          PERFORM set_config('enable_sort', 'on', true);
          IF coalesce(cardinality(v_rows), 0) >= p_limit THEN
            RETURN QUERY SELECT unnest(v_rows);
            RETURN;
          END IF;
        END IF;
        RETURN QUERY EXECUTE format('SELECT to_jsonb(r) FROM (%s) r', p_exact) USING p_params, p_vector;
      END
      $fn$;
    `,
  },
  {
    version: 22,
    name: 'forget: a tombstone per owner',
    sql: `
      -- A forget's tombstone and an overtaken projector's (ForgetStore, TombstoneOwner) are two rows, each deleted by its
      -- owner alone; the guards of migration 14 refuse a write under either. Before, they were one row, and a DELETE that
      -- began under a projector's took it for its own: the projector cleared it while the forget ran. The operation id
      -- was never read; a tombstone in flight across this migration becomes a forget's, as a DELETE took it before.
      ALTER TABLE forget_tombstones RENAME COLUMN operation_id TO owner;
      UPDATE forget_tombstones SET owner = 'forget';
      ALTER TABLE forget_tombstones DROP CONSTRAINT forget_tombstones_pkey, ADD PRIMARY KEY (user_id, session_id, owner);
    `,
  },
  {
    version: 23,
    name: "the local durable runner keeps an orchestration's custom status",
    sql: `
      -- What the orchestrator last passed to setCustomStatus, kept as the Durable extension keeps it; GET /v1/operations/{id}
      -- returns it as progress (a forget's round, or its grace wait and when it ends). Null when it set none.
      ALTER TABLE durable_instances ADD COLUMN custom_status jsonb;
    `,
  },
  {
    version: 24,
    name: 'turn BM25 from a full-text index on (user, tsvector) instead of postings; the same index for interactions',
    sql: `
      -- The postings of migration 7 cost every projected turn about 80 rows (its match text's lexemes), most of the turn
      -- index's write; a GIN index takes the same lexemes into its pending list and merges them in bulk. With the user as
      -- its first column (btree_gin), a search reads only its own user's matching rows; interactions' index, on tsv
      -- alone, matched every user's, and gets the user too.
      CREATE EXTENSION IF NOT EXISTS btree_gin;
      CREATE INDEX memory_turns_user_tsv ON memory_turns USING gin (user_id, tsv);
      DROP TABLE memory_turn_terms;
      CREATE INDEX interactions_user_tsv ON interactions USING gin (user_id, tsv);
      DROP INDEX interactions_tsv;
    `,
  },
  {
    version: 25,
    name: 'vectors in the HNSW indexes only for users searched through them',
    sql: `
      -- Searches walk the HNSW indexes only for users past the exact scan's size (EXACT_SCAN_MAX_ROWS turns), so only
      -- their rows are indexed: an insert into the turn index was half of a projected turn's write. The indexes of
      -- every row are dropped first, so that flagging the large users' rows does not insert them there; the start after
      -- this builds the partial ones (ensureVectorIndexes). A later change of EXACT_SCAN_MAX_ROWS needs a migration too.
      ALTER TABLE memory_turns ADD COLUMN vector_indexed boolean NOT NULL DEFAULT false;
      ALTER TABLE interactions ADD COLUMN vector_indexed boolean NOT NULL DEFAULT false;
      ${DROP_HNSW_INDEXES}
      UPDATE memory_turns t SET vector_indexed = true FROM memory_turn_stats s WHERE s.user_id = t.user_id AND s.docs > ${EXACT_SCAN_MAX_ROWS};
      UPDATE interactions i SET vector_indexed = true FROM memory_turn_stats s WHERE s.user_id = i.user_id AND s.docs > ${EXACT_SCAN_MAX_ROWS};
    `,
  },
  {
    version: 26,
    name: "no planner statistics for the search tables' columns that no query filters on",
    sql: `
      -- ANALYZE spent most of its time on the tsvectors' lexeme counts, then the texts, and the planner chose the same
      -- plan for every search statement without them (the user and the GIN index decide). On PGlite it runs on the
      -- service's only thread (analyzeAsTheyGrow), so each one stalled every request. Statistics already gathered stay
      -- until the column's next change of type: ANALYZE leaves a column with a target of 0 as it is.
      ALTER TABLE memory_turns ALTER COLUMN tsv SET STATISTICS 0, ALTER COLUMN text SET STATISTICS 0, ALTER COLUMN vector SET STATISTICS 0;
      ALTER TABLE interactions ALTER COLUMN tsv SET STATISTICS 0, ALTER COLUMN doc SET STATISTICS 0,
        ALTER COLUMN content_vector SET STATISTICS 0, ALTER COLUMN summary_vector SET STATISTICS 0;
    `,
  },
  {
    version: 27,
    name: "vectors' int8 codes beside them, for the search snapshots",
    sql: `
      -- A snapshot (search-snapshot.ts, PGlite only) holds each vector as int8 codes. Read as pgvector's floats, the
      -- vectors were most of a build's bytes, and quantised on the service's thread. PGlite writes the codes with the
      -- vectors (vectorCodes); a row without them (written before this migration) is loaded from its vector as before.
      -- MAIN, as the vectors: kept in the row, where a snapshot's read finds them.
      ALTER TABLE memory_turns ADD COLUMN vector_codes bytea;
      ALTER TABLE memory_turns ALTER COLUMN vector_codes SET STORAGE MAIN, ALTER COLUMN vector_codes SET STATISTICS 0;
      ALTER TABLE interactions ADD COLUMN content_codes bytea, ADD COLUMN summary_codes bytea;
      ALTER TABLE interactions ALTER COLUMN content_codes SET STORAGE MAIN, ALTER COLUMN content_codes SET STATISTICS 0,
        ALTER COLUMN summary_codes SET STORAGE MAIN, ALTER COLUMN summary_codes SET STATISTICS 0;
    `,
  },
  {
    version: 28,
    name: "vectors' binary codes in narrow rows, for the vector search of a large user",
    sql: `
      -- Each vector's binary quantisation (a bit a dimension, its sign) in narrow rows of its own, with the columns the
      -- searches filter on: a large user's vector search scans them all by Hamming distance and re-ranks the nearest by
      -- cosine (memory_nearest, migration 29). A row here costs an insert into one B-tree, where an HNSW insert was most
      -- of a projected turn's write on PGlite; the scan reads about 100 bytes a row, not the wide row with its vector.
      -- Written and rewritten with their row (indexTurns, interactions.upsert), deleted with it (a forget).
      CREATE TABLE memory_turn_bits (
        user_id     text NOT NULL,
        session_id  text NOT NULL,
        seq         integer NOT NULL,
        agent_id    text,
        occurred_at timestamptz NOT NULL,
        bits        varbit NOT NULL,
        PRIMARY KEY (user_id, session_id, seq),
        FOREIGN KEY (user_id, session_id, seq) REFERENCES memory_turns ON DELETE CASCADE
      );
      CREATE TABLE interaction_bits (
        user_id      text NOT NULL,
        id           text NOT NULL,
        session_id   text NOT NULL,
        agent_ids    jsonb NOT NULL,
        started_at   timestamptz,
        content_bits varbit NOT NULL,
        summary_bits varbit NOT NULL,
        PRIMARY KEY (user_id, id),
        FOREIGN KEY (user_id, id) REFERENCES interactions ON DELETE CASCADE
      );
      ALTER TABLE memory_turn_bits ALTER COLUMN bits SET STATISTICS 0;
      ALTER TABLE interaction_bits ALTER COLUMN content_bits SET STATISTICS 0, ALTER COLUMN summary_bits SET STATISTICS 0, ALTER COLUMN agent_ids SET STATISTICS 0;
      INSERT INTO memory_turn_bits SELECT user_id, session_id, seq, agent_id, occurred_at, binary_quantize(vector)::varbit FROM memory_turns;
      INSERT INTO interaction_bits
        SELECT user_id, id, session_id, coalesce(doc->'agentIds', '[]'), (doc->>'startedAt')::timestamptz, binary_quantize(content_vector)::varbit, binary_quantize(summary_vector)::varbit
        FROM interactions;
    `,
  },
  {
    version: 29,
    name: 'vector search by the binary codes: the HNSW indexes dropped',
    sql: `
      -- The HNSW indexes go: the partial ones with the column they are partial on, any other by name.
      ALTER TABLE memory_turns DROP COLUMN vector_indexed;
      ALTER TABLE interactions DROP COLUMN vector_indexed;
      ${DROP_HNSW_INDEXES}
      -- A user past p_max_exact turns is searched by p_candidates (the scan of the codes, re-ranked), the others by
      -- p_exact (cosine over every row). Both are statements over p_params (text) and p_vector.
      DROP FUNCTION memory_nearest(text, integer, text, text, integer, integer, text[], vector);
      CREATE FUNCTION memory_nearest(p_size text, p_max_exact integer, p_candidates text, p_exact text, p_params text[], p_vector vector)
      RETURNS SETOF jsonb LANGUAGE plpgsql AS $fn$
      DECLARE
        v_size integer;
      BEGIN
        IF p_candidates IS NOT NULL THEN
          EXECUTE p_size INTO v_size USING p_params, p_vector;
        END IF;
        IF coalesce(v_size, 0) > p_max_exact THEN
          RETURN QUERY EXECUTE format('SELECT to_jsonb(r) FROM (%s) r', p_candidates) USING p_params, p_vector;
        ELSE
          RETURN QUERY EXECUTE format('SELECT to_jsonb(r) FROM (%s) r', p_exact) USING p_params, p_vector;
        END IF;
      END
      $fn$;
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
