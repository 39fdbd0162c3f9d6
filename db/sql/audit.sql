-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- The audit trail is written here, by the database, so no code path can forget it or forge it.

CREATE OR REPLACE FUNCTION audit_redact(row_data jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT row_data - 'key_hash' - 'token_hash' - 'secret_hash' - 'password_hash' - 'secret_ciphertext' - 'previous_secret_ciphertext'
$$;

-- Its statements have one shape for every row, so they keep the plans cached after their first uses even when it
-- fires beside foreign-key checks that are planned afresh (keyCheckPlans, server/lib/write.ts): re-planning
-- them for each row audited cost a batch of a thousand operations a tenth of a second.
CREATE OR REPLACE FUNCTION audit_capture() RETURNS trigger
LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
DECLARE
  old_row jsonb;
  new_row jsonb;
  row_data jsonb;
  act text;
  chan text := nullif(current_setting('app.channel', true), '');
  chan_detail jsonb := nullif(current_setting('app.channel_detail', true), '')::jsonb;
BEGIN
  IF TG_OP <> 'INSERT' THEN old_row := audit_redact(to_jsonb(OLD)); END IF;
  IF TG_OP <> 'DELETE' THEN new_row := audit_redact(to_jsonb(NEW)); END IF;
  row_data := coalesce(new_row, old_row);

  IF TG_OP = 'INSERT' THEN
    act := 'create';
  ELSIF TG_OP = 'DELETE' THEN
    act := 'delete';
  ELSIF new_row->>'status' = 'cancelled' AND old_row->>'status' IS DISTINCT FROM 'cancelled' THEN
    act := 'cancel';
  ELSIF new_row->>'status' = 'pending' AND old_row->>'status' = 'completed' THEN
    act := 'revert';
  ELSIF new_row->>'deleted_at' IS NOT NULL AND old_row->>'deleted_at' IS NULL THEN
    act := 'delete';
  ELSE
    act := 'update';
  END IF;

  -- A tool run marks its operation and transactions; later changes to them keep the channel of their origin (both
  -- null when the operation has no draft). Rows being inserted have none to look up: an operation's transactions are
  -- inserted with it, and its run's draft after it.
  IF TG_TABLE_NAME IN ('operations', 'transactions') THEN
    IF chan IS NULL AND TG_OP <> 'INSERT' THEN
      SELECT d.channel, d.channel_detail INTO chan, chan_detail FROM messaging_drafts d
       WHERE d.operation_id = CASE WHEN TG_TABLE_NAME = 'operations' THEN (row_data->>'id')::integer ELSE (row_data->>'operation_id')::integer END
       LIMIT 1;
    END IF;
  ELSIF chan IS NULL OR chan NOT IN ('cli', 'setup', 'dispenser') THEN
    -- A tool run's channel belongs to the operation it makes; the operator's own ways in (the admin CLI, the first-run
    -- setup) and a ticket dispenser, which acts for nobody else, mark every row they change.
    chan := NULL;
    chan_detail := NULL;
  END IF;

  -- One statement per row, the changes computed inside it; static SQL, so its plan is made once per session.
  INSERT INTO audit_logs (company_id, entity, entity_id, action, raw_action, actor_email, channel, channel_detail, before, after, changes)
  VALUES ((row_data->>TG_ARGV[0])::integer, TG_TABLE_NAME, (row_data->>'id')::integer, act, TG_OP,
          nullif(current_setting('app.actor_email', true), ''), chan, chan_detail, old_row, new_row,
          (SELECT coalesce(jsonb_agg(jsonb_build_object('field', k, 'before', old_row->k, 'after', new_row->k) ORDER BY k), '[]'::jsonb)
             FROM jsonb_object_keys(coalesce(old_row, '{}'::jsonb) || coalesce(new_row, '{}'::jsonb)) AS k
            WHERE coalesce(old_row->k, 'null'::jsonb) IS DISTINCT FROM coalesce(new_row->k, 'null'::jsonb)));
  RETURN NULL;
END
$$;

-- Tamper evidence (contract §14): every audit row gets a place in its company's hash chain after it commits
-- (a row of audit_seals: seq, prev_hash, hash).
-- The canonical JSON a row's hash covers is Postgres's text form of the jsonb object
--   jsonb_build_object('id', a.id, 'entity', a.entity, 'entity_id', a.entity_id, 'action', a.action,
--     'raw_action', a.raw_action, 'actor_email', a.actor_email, 'channel', a.channel, 'channel_detail', a.channel_detail,
--     'timestamp', to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), 'before', a.before, 'after', a.after)::text
-- (keys shorter first, then bytewise; `", "` and `": "` separators; numbers exactly as stored). `hash` = hex SHA-256 of
-- the UTF-8 bytes of prev_hash (64 hex characters; 64 zeros before seq 1) followed directly by this text; SECURITY.md
-- shows how to recompute it. The function writes those very bytes without building the object: the members in jsonb's
-- key order, each snapshot in its own jsonb text and each string escaped as jsonb escapes it. Building a jsonb of the
-- snapshots only to print them again cost more than half of every verify; tests/modules/audit-chain.test.ts checks
-- the two forms agree. Parallel safe, so a verify spreads the work over the workers of one statement.
CREATE OR REPLACE FUNCTION audit_canonical(a audit_logs) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT '{"id": ' || a.id
    || ', "after": ' || coalesce(a.after::text, 'null')
    || ', "action": ' || to_json(a.action)::text
    || ', "before": ' || coalesce(a.before::text, 'null')
    || ', "entity": ' || to_json(a.entity)::text
    || ', "channel": ' || coalesce(to_json(a.channel)::text, 'null')
    || ', "entity_id": ' || a.entity_id
    || ', "timestamp": "' || to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    || '", "raw_action": ' || to_json(a.raw_action)::text
    || ', "actor_email": ' || coalesce(to_json(a.actor_email)::text, 'null')
    || ', "channel_detail": ' || coalesce(a.channel_detail::text, 'null')
    || '}'
$$;

-- Append-only for every role, the owner included (the tenant role has no UPDATE or DELETE grant at all): a row's
-- place in the chain lives in audit_seals, so nothing about an audit row ever changes after its insert.
CREATE OR REPLACE FUNCTION audit_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only (% refused)', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

DROP TRIGGER IF EXISTS audit_logs_read_only ON audit_logs;
DROP FUNCTION IF EXISTS audit_read_only();

CREATE OR REPLACE TRIGGER audit_logs_guard
  BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION audit_guard();

CREATE OR REPLACE TRIGGER audit_logs_no_truncate
  BEFORE TRUNCATE ON audit_logs
  FOR EACH STATEMENT EXECUTE FUNCTION audit_guard();

-- Every row with a company waits for its place from the moment it commits, whoever inserted it: a trigger on the
-- table itself rather than a step of audit_capture, so no way of writing audit rows can leave one out of the chain.
CREATE OR REPLACE FUNCTION audit_enqueue() RETURNS trigger
LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
BEGIN
  INSERT INTO audit_pending (company_id, audit_id) VALUES (NEW.company_id, NEW.id);
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER audit_logs_enqueue
  AFTER INSERT ON audit_logs
  FOR EACH ROW WHEN (NEW.company_id IS NOT NULL) EXECUTE FUNCTION audit_enqueue();

-- Places are written once by the sealer and never change.
CREATE OR REPLACE TRIGGER audit_seals_guard
  BEFORE UPDATE OR DELETE ON audit_seals
  FOR EACH ROW EXECUTE FUNCTION audit_guard();

CREATE OR REPLACE TRIGGER audit_seals_no_truncate
  BEFORE TRUNCATE ON audit_seals
  FOR EACH STATEMENT EXECUTE FUNCTION audit_guard();

-- The company's chain lock, transaction-scoped and the same in every process (the first key is any constant): seals
-- and digests of one company are made under it. `wait` false answers false at once when another session holds it.
CREATE OR REPLACE FUNCTION audit_chain_lock(company integer, wait boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF wait THEN
    PERFORM pg_advisory_xact_lock(727402, company);
    RETURN true;
  END IF;
  RETURN pg_try_advisory_xact_lock(727402, company);
END
$$;

-- One sealing batch of a company (server/modules/audit/chain.ts): under the company's chain lock, its pending rows
-- that are committed and visible, in id order, get the next places after the chain head. Done where the rows are, in
-- one statement, so the sealer neither ships every row's canonical JSON to the service nor spends the service's
-- time hashing it. `wait` false gives up at once (answering 0) when another session holds the lock. An entry whose
-- audit row is gone (removed behind the service's back before its seal) has no place to take; it leaves.
CREATE OR REPLACE FUNCTION audit_seal(company integer, max_rows integer, wait boolean) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  sealed timestamptz;
  place bigint;
  prev text;
  r record;
  taken bigint[] := '{}';
  ids bigint[] := '{}';
  places bigint[] := '{}';
  prevs text[] := '{}';
  hashes text[] := '{}';
BEGIN
  IF NOT audit_chain_lock(company, wait) THEN
    RETURN 0;
  END IF;
  -- One clock reading for the batch, taken under the lock, so sealed_at never decreases as seq grows.
  sealed := clock_timestamp();
  -- Read committed: each statement sees every seal committed before the lock was granted.
  SELECT s.seq, s.hash INTO place, prev FROM audit_seals s WHERE s.company_id = company ORDER BY s.seq DESC LIMIT 1;
  place := coalesce(place, 0);
  prev := coalesce(prev, repeat('0', 64));
  FOR r IN SELECT p.audit_id AS id, audit_canonical(a) AS canonical
             FROM audit_pending p LEFT JOIN audit_logs a ON a.id = p.audit_id
            WHERE p.company_id = company ORDER BY p.audit_id LIMIT max_rows LOOP
    taken := taken || r.id;
    CONTINUE WHEN r.canonical IS NULL;
    place := place + 1;
    ids := ids || r.id;
    places := places || place;
    prevs := prevs || prev;
    prev := encode(sha256(convert_to(prev || r.canonical, 'UTF8')), 'hex');
    hashes := hashes || prev;
  END LOOP;
  IF cardinality(taken) = 0 THEN
    RETURN 0;
  END IF;
  INSERT INTO audit_seals (audit_id, company_id, seq, prev_hash, hash, sealed_at)
    SELECT v.id, company, v.seq, v.prev_hash, v.hash, sealed
      FROM unnest(ids, places, prevs, hashes) AS v(id, seq, prev_hash, hash);
  DELETE FROM audit_pending p WHERE p.company_id = company AND p.audit_id = ANY (taken);
  RETURN cardinality(taken);
END
$$;

-- Digests are written once by the chain worker and never change.
CREATE OR REPLACE FUNCTION audit_digest_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_digests is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;

CREATE OR REPLACE TRIGGER audit_digests_guard
  BEFORE UPDATE OR DELETE ON audit_digests
  FOR EACH ROW EXECUTE FUNCTION audit_digest_guard();

CREATE OR REPLACE TRIGGER audit_digests_no_truncate
  BEFORE TRUNCATE ON audit_digests
  FOR EACH STATEMENT EXECUTE FUNCTION audit_digest_guard();

-- Every table with a company column gets the trigger by default: a new table is audited without anyone asking.
CREATE OR REPLACE FUNCTION audit_attach_all() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN
    SELECT c.relname AS tbl, CASE WHEN c.relname = 'companies' THEN 'id' ELSE 'company_id' END AS company_col
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema()
       AND c.relkind = 'r'
       -- The event outbox and the webhook delivery log are themselves records of changes, not changes. A receipt
       -- counter only repeats the number its receipt row (audited) carries. A caja's till state only repeats which of
       -- its till sessions (audited: opens and closes, by whom) is the latest and whether it is open, and a session's
       -- movements repeat the changes of operations and transactions the trail already holds.
       AND c.relname NOT IN ('audit_logs', 'audit_digests', 'audit_seals', 'audit_pending', 'idempotency_keys', 'events', 'webhook_deliveries', 'webhook_attempts',
                             'receipt_counters', 'till_states', 'till_movements')
       AND (c.relname = 'companies' OR EXISTS (
             SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'company_id' AND NOT a.attisdropped))
  LOOP
    EXECUTE format(
      'CREATE OR REPLACE TRIGGER audit_capture AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION audit_capture(%L)',
      r.tbl, r.company_col);
  END LOOP;
END
$$;

SELECT audit_attach_all();
