-- Repeatable: applied after the migrations at every start, under the same advisory lock.
-- The ledger's status changes of a whole operation (approve, revert, cancel; server/modules/operations/service.ts).
-- A plpgsql function because Postgres keeps the plans of its statements for the rest of the session: behind a pooler
-- in transaction pooling nothing can be prepared, and every statement sent as text is parsed, analysed, rewritten
-- for row-level security and planned again on every request, while the pooler's server sessions live on and keep
-- these plans. It also makes the three statements one round trip. It runs as the caller (not SECURITY DEFINER): in a
-- tenant transaction that is `fos_app`, so row-level security confines it to `app.company_id` like any statement.
--
-- Statements, in this order: lock the operation row (concurrent transitions of it serialise; the status read is the
-- latest committed one), lock the accounts it moves in ascending id order, then flip the transactions, move the
-- balances and store the new operation status in one statement. Transactions in status `from_status` change (with
-- `except_from`, all but those in it), and the operation must be in that status too. Of those, the ones in
-- `counted_status` (all when null) count in the balances and move them by `sign` times their amount.
--
-- No row: no visible operation of that id. `changed` null: it belongs to another company or is not in a status the
-- change starts from; nothing was changed. `scope`: the client ids an employee is limited to (null for all), the
-- rule of server/lib/scope.ts.
CREATE OR REPLACE FUNCTION ledger_transition(op integer, company integer, scope integer[], from_status text,
                                             except_from boolean, counted_status text, to_status text, sign integer)
RETURNS TABLE (op_status text, op_company integer, changed integer)
LANGUAGE plpgsql AS $$
BEGIN
  -- By id alone, the company checked on the row: a company condition beside the id can lead the planner to the
  -- company's index (see loadRefs in the service).
  SELECT o.status, o.company_id INTO op_status, op_company FROM operations o
   WHERE o.id = op
     AND (scope IS NULL
          OR EXISTS (SELECT 1 FROM operations so WHERE so.id = op AND so.client_id = ANY (scope))
          OR EXISTS (SELECT 1 FROM transactions st JOIN accounts sa ON sa.id = st.account_id
                      WHERE st.operation_id = op AND sa.client_id = ANY (scope)))
     FOR NO KEY UPDATE OF o;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF op_company <> company OR (op_status = from_status) = except_from THEN
    RETURN NEXT;
    RETURN;
  END IF;

  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT t.account_id FROM transactions t
                   WHERE t.operation_id = op AND (t.status = from_status) <> except_from
                     AND (counted_status IS NULL OR t.status = counted_status))
   ORDER BY a.id
     FOR NO KEY UPDATE;

  WITH prev AS (
    SELECT t.id, t.account_id, t.amount, (counted_status IS NULL OR t.status = counted_status) AS counted
      FROM transactions t WHERE t.operation_id = op AND (t.status = from_status) <> except_from
  ), moved AS (
    UPDATE transactions t SET status = to_status, completed_at = CASE WHEN to_status = 'completed' THEN now() END,
           updated_at = now()
      FROM prev WHERE t.id = prev.id RETURNING prev.account_id, prev.amount, prev.counted
  ), delta AS (
    SELECT m.account_id, sum(m.amount) AS d FROM moved m WHERE m.counted GROUP BY m.account_id
  ), balances AS (
    UPDATE accounts a SET balance = a.balance + sign * delta.d, updated_at = now()
      FROM delta WHERE a.id = delta.account_id RETURNING a.id
  ), stored AS (
    UPDATE operations o SET status = to_status, updated_at = now() WHERE o.id = op RETURNING o.id
  )
  -- Every data-modifying part runs to completion whether it is read or not.
  SELECT count(*)::integer INTO changed FROM moved;
  RETURN NEXT;
END
$$;

-- The operation as its GET returns it (attachments without `signed_url`: a link that expires has no place in a record
-- kept 30 days), as jsonb: what the ledger's announcements carry, rendered inside the outbox's own statement so a
-- transition pays one round trip for its event. A function for the same reason as above: the plans stay with the
-- session. Times as server/lib/time.ts writes them. tests/modules/webhooks.test.ts holds it equal to the GET.
CREATE OR REPLACE FUNCTION operation_json(op integer) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT jsonb_build_object(
      'id', o.id, 'company_id', o.company_id, 'operation_type_id', o.operation_type_id, 'client_id', o.client_id,
      'cost_center_id', o.cost_center_id, 'description', o.description,
      'date', to_char(o.date AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'status', o.status,
      'created_by', o.created_by, 'created_at', to_char(o.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'updated_at', to_char(o.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'transactions', coalesce((SELECT jsonb_agg(jsonb_build_object(
          'id', t.id, 'operation_id', t.operation_id, 'account_id', t.account_id, 'currency', t.currency, 'amount', t.amount::float8,
          'status', t.status, 'transaction_type_id', t.transaction_type_id, 'is_commission', t.is_commission,
          'description', t.description, 'created_at', to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'updated_at', to_char(t.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY t.id)
        FROM transactions t WHERE t.operation_id = o.id), '[]'::jsonb),
      'attachments', coalesce((SELECT jsonb_agg(jsonb_build_object(
          'id', a.id, 'file_name', a.file_name, 'mime_type', a.mime_type, 'size_bytes', a.size_bytes,
          'created_at', to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
          'uploaded_by', jsonb_build_object('id', e.id, 'name', e.name, 'email', a.uploaded_by_email)) ORDER BY a.id)
        FROM operation_attachments a
        LEFT JOIN employees e ON e.company_id = a.company_id AND lower(e.email) = lower(a.uploaded_by_email) AND e.deleted_at IS NULL
        WHERE a.operation_id = o.id AND a.deleted_at IS NULL), '[]'::jsonb))
    FROM operations o WHERE o.id = op);
END
$$;

-- An operation made by a messaging tool run carries the run's channel and requester in every event about it: from
-- the run's draft, or, while the run's own transaction is still creating it, from the channel that transaction
-- declared for the audit trail (server/lib/write.ts). Null for any other operation.
CREATE OR REPLACE FUNCTION operation_origin(op integer) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN coalesce(
    (SELECT jsonb_build_object('channel', d.channel, 'requested_by', d.channel_detail -> 'requested_by')
       FROM messaging_drafts d WHERE d.operation_id = op LIMIT 1),
    CASE WHEN current_setting('app.channel', true) IN ('messaging', 'twin') THEN jsonb_build_object(
      'channel', current_setting('app.channel', true),
      'requested_by', nullif(current_setting('app.channel_detail', true), '')::jsonb -> 'requested_by') END);
END
$$;
