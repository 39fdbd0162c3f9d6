-- Repeatable: applied after the drizzle-kit migrations at every start, under the same advisory lock.
-- The audit trail is written here, by the database, so no code path can forget it or forge it.

CREATE OR REPLACE FUNCTION audit_redact(row_data jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
  SELECT row_data - 'key_hash' - 'token_hash' - 'secret_hash' - 'password_hash' - 'secret_ciphertext' - 'previous_secret_ciphertext'
$$;

CREATE OR REPLACE FUNCTION audit_capture() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  old_row jsonb;
  new_row jsonb;
  row_data jsonb;
  act text;
  diff jsonb;
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

  SELECT coalesce(jsonb_agg(jsonb_build_object('field', k, 'before', old_row->k, 'after', new_row->k) ORDER BY k), '[]'::jsonb)
    INTO diff
    FROM jsonb_object_keys(coalesce(old_row, '{}'::jsonb) || coalesce(new_row, '{}'::jsonb)) AS k
   WHERE coalesce(old_row->k, 'null'::jsonb) IS DISTINCT FROM coalesce(new_row->k, 'null'::jsonb);

  -- A tool run marks its operation and transactions; later changes to them keep the channel of their origin.
  IF TG_TABLE_NAME IN ('operations', 'transactions') THEN
    IF chan IS NULL AND to_regclass('messaging_drafts') IS NOT NULL THEN
      EXECUTE 'SELECT channel, channel_detail FROM messaging_drafts WHERE operation_id = $1 LIMIT 1'
         INTO chan, chan_detail
        USING CASE WHEN TG_TABLE_NAME = 'operations' THEN (row_data->>'id')::integer ELSE (row_data->>'operation_id')::integer END;
    END IF;
  ELSE
    chan := NULL;
    chan_detail := NULL;
  END IF;

  INSERT INTO audit_logs (company_id, entity, entity_id, action, raw_action, actor_email, channel, channel_detail, before, after, changes)
  VALUES ((row_data->>TG_ARGV[0])::integer, TG_TABLE_NAME, (row_data->>'id')::integer, act, TG_OP,
          nullif(current_setting('app.actor_email', true), ''), chan, chan_detail, old_row, new_row, diff);
  RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION audit_read_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_logs is append-only';
END
$$;

CREATE OR REPLACE TRIGGER audit_logs_read_only
  BEFORE UPDATE OR DELETE ON audit_logs
  FOR EACH ROW EXECUTE FUNCTION audit_read_only();

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
       -- The event outbox and the webhook delivery log are themselves records of changes, not changes.
       AND c.relname NOT IN ('audit_logs', 'idempotency_keys', 'events', 'webhook_deliveries', 'webhook_attempts')
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
