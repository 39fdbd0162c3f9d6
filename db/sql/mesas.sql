-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- What the auto-fed blotter asks on every change of the ledger (server/modules/mesas/feed.ts): which of the company's
-- auto-fed mesas hold an account that the given operations move, and which of those operations each one sees. A
-- plpgsql function because the session keeps the plan of its statement, also behind a pooler in transaction
-- pooling where nothing can be prepared; a generic plan, since one made for the operations at hand always looks the
-- cheaper and the session planned afresh at every change (0.12 ms under load, ten times the probe); every lookup in
-- it goes by key, so no estimate of a tenant's rows can mislead it. A company without auto-fed mesas pays one probe
-- of the partial index `mesas_company_auto`, in a statement of its own: the statement that follows, run for nothing,
-- still started up a plan over three tables and locked them and their indexes. Runs as the caller, so row-level
-- security applies in a tenant transaction.
CREATE OR REPLACE FUNCTION mesa_feed_targets(company integer, ops integer[])
RETURNS TABLE (mesa_id integer, operation_ids integer[])
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
  IF NOT EXISTS (SELECT FROM mesas m WHERE m.company_id = company AND m.deleted_at IS NULL AND m.blotter_feed_mode = 'auto') THEN
    RETURN;
  END IF;
  -- From the operations' legs to the desks, never the other way: a desk's accounts carry most of the company's
  -- legs, and a plan entering through them read every leg they ever had at each change. The legs are read once,
  -- and only when the company has an auto-fed mesa at all.
  RETURN QUERY
    WITH legs AS MATERIALIZED (SELECT t.operation_id, t.account_id FROM transactions t WHERE t.operation_id = ANY (ops))
    SELECT m.id, array(SELECT DISTINCT l.operation_id FROM legs l JOIN mesa_accounts ma ON ma.account_id = l.account_id
                        WHERE ma.mesa_id = m.id AND ma.released_at IS NULL)
      FROM mesas m
     WHERE m.company_id = company AND m.deleted_at IS NULL AND m.blotter_feed_mode = 'auto'
     ORDER BY m.id;
END
$$;
