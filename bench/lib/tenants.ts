/**
 * Databases whose statistics do not know a tenant, as production meets them: the tenant's rows arrived after the last
 * ANALYZE (a branch migrating its data into a fresh database), or 99 other tenants fill the statistics sample and this
 * one is missing from it (a new tenant in a big shared database). Used by tests/plans.test.ts to check the plans of
 * the hot statements and by bench/write.ts to measure them. Rows are written in bulk as the table owner with triggers
 * off (no audit rows: seeding is not a tenant's work), and autovacuum is kept off the tables so the statistics stay
 * exactly as arranged.
 */
import type postgres from 'postgres'
import { sql as q } from 'drizzle-orm'
import type { Database } from '../../db/client'
import { issueKey } from '../../server/access/keys'

const TABLES = ['companies', 'clients', 'accounts', 'operations', 'transactions', 'operation_types', 'tags', 'client_tags', 'audit_logs']

/** Autovacuum off on the tables whose statistics matter, then ANALYZE: what the planner knows is fixed from here. */
export async function freezeStatistics(sql: postgres.Sql) {
  for (const t of TABLES) await sql.unsafe(`alter table ${t} set (autovacuum_enabled = false)`)
  await sql.unsafe(`analyze ${TABLES.join(', ')}`)
}

export interface Tenant {
  companyId: number
  key: string
  typeId: number
  /** Account ids of the tenant, two per client (ARS and USD). */
  accountIds: number[]
  clientIds: number[]
}

/** A company with an API key (issued as the app issues them) and nothing else; `mesas` turns its mesas module on. */
export async function newCompany(database: Database, name: string, options: { mesas?: boolean } = {}): Promise<{ companyId: number; key: string }> {
  const [{ id }] = await database.rows<{ id: number }>(q`insert into companies (name, mesas_enabled) values (${name}, ${options.mesas ?? false}) returning id`)
  const key = await database.db.transaction((tx) => issueKey(tx, id, null, 'bench'))
  return { companyId: id, key: key.key }
}

/**
 * `clients` clients with an ARS and a USD account each, and `operations` pending operations of three transactions
 * over random accounts of the company; one operation type. Bulk SQL, triggers off.
 */
export async function seedTenant(sql: postgres.Sql, companyId: number, clients: number, operations: number): Promise<Omit<Tenant, 'key' | 'companyId'>> {
  return sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    const [{ id: typeId }] = await tx`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
    await tx`insert into clients (company_id, name, description, type)
      select ${companyId}, 'Cliente ' || g, 'cartera ' || (g % 97), g % 2 from generate_series(1, ${clients}) g`
    await tx`insert into accounts (company_id, client_id, name, currency_name)
      select c.company_id, c.id, v.cur, v.cur from clients c cross join (values ('ARS'), ('USD')) v(cur) where c.company_id = ${companyId}`
    // What the clients trigger (off here) gives every caja: its till row, which the ledger's writes lock.
    await tx`insert into till_states (caja_id, company_id) select id, company_id from clients where company_id = ${companyId} and type = 0`
    const accountIds = (await tx`select id from accounts where company_id = ${companyId} order by id`).map((r) => r.id as number)
    const clientIds = (await tx`select id from clients where company_id = ${companyId} order by id`).map((r) => r.id as number)
    if (operations > 0) {
      await tx`insert into operations (company_id, operation_type_id, status) select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${operations})`
      await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
        select ${companyId}, o.id, ${accountIds[0]}::int + floor(random() * ${accountIds.length})::int, 'ARS', 10, 'pending'
        from operations o cross join generate_series(1, 3) where o.company_id = ${companyId}`
    }
    return { typeId: typeId as number, accountIds, clientIds }
  })
}

/** `tenants` further companies of `clients` clients and `operations` operations each: the ones the sample will see. */
export async function seedOthers(sql: postgres.Sql, database: Database, tenants: number, clients: number, operations: number) {
  const ids: number[] = []
  for (let i = 0; i < tenants; i++) ids.push((await newCompany(database, `Otra ${i + 1}`)).companyId)
  await sql.begin(async (tx) => {
    await tx`set local session_replication_role = replica`
    const [{ id: typeId }] = await tx`insert into operation_types (company_id, name, kind) values (${ids[0]}, 'Cambio', 'exchange') returning id`
    await tx`insert into clients (company_id, name, description, type)
      select c, 'Cliente ' || g, 'cartera ' || (g % 97), g % 2 from unnest(${ids}::int[]) c, generate_series(1, ${clients}) g`
    await tx`insert into accounts (company_id, client_id, name, currency_name)
      select c.company_id, c.id, v.cur, v.cur from clients c cross join (values ('ARS'), ('USD')) v(cur) where c.company_id = any(${ids}::int[])`
    await tx`insert into till_states (caja_id, company_id) select id, company_id from clients where company_id = any(${ids}::int[]) and type = 0`
    if (operations > 0) {
      await tx`insert into operations (company_id, operation_type_id, status)
        select c, ${typeId}, 'pending' from unnest(${ids}::int[]) c, generate_series(1, ${operations})`
      // Each operation moves three accounts of its own company: the accounts of company c are contiguous ids.
      await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
        select o.company_id, o.id, r.low + floor(random() * (r.high - r.low + 1))::int, 'ARS', 10, 'pending'
        from operations o
        join (select company_id, min(id) as low, max(id) as high from accounts where company_id = any(${ids}::int[]) group by company_id) r
          on r.company_id = o.company_id
        cross join generate_series(1, 3)
        where o.company_id = any(${ids}::int[])`
    }
  })
  return ids
}
