-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
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
-- The accounts locked are those of every transaction that changes, counted in the balances or not: an open or a close
-- of a caja locks all its accounts `for update` (server/modules/tills/service.ts), so holding one of them keeps the
-- caja's till as it is until this transaction ends. The till state of their cajas is read right after, in a statement
-- of its own (a later snapshot than the lock's wait): while one of them is closed nothing changes and `till_closed`
-- names it; while one is open the change is written down in its session's movements (till_movements). A change and a
-- close of one caja therefore take turns: the change lands in the session before it closes, or meets it closed.
--
-- No row: no visible operation of that id. `changed` null: it belongs to another company, is not in a status the
-- change starts from, or moves a closed caja (`till_closed` set); nothing was changed. `scope`: the client ids an
-- employee is limited to (null for all), the rule of server/lib/scope.ts.
--
-- The answer gained `till_closed`; the columns a function returns cannot change in place, so the older one goes
-- first (callers name the columns they read, so either answers them).
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_proc p WHERE p.proname = 'ledger_transition' AND p.pronamespace = current_schema()::regnamespace
               AND NOT ('till_closed' = ANY (p.proargnames))) THEN
    DROP FUNCTION ledger_transition(integer, integer, integer[], text, boolean, text, text, integer);
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION ledger_transition(op integer, company integer, scope integer[], from_status text,
                                             except_from boolean, counted_status text, to_status text, sign integer)
RETURNS TABLE (op_status text, op_company integer, changed integer, till_closed integer)
LANGUAGE plpgsql AS $$
DECLARE
  closed_cajas integer[];
  open_sessions integer[];
  moved boolean;
BEGIN
  -- By id alone, the company checked on the row: a company condition beside the id can lead the planner to the
  -- company's index (see loadRefs in the service). Two statements rather than one `scope IS NULL OR …`: planned
  -- with its parameters, that one folds away the scope test and so always looks cheaper than its generic plan, and
  -- the session planned it afresh at every call (0.08 ms, more than its execution); each of these two keeps one plan.
  IF scope IS NULL THEN
    SELECT o.status, o.company_id INTO op_status, op_company FROM operations o WHERE o.id = op FOR NO KEY UPDATE OF o;
  ELSE
    SELECT o.status, o.company_id INTO op_status, op_company FROM operations o
     WHERE o.id = op
       AND (o.client_id = ANY (scope)
            OR EXISTS (SELECT 1 FROM transactions st JOIN accounts sa ON sa.id = st.account_id
                        WHERE st.operation_id = op AND sa.client_id = ANY (scope)))
       FOR NO KEY UPDATE OF o;
  END IF;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF op_company <> company OR (op_status = from_status) = except_from THEN
    RETURN NEXT;
    RETURN;
  END IF;

  PERFORM 1 FROM accounts a
   WHERE a.id IN (SELECT t.account_id FROM transactions t
                   WHERE t.operation_id = op AND (t.status = from_status) <> except_from)
   ORDER BY a.id
     FOR NO KEY UPDATE;

  SELECT coalesce(array_agg(s.caja_id) FILTER (WHERE s.session_id IS NOT NULL AND NOT s.open), '{}'),
         coalesce(array_agg(s.session_id) FILTER (WHERE s.open), '{}')
    INTO closed_cajas, open_sessions
    FROM till_states s
   WHERE s.caja_id IN (SELECT a.client_id FROM transactions t JOIN accounts a ON a.id = t.account_id
                        WHERE t.operation_id = op AND (t.status = from_status) <> except_from);
  IF cardinality(closed_cajas) > 0 THEN
    till_closed := closed_cajas[1];
    RETURN NEXT;
    RETURN;
  END IF;
  IF cardinality(open_sessions) > 0 THEN
    -- Whether the change moves balances, read before it is made: every change but a cancellation of nothing completed.
    moved := counted_status IS NULL OR EXISTS (SELECT 1 FROM transactions t WHERE t.operation_id = op AND t.status = counted_status);
  END IF;

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
  IF cardinality(open_sessions) > 0 THEN
    INSERT INTO till_movements (company_id, session_id, operation_id, event, moved)
    SELECT company, u.session_id, op,
           CASE to_status WHEN 'completed' THEN 'approved' WHEN 'pending' THEN 'reverted' ELSE 'cancelled' END, moved
      FROM unnest(open_sessions) AS u(session_id);
  END IF;
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
          'id', t.id, 'operation_id', t.operation_id, 'account_id', t.account_id, 'currency', t.currency, 'amount', trim_scale(t.amount),
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
      -- An exchange's operation (contract §19) also shows the exchange and its receipt number.
      || coalesce((SELECT jsonb_build_object(
          'exchange', jsonb_build_object('side', e.side, 'currency', e.currency, 'amount', trim_scale(e.amount), 'rate', trim_scale(e.rate),
            'rate_source', e.rate_source, 'local_amount', trim_scale(e.local_amount), 'commission', trim_scale(e.commission), 'ticket_id', e.ticket_id),
          'receipt_number', lpad(r.point::text, 5, '0') || '-' || lpad(r.seq::text, greatest(8, length(r.seq::text)), '0'))
        FROM exchanges e JOIN receipts r ON r.operation_id = e.operation_id WHERE e.operation_id = o.id), '{}'::jsonb)
    FROM operations o WHERE o.id = op);
END
$$;

-- The origin of an operation being created, as operation_origin below gives it: the run's draft is written after the
-- operation, so only the channel can tell, and the create's event spares itself a drafts lookup that finds nothing.
CREATE OR REPLACE FUNCTION channel_origin() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN current_setting('app.channel', true) IN ('messaging', 'twin') THEN jsonb_build_object(
    'channel', current_setting('app.channel', true),
    'requested_by', nullif(current_setting('app.channel_detail', true), '')::jsonb -> 'requested_by') END
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
    channel_origin());
END
$$;

-- What operations to be created refer to (loadRefs in server/modules/operations/service.ts), as one json object:
-- the accounts the legs move, locked in ascending id order (with the balance update's lock when any operation is
-- created completed, see the locking discipline there), the till state of the cajas owning them, read once they are
-- locked (as ledger_transition does), the clients named and those owning the accounts, the operation types, cost
-- centers and transaction types. Every lookup goes by primary key alone, the company checked on
-- the rows by the caller, so a generic plan is right for any tenant and any number of ids; one made for the ids at
-- hand always looks the cheaper, and sent as a statement of its own it was planned afresh at every create (0.28 ms,
-- more than its execution), hence the function and its plan_cache_mode. No row it reads is written here, so no
-- foreign-key check runs under that setting.
CREATE OR REPLACE FUNCTION operation_refs(account_ids integer[], client_ids integer[], type_ids integer[],
                                          cost_center_ids integer[], tx_type_ids integer[], exclusive boolean)
RETURNS json
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  locked json;
  owners integer[];
  client_rows json := '[]';
  type_rows json := '[]';
  cost_center_rows json := '[]';
  tx_type_rows json := '[]';
  tills json := '[]';
BEGIN
  -- Two statements because a lock strength cannot be a parameter.
  IF exclusive THEN
    SELECT coalesce(json_agg(l), '[]'), coalesce(array_agg(l.client_id), '{}') INTO locked, owners
      FROM (SELECT a.id, a.company_id, a.client_id, a.currency_name FROM accounts a
             WHERE a.id = ANY (account_ids) ORDER BY a.id FOR NO KEY UPDATE) l;
  ELSE
    SELECT coalesce(json_agg(l), '[]'), coalesce(array_agg(l.client_id), '{}') INTO locked, owners
      FROM (SELECT a.id, a.company_id, a.client_id, a.currency_name FROM accounts a
             WHERE a.id = ANY (account_ids) ORDER BY a.id FOR KEY SHARE) l;
  END IF;
  -- A statement after the lock, so it reads what an open or close of these cajas committed before it (they lock the
  -- caja's accounts `for update`).
  IF cardinality(owners) > 0 THEN
    SELECT coalesce(json_agg(json_build_object('caja_id', s.caja_id, 'session_id', s.session_id, 'open', s.open)), '[]')
      INTO tills FROM till_states s WHERE s.caja_id = ANY (owners);
  END IF;
  -- One statement per table, each run only with ids to look up: one run for nothing still pays its executor
  -- start-up, the locks of the table and its indexes and an index probe, and most creates name no cost center and no
  -- transaction type.
  -- Owners of the accounts too: an account of a deleted client is unknown.
  IF cardinality(client_ids || owners) > 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', c.id, 'company_id', c.company_id, 'deleted', c.deleted_at IS NOT NULL)), '[]')
      INTO client_rows FROM clients c WHERE c.id = ANY (client_ids || owners);
  END IF;
  IF cardinality(type_ids) > 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', t.id, 'company_id', t.company_id)), '[]')
      INTO type_rows FROM operation_types t WHERE t.id = ANY (type_ids);
  END IF;
  IF cardinality(cost_center_ids) > 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', cc.id, 'company_id', cc.company_id)), '[]')
      INTO cost_center_rows FROM cost_centers cc WHERE cc.id = ANY (cost_center_ids);
  END IF;
  IF cardinality(tx_type_ids) > 0 THEN
    SELECT coalesce(json_agg(json_build_object('id', tt.id, 'company_id', tt.company_id, 'is_commission', tt.is_commission)), '[]')
      INTO tx_type_rows FROM transaction_types tt WHERE tt.id = ANY (tx_type_ids);
  END IF;
  RETURN json_build_object('accounts', locked, 'clients', client_rows, 'types', type_rows, 'cost_centers', cost_center_rows,
                           'tx_types', tx_type_rows, 'tills', tills);
END
$$;
