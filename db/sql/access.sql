-- Repeatable: applied after the migrations (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- One row per live key, with `state`: a fingerprint of everything a caller is made of. A caller the process remembers
-- from an earlier lookup is confirmed against it by the statement that opens each of its tenant transactions
-- (server/lib/write.ts), inside the transaction, so as exactly as by a lookup of its own and without a round trip.
CREATE OR REPLACE VIEW api_key_callers AS
  SELECT k.prefix, k.id, k.company_id, k.key_hash, k.employee_id, e.email, e.name, e.permissions, e.client_ids,
         e.deleted_at IS NOT NULL AS employee_deleted, c.mesas_enabled AS mesas, c.ventanilla_enabled AS ventanilla,
         md5(row(k.id, k.company_id, k.key_hash, k.employee_id, e.email, e.name, e.permissions, e.client_ids,
                 e.deleted_at IS NOT NULL, c.mesas_enabled, c.ventanilla_enabled)::text) AS state
    FROM api_keys k
    JOIN companies c ON c.id = k.company_id
    LEFT JOIN employees e ON e.id = k.employee_id
   WHERE k.revoked_at IS NULL;

-- A database made before `state` was returned has the older signature, which CREATE OR REPLACE cannot change.
DO $$
BEGIN
  IF pg_get_function_result(to_regprocedure('api_key_caller(text)')) NOT LIKE '%state text%' THEN
    DROP FUNCTION api_key_caller(text);
  END IF;
END
$$;

-- The key lookup a request with `x-api-key` makes when its caller is not remembered (server/access/caller.ts): the
-- key by its prefix, not revoked, with its employee and the company's module flags. A plpgsql function because the
-- session keeps the plan of its statement, also behind a pooler in transaction pooling where nothing can be prepared
-- and a statement sent as text is parsed and planned again on every request.
CREATE OR REPLACE FUNCTION api_key_caller(key_prefix text)
RETURNS TABLE (id integer, company_id integer, key_hash text, employee_id integer, email text, name text,
               permissions text[], client_ids integer[], employee_deleted boolean, mesas boolean, ventanilla boolean,
               state text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    SELECT v.id, v.company_id, v.key_hash, v.employee_id, v.email, v.name, v.permissions, v.client_ids,
           v.employee_deleted, v.mesas, v.ventanilla, v.state
      FROM api_key_callers v
     WHERE v.prefix = key_prefix
     LIMIT 1;
END
$$;
