-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- Till sessions (contract §20; server/modules/tills/, docs/architecture.md "Till sessions"). The ledger's side of the
-- till check is in ledger.sql, here (till_created) and in the creates of server/modules/operations/service.ts.

-- Every caja has its till row from the moment it is a caja: the row an open or a close locks `for update`, and a new
-- account of the caja waits for (addAccount, server/modules/clients/service.ts), so an account added while the caja
-- closes is either among those the close locks or made after it. A client made a caja later (PATCH type 0) gets it
-- then.
CREATE OR REPLACE FUNCTION till_state_for_caja() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO till_states (caja_id, company_id) VALUES (NEW.id, NEW.company_id) ON CONFLICT (caja_id) DO NOTHING;
  RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER clients_till_state
  AFTER INSERT OR UPDATE OF type ON clients
  FOR EACH ROW WHEN (NEW.type = 0) EXECUTE FUNCTION till_state_for_caja();

-- The pending create's side of the till check (INSERT_CHECKED in server/modules/operations/service.ts), a statement
-- after the insert: by then its foreign-key checks hold the operation's accounts (`for key share`), which an open or a
-- close of their caja must wait for (it locks them `for update`), so what is read here stays true to the commit. The
-- id of a closed caja the operation moves (nothing recorded; the caller refuses it and rolls back), else null, with
-- the operation written down among the movements of every open session it moves.
CREATE OR REPLACE FUNCTION till_created(op integer, company integer) RETURNS integer
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
  cajas integer[];
  closed integer;
BEGIN
  -- The owners of the operation's accounts, each account found by its id from the operation's own transactions, and
  -- no table read whole (enable_seqscan off, as for the inserts' key checks, server/lib/write.ts): a plan made while
  -- the tables were small otherwise reads every account of the company once they have grown.
  SELECT array_agg(DISTINCT (SELECT a.client_id FROM accounts a WHERE a.id = t.account_id)) INTO cajas
    FROM transactions t WHERE t.operation_id = op;
  SELECT min(s.caja_id) INTO closed FROM till_states s WHERE s.caja_id = ANY (cajas) AND s.session_id IS NOT NULL AND NOT s.open;
  IF closed IS NOT NULL THEN
    RETURN closed;
  END IF;
  INSERT INTO till_movements (company_id, session_id, operation_id, event, moved)
  SELECT company, s.session_id, op, 'created', false FROM till_states s WHERE s.open AND s.caja_id = ANY (cajas);
  RETURN NULL;
END
$$;
