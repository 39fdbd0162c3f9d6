import { and, eq, isNull, sql } from 'drizzle-orm'
import { clients, companies, externalGrants } from '../../../db/schema'
import type { Database, Executor, Tx } from '../../../db/client'
import { clientScope, GRANT_KIND, type Caller } from '../../access/caller'
import { invalid, notFound } from '../../lib/errors'
import { isoSql } from '../../lib/time'
import { newCredential } from '../../lib/secrets'
import { dec, type Dec } from '../../lib/money'

export const DEFAULT_GRANT_DAYS = 30
const DAY_MS = 86_400_000

async function liveClient(db: Executor, companyId: number, clientId: number) {
  const [row] = await db
    .select({ id: clients.id, name: clients.name, type: clients.type })
    .from(clients)
    .where(and(eq(clients.id, clientId), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
  if (!row) throw notFound('Client')
  return row
}

/**
 * A client-scoped employee only reaches the clients assigned to it, and a grant only its own client (its scope is
 * that one id); the rest do not exist for them.
 */
export async function clientForCaller(db: Executor, caller: Caller, clientId: number) {
  const scope = clientScope(caller)
  if (scope && !scope.includes(clientId)) throw notFound('Client')
  return liveClient(db, caller.companyId, clientId)
}

export async function createGrant(tx: Tx, caller: Caller, clientId: number, now: Date, expiresInDays = DEFAULT_GRANT_DAYS) {
  await clientForCaller(tx, caller, clientId)
  const credential = newCredential(GRANT_KIND)
  const [row] = await tx
    .insert(externalGrants)
    .values({
      companyId: caller.companyId,
      clientId,
      prefix: credential.prefix,
      tokenHash: credential.hash,
      expiresAt: new Date(now.getTime() + expiresInDays * DAY_MS),
      createdBy: caller.employee?.id ?? null,
      createdAt: now,
    })
    .returning({ id: externalGrants.id, expiresAt: externalGrants.expiresAt })
  return { id: row.id, token: credential.value, expires_at: row.expiresAt.toISOString() }
}

export async function revokeGrant(tx: Tx, caller: Caller, clientId: number, grantId: number, now: Date) {
  await clientForCaller(tx, caller, clientId)
  const [row] = await tx
    .update(externalGrants)
    .set({ revokedAt: now })
    .where(
      and(
        eq(externalGrants.id, grantId),
        eq(externalGrants.clientId, clientId),
        eq(externalGrants.companyId, caller.companyId),
        isNull(externalGrants.revokedAt),
      ),
    )
    .returning({ id: externalGrants.id })
  if (!row) throw notFound('Grant')
  return { deleted: true as const }
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,6})?)?(?:Z|[+-](\d{2}):(\d{2}))$/i

function realDate(y: string, m: string, d: string) {
  const at = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)))
  return at.getUTCFullYear() === Number(y) && at.getUTCMonth() === Number(m) - 1 && at.getUTCDate() === Number(d)
}

type Bound = { date: string } | { instant: string }

export function parseBound(field: 'from' | 'to', value: string | undefined): Bound | null {
  if (value === undefined || value === '') return null
  const bad = () => invalid(`Invalid ${field}`, [{ field, message: 'expected YYYY-MM-DD or an ISO 8601 date-time with Z or an offset' }])
  let m = DATE.exec(value)
  if (m) {
    if (!realDate(m[1], m[2], m[3])) throw bad()
    return { date: value }
  }
  m = DATE_TIME.exec(value)
  if (!m || !realDate(m[1], m[2], m[3]) || Number(m[4]) > 23 || Number(m[5]) > 59 || Number(m[6] ?? 0) > 59) throw bad()
  if (m[7] !== undefined && (Number(m[7]) > 15 || Number(m[8]) > 59)) throw bad()
  return { instant: value }
}

/** Exact text of an instant (microseconds, UTC) that round-trips through `::timestamptz`. */
const exact = (expr: ReturnType<typeof sql>) => sql`to_char((${expr}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`

export interface Range {
  /** Inclusive lower bound, or null for "since the beginning". */
  from: string | null
  /** Exclusive upper bound, or null for "up to now and beyond". */
  until: string | null
  timezone: string
}

/**
 * Dates are whole days of the company's time zone: `from` starts at that day's local midnight, `to` ends
 * at the next local midnight (so DST days are 23 or 25 hours). Date-times are instants; `to` is inclusive.
 */
export async function resolveRange(database: Database, db: Executor, companyId: number, from?: string, to?: string): Promise<Range> {
  const f = parseBound('from', from)
  const u = parseBound('to', to)
  const [company] = await db.select({ timezone: companies.timezone }).from(companies).where(eq(companies.id, companyId))
  const tz = company.timezone
  const lower = f && ('date' in f ? sql`(${f.date}::date)::timestamp at time zone ${tz}` : sql`${f.instant}::timestamptz`)
  const upper =
    u && ('date' in u ? sql`(${u.date}::date + 1)::timestamp at time zone ${tz}` : sql`${u.instant}::timestamptz + interval '1 microsecond'`)
  const [row] = await database.rows<{ from: string | null; until: string | null; empty: boolean }>(
    sql`select ${lower ? exact(lower) : sql`null`} as "from", ${upper ? exact(upper) : sql`null`} as "until",
      ${lower && upper ? sql`(${lower}) >= (${upper})` : sql`false`} as "empty"`,
    db,
  )
  if (row.empty) throw invalid('from must not be after to', [{ field: 'from', message: 'after to' }])
  return { from: row.from, until: row.until, timezone: tz }
}

export interface StatementAccount {
  id: number
  name: string
  currency_name: string
  balance: string
  opening_balance: Dec
}

export interface StatementRow {
  account_id: number
  account_name: string
  currency: string
  transaction_id: number
  operation_id: number
  completed_at: string
  description: string
  amount: Dec
  running_balance: Dec
}

export async function statementAccounts(database: Database, db: Executor, companyId: number, clientId: number, range: Range) {
  const before = range.from ? sql`t.completed_at < ${range.from}::timestamptz` : sql`false`
  const rows = await database.rows<{ id: number; name: string; currency_name: string; balance: string; opening: string }>(
    sql`select a.id, a.name, a.currency_name, a.balance::text as balance,
        coalesce((select sum(t.amount) from transactions t
                  where t.account_id = a.id and t.status = 'completed' and ${before}), 0)::text as opening
      from accounts a where a.company_id = ${companyId} and a.client_id = ${clientId} order by a.id`,
    db,
  )
  return rows.map(
    (r): StatementAccount => ({ id: Number(r.id), name: r.name, currency_name: r.currency_name, balance: r.balance, opening_balance: dec(r.opening) }),
  )
}

const BATCH = 1000

/** Runs one read; a statement read in one snapshot passes that transaction, a stream a fresh one per batch. */
export type Reads = <T>(fn: (db: Executor) => Promise<T>) => Promise<T>

/**
 * The account's completed transactions in the range, oldest first, each with the balance after it.
 * Read in keyset batches so a long range never sits in memory at once.
 */
export async function* accountRows(database: Database, read: Reads, account: StatementAccount, range: Range): AsyncGenerator<StatementRow[]> {
  let running = account.opening_balance
  let after: { at: string; id: number } | null = null
  for (;;) {
    const rows: { id: number; operation_id: number; at: string; completed_at: string; description: string; amount: string }[] =
      await read((db) => database.rows(
        sql`select t.id, t.operation_id, ${exact(sql`t.completed_at`)} as at,
            ${isoSql(sql`t.completed_at`)} as completed_at,
            case when t.description <> '' then t.description else o.description end as description, t.amount::text as amount
          from transactions t join operations o on o.id = t.operation_id
          where t.account_id = ${account.id} and t.status = 'completed' and t.completed_at is not null
            ${range.from ? sql`and t.completed_at >= ${range.from}::timestamptz` : sql``}
            ${range.until ? sql`and t.completed_at < ${range.until}::timestamptz` : sql``}
            ${after ? sql`and (t.completed_at, t.id) > (${after.at}::timestamptz, ${after.id})` : sql``}
          order by t.completed_at, t.id limit ${BATCH}`,
        db,
      ))
    if (rows.length === 0) return
    yield rows.map((r) => {
      const amount = dec(r.amount)
      running = running.plus(amount)
      return {
        account_id: account.id,
        account_name: account.name,
        currency: account.currency_name,
        transaction_id: Number(r.id),
        operation_id: Number(r.operation_id),
        completed_at: r.completed_at,
        description: r.description,
        amount,
        running_balance: running,
      }
    })
    if (rows.length < BATCH) return
    const last = rows[rows.length - 1]
    after = { at: last.at, id: Number(last.id) }
  }
}
