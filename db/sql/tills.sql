-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- Till sessions (contract §20; server/modules/tills/). The ledger's side of the till lock is in ledger.sql and in the
-- create statements of server/modules/operations/service.ts.

-- Every caja has its till row from the moment it is a caja: a ledger write finds a row to lock even on a caja never
-- opened, so the first open of a caja takes turns with the writes in flight exactly as every later open and close do.
-- Were the row made by the first open, a write that looked before that open committed would find nothing to wait for
-- and could land between the open's count and the session. A client made a caja later (PATCH type 0) gets it then.
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
