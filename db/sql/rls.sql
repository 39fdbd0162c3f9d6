-- Repeatable: applied after the migrations and audit.sql (db/routines.ts) whenever this file or the migrations change, under the same advisory lock.
-- Row-level security as a second line behind the application's company filters: every write transaction
-- (server/lib/write.ts) sets `app.company_id` and then acts as `fos_app`, a role that owns nothing and
-- bypasses nothing, so the database itself confines what that transaction can read or change to one company.
-- The connecting role stays the owner outside those transactions (owners bypass RLS without FORCE): the
-- superadmin routes, the start-up routines and the migrations are not tenant work. So are, for now, the plain reads
-- made outside a transaction (most GETs, authentication): they rely on the application's company filters, which
-- tests/isolation.test.ts checks route by route. The policy confines every write and every read inside a write or a
-- readSnapshot() (server/lib/write.ts).

DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fos_app') THEN
    CREATE ROLE fos_app NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE NOINHERIT;
  END IF;
EXCEPTION
  -- Roles are cluster-wide: another database of the same cluster may be creating it at this very moment.
  WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

-- The connecting role must be able to SET ROLE to it (a superuser always can).
DO $$
BEGIN
  IF NOT pg_has_role(current_user, 'fos_app', 'MEMBER') THEN
    EXECUTE format('GRANT fos_app TO %I', current_user);
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION rls_attach_all() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  r record;
  tenant text := 'nullif(current_setting(''app.company_id'', true), '''')::integer';
BEGIN
  -- Granted again whenever a migration was added, so a table it made is usable by the role at once.
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO fos_app', current_schema());
  EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO fos_app', current_schema());
  EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO fos_app', current_schema());
  -- The trail is append-only for the application, whatever its trigger says.
  IF to_regclass('audit_logs') IS NOT NULL THEN
    REVOKE UPDATE, DELETE ON audit_logs FROM fos_app;
  END IF;
  -- Digests and places are made by the chain worker as the owner; tenants only read them. A tenant's writes add
  -- their rows to the queue of rows waiting for a place (the audit_logs trigger), and cannot take any out of it.
  IF to_regclass('audit_digests') IS NOT NULL THEN
    REVOKE INSERT, UPDATE, DELETE ON audit_digests FROM fos_app;
  END IF;
  IF to_regclass('audit_seals') IS NOT NULL THEN
    REVOKE INSERT, UPDATE, DELETE ON audit_seals FROM fos_app;
  END IF;
  IF to_regclass('audit_pending') IS NOT NULL THEN
    REVOKE UPDATE, DELETE ON audit_pending FROM fos_app;
  END IF;

  -- Same discovery as audit_attach_all, plus the audit trail and idempotency claims, which are per company too.
  FOR r IN
    SELECT c.oid, c.relname AS tbl, c.relrowsecurity AS enabled,
           CASE WHEN c.relname = 'companies' THEN 'id' ELSE 'company_id' END AS company_col
      FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = current_schema()
       AND c.relkind IN ('r', 'p')
       AND (c.relname = 'companies' OR EXISTS (
             SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'company_id' AND NOT a.attisdropped))
  LOOP
    -- Checked first so a restart takes no table locks when nothing changed.
    IF NOT r.enabled THEN
      EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', r.tbl);
    END IF;
    -- The read side compares `company_id + 0`, which no index matches: a policy qual that an index can serve makes
    -- the planner reach for the company indexes on every lookup by id, and when the statistics miss the tenant (rows
    -- added since the last ANALYZE, or a database where other tenants fill the sample) it estimates one row there and
    -- walks every row of the company instead of the one the primary key names. As a filter it costs one comparison
    -- per row the statement's own conditions already chose; routes filter by company themselves where they list.
    -- A database made with the older, indexable form gets the policy replaced once, at its next start.
    IF NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = r.oid AND p.polname = 'tenant_isolation'
                    AND pg_get_expr(p.polqual, p.polrelid) LIKE '%+ 0)%') THEN
      EXECUTE format('DROP POLICY IF EXISTS tenant_isolation ON %I', r.tbl);
      EXECUTE format(
        'CREATE POLICY tenant_isolation ON %I AS PERMISSIVE FOR ALL TO fos_app USING ((%I + 0) = %s) WITH CHECK (%I = %s)',
        r.tbl, r.company_col, tenant, r.company_col, tenant);
    END IF;
    -- Statistics on the policy's own expression. Without them the planner guesses that the policy keeps 0.5 % of
    -- the rows it filters, and a company's page of 50 rows out of thousands looks cheaper to sort from a full scan
    -- than to read in order from the company's index (14 ms instead of 0.1 ms for a page of operations). With
    -- them it takes the rows of one company among as many as there are companies, as it does for `company_id = $1`.
    -- The estimate is not that of one tenant, so a tenant the sample missed is not taken for an empty one.
    IF NOT EXISTS (SELECT 1 FROM pg_statistic_ext s WHERE s.stxrelid = r.oid AND s.stxname = r.tbl || '_tenant') THEN
      EXECUTE format('CREATE STATISTICS %I ON (%I + 0) FROM %I', r.tbl || '_tenant', r.company_col, r.tbl);
    END IF;
  END LOOP;
END
$$;

SELECT rls_attach_all();
