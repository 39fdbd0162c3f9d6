/** The approval workload several benches share: pending two-leg operations over a company's accounts, approved over HTTP. */
import type postgres from 'postgres'
import { envNumber } from './common'

/** The approval benches' settings: workers, alternating rounds, and per round at most so many operations or seconds. */
export const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32)
export const ROUNDS = envNumber('BENCH_ROUNDS', 4)
export const OPS_PER_ROUND = envNumber('BENCH_OPS', 1000)
export const SECONDS_PER_ROUND = envNumber('BENCH_SECONDS', 15)
/** Accounts every operation's legs are drawn from: few enough that concurrent approvals meet on them. */
export const SHARED_ACCOUNTS = 256
/** Approvals before the measured rounds: JIT, prepared statements, pools. */
export const WARMUP = 200

export interface LegAccounts {
  companyId: number
  typeId: number
  /** The lowest account id of the range the legs draw from. */
  low: number
}

/** One operation type and one caja client holding `accounts` ARS accounts, which every operation's legs share. */
export async function sharedAccounts(sql: postgres.Sql, companyId: number, accounts: number): Promise<LegAccounts> {
  const [{ id: typeId }] = await sql`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
  const [{ id: clientId }] = await sql`insert into clients (company_id, name, type) values (${companyId}, 'Caja', 0) returning id`
  await sql`insert into accounts (company_id, client_id, name, currency_name)
    select ${companyId}, ${clientId}, 'A' || g, 'ARS' from generate_series(1, ${accounts}) g`
  const [{ low }] = await sql`select min(id)::int as low from accounts where company_id = ${companyId}`
  return { companyId, typeId: typeId as number, low: low as number }
}

/** `count` operations of two opposite legs over random accounts among the `span` from `low`, inserted in bulk; their ids. */
export async function twoLegOps(sql: postgres.Sql, on: LegAccounts, span: number, count: number, status: 'pending' | 'completed' = 'pending'): Promise<number[]> {
  const rows = await sql`insert into operations (company_id, operation_type_id, status)
    select ${on.companyId}, ${on.typeId}, ${status} from generate_series(1, ${count}) returning id`
  const ids = rows.map((r) => r.id as number)
  await sql`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
    select ${on.companyId}, o.id, ${on.low} + floor(random() * ${span})::int, 'ARS', s * 12.345678, ${status}
    from unnest(${ids}::int[]) o(id), (values (1), (-1)) v(s)`
  return ids
}

/** `POST /api/operations/{id}/approve` on `base` with `key`; answers other than 200 are counted in `tally`. */
export function httpApprove(base: string, key: string, tally: { errors: number }) {
  return async (id: number) => {
    const res = await fetch(`${base}/api/operations/${id}/approve`, { method: 'POST', headers: { 'x-api-key': key } })
    await res.arrayBuffer()
    if (res.status !== 200) tally.errors++
  }
}
