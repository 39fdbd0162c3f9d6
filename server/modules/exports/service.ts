import { and, eq, isNull, sql, type SQL } from 'drizzle-orm'
import { clients, companies, externalGrants } from '../../../db/schema'
import type { Database, Executor, Tx } from '../../../db/client'
import { clientScope, GRANT_KIND, type Caller } from '../../access/caller'
import { invalid, notFound } from '../../lib/errors'
import { isoSql } from '../../lib/time'
import { newCredential } from '../../lib/secrets'

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
  /** Sum of the completed amounts before the range (numeric text). */
  opening: string
  /** opening plus the completed amounts in the range (numeric text). */
  closing: string
  /** Completed transactions in the range. */
  rows: number
}

const inRange = (range: Range) =>
  sql`t.status = 'completed' and t.completed_at is not null
    ${range.from ? sql`and t.completed_at >= ${range.from}::timestamptz` : sql``}
    ${range.until ? sql`and t.completed_at < ${range.until}::timestamptz` : sql``}`

/** The client's accounts with their opening and closing balances and how many rows the range holds for each. */
export async function statementAccounts(database: Database, db: Executor, companyId: number, clientId: number, range: Range) {
  const before = range.from ? sql`t.completed_at < ${range.from}::timestamptz` : sql`false`
  const rows = await database.rows<{ id: number; name: string; currency_name: string; balance: string; opening: string; closing: string; rows: number }>(
    sql`select a.id, a.name, a.currency_name, a.balance::text as balance, o.opening::text as opening,
        (o.opening + r.moved)::text as closing, r.rows
      from accounts a
      cross join lateral (select coalesce(sum(t.amount), 0) as opening from transactions t
                          where t.account_id = a.id and t.status = 'completed' and ${before}) o
      cross join lateral (select coalesce(sum(t.amount), 0) as moved, count(*)::int as rows from transactions t
                          where t.account_id = a.id and ${inRange(range)}) r
      where a.company_id = ${companyId} and a.client_id = ${clientId} order by a.id`,
    db,
  )
  return rows.map(
    (r): StatementAccount => ({ id: Number(r.id), name: r.name, currency_name: r.currency_name, balance: r.balance, opening: r.opening, closing: r.closing, rows: Number(r.rows) }),
  )
}

const BATCH = 2500

/** Runs one read; a statement read in one snapshot passes that transaction, a stream a fresh one per batch. */
export type Reads = <T>(fn: (db: Executor) => Promise<T>) => Promise<T>

/**
 * How a statement row is written, as SQL over `r` (id, operation_id, completed_at, description, amount, running) and
 * what joins two rows: the database writes the finished text, so the server never handles a row on its own.
 */
export interface RowFormat {
  line: SQL
  separator: string
}

/**
 * A JSON transaction object exactly as JSON.stringify writes it (keys in the contract's order): money with every digit
 * of the numeric, trailing zeros trimmed, as `toJson` writes it; quoted when the caller asked for money as strings.
 */
export const jsonRows = (moneyStrings: boolean): RowFormat => {
  const money = (column: SQL) => (moneyStrings ? sql`'"' || trim_scale(${column})::text || '"'` : sql`trim_scale(${column})::text`)
  return {
    line: sql`'{"id":' || r.id || ',"operation_id":' || r.operation_id || ',"completed_at":"' || ${isoSql(sql`r.completed_at`)}
      || '","description":' || to_json(r.description)::text || ',"amount":' || ${money(sql`r.amount`)}
      || ',"running_balance":' || ${money(sql`r.running`)} || '}'`,
    separator: ',',
  }
}

/** CSV records after the account's own leading cells (`prefix`, already quoted): amounts as plain decimals. */
export const csvRows = (prefix: string): RowFormat => ({
  line: sql`${prefix}::text || r.id || ',' || r.operation_id || ',' || ${isoSql(sql`r.completed_at`)} || ','
    || statement_csv_text(r.description) || ',' || trim_scale(r.amount)::text || ',' || trim_scale(r.running)::text || E'\r\n'`,
  separator: '',
})

/**
 * The account's completed transactions in the range, oldest first, each with the balance after it, as finished text
 * in keyset batches: one row of text per batch, so a long range never sits in memory at once. The batch's rows are
picked first and only they are summed and given their operation's description, by primary key and only when they
have none of their own (a window over the whole remaining range made each batch sort all of it, and a join let the
planner hash the company's whole operations table for every batch). The plain bound on
 * `completed_at` beside the row comparison is what lets `transactions_account` start each batch where the last ended
 * (the index has no id, so the row comparison alone left every batch scanning from the account's first row).
 */
export async function* accountChunks(
  database: Database,
  read: Reads,
  account: StatementAccount,
  range: Range,
  format: RowFormat,
  restPercent = 0,
): AsyncGenerator<string> {
  let running = account.opening
  let after: { at: string; id: number } | null = null
  for (;;) {
    const started = performance.now()
    const [batch] = await read((db) =>
      database.rows<{ text: string | null; n: number; at: string; id: number; running: string }>(
        sql`select string_agg(${format.line}, ${format.separator} order by r.completed_at, r.id) as text, count(*)::int as n,
            (array_agg(${exact(sql`r.completed_at`)} order by r.completed_at desc, r.id desc))[1] as at,
            (array_agg(r.id order by r.completed_at desc, r.id desc))[1] as id,
            (array_agg(r.running::text order by r.completed_at desc, r.id desc))[1] as running
          from (
            select b.id, b.operation_id, b.completed_at, b.amount,
              case when b.description <> '' then b.description else (select o.description from operations o where o.id = b.operation_id) end as description,
              ${running}::numeric + sum(b.amount) over (order by b.completed_at, b.id rows unbounded preceding) as running
            from (
              select t.id, t.operation_id, t.completed_at, t.amount, t.description from transactions t
              where t.account_id = ${account.id} and ${inRange(range)}
                ${after ? sql`and t.completed_at >= ${after.at}::timestamptz and (t.completed_at, t.id) > (${after.at}::timestamptz, ${after.id})` : sql``}
              order by t.completed_at, t.id limit ${BATCH}
            ) b
          ) r`,
        db,
      ),
    )
    const n = Number(batch.n)
    if (n === 0 || batch.text === null) return
    yield batch.text
    if (n < BATCH) return
    // An export is a long run of CPU-bound batches on a database that ordinary requests share: resting in
    // proportion to the batch just read caps the export's share of a core, so it slows down rather than them.
    if (restPercent > 0) await Bun.sleep(((performance.now() - started) * restPercent) / 100)
    running = batch.running
    after = { at: batch.at, id: Number(batch.id) }
  }
}
