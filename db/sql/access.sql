-- Repeatable: applied after the migrations at every start, under the same advisory lock.
-- The key lookup every request with `x-api-key` makes (server/access/caller.ts): the key by its prefix, not revoked,
-- with its employee and the company's module flags. A plpgsql function because the session keeps the plan of its
-- statement, also behind a pooler in transaction pooling where nothing can be prepared and a statement sent as text
-- is parsed and planned again on every request.
CREATE OR REPLACE FUNCTION api_key_caller(key_prefix text)
RETURNS TABLE (id integer, company_id integer, key_hash text, employee_id integer, email text, name text,
               permissions text[], client_ids integer[], employee_deleted boolean, mesas boolean, ventanilla boolean)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
    SELECT k.id, k.company_id, k.key_hash, k.employee_id, e.email, e.name, e.permissions, e.client_ids,
           e.deleted_at IS NOT NULL, c.mesas_enabled, c.ventanilla_enabled
      FROM api_keys k
      JOIN companies c ON c.id = k.company_id
      LEFT JOIN employees e ON e.id = k.employee_id
     WHERE k.prefix = key_prefix AND k.revoked_at IS NULL
     LIMIT 1;
END
$$;
