-- Repeatable: applied after the migrations at every start, under the same advisory lock.
-- What the auto-fed blotter asks on every change of the ledger (server/modules/mesas/feed.ts): which of the company's
-- auto-fed mesas hold an account that the given operations move, and which of those operations each one sees. A
-- plpgsql function because the session keeps the plan of its statement, also behind a pooler in transaction
-- pooling where nothing can be prepared; a company without auto-fed mesas pays one probe of the partial index
-- `mesas_company_auto`. Runs as the caller, so row-level security applies in a tenant transaction.
CREATE OR REPLACE FUNCTION mesa_feed_targets(company integer, ops integer[])
RETURNS TABLE (mesa_id integer, operation_ids integer[])
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
    SELECT m.id, array(SELECT DISTINCT t.operation_id FROM mesa_accounts ma JOIN transactions t ON t.account_id = ma.account_id
                        WHERE ma.mesa_id = m.id AND ma.released_at IS NULL AND t.operation_id = ANY (ops))
      FROM mesas m
     WHERE m.company_id = company AND m.deleted_at IS NULL AND m.blotter_feed_mode = 'auto'
     ORDER BY m.id;
END
$$;
