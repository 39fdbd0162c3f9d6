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
