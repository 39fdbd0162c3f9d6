import { sql, type SQL } from 'drizzle-orm'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { can, clientScope, type Caller } from '../../access/caller'
import { ApiError, conflict, invalid, notFound, unprocessable } from '../../lib/errors'
import { announce } from '../../lib/events'
import { pagination } from '../../lib/models'
import { D, storedAmount, toJson, type Dec } from '../../lib/money'
import { isoSql } from '../../lib/time'
import { trimDecimal } from '../../../db/json'
import { exchangeDetailDto, receiptNumber } from '../operations/exchange-detail'
import { createOperation, instant } from '../operations/service'
import type { CajaDto, CountInput, TillReport, TillSessionDto } from './model'

/** The operation type every difference is booked under (contract §20; the setup's starter set makes it). */
export const ADJUSTMENT_TYPE = 'Ajuste de caja'

/*
 * The till lock (docs/architecture.md, "Till sessions"). Each caja has one row in till_states. An open or a close
 * locks it `for update`, then every account of the caja `for update`, and keeps both to its commit. Every ledger
 * write already locks the accounts it moves (server/modules/operations/service.ts) and reads its cajas' till state in
 * a statement after that lock. `for update` on an account waits for any lock held on it and makes any later one wait,
 * so a write and a close of one caja take turns: a write that holds its accounts first commits, movements written,
 * before the close reads the balances and the session; one that asks after the close waits for its commit and then
 * reads the caja closed and is refused with 409 TILL_CLOSED. Two opens or two closes take turns on the till row, and
 * the second finds the state the first left. Writes lock no till row: a caja's writes do not contend on one row.
 */

interface LockedTill {
  caja_id: number
  name: string
  session_id: number | null
  open: boolean
}

const lockTillRow = (tx: Tx, cajaId: number, companyId: number) =>
  tx.execute(sql`select s.caja_id, c.name, s.session_id, s.open
    from till_states s join clients c on c.id = s.caja_id
    where s.caja_id = ${cajaId} and c.company_id = ${companyId} and c.type = 0 and c.deleted_at is null
    for update of s`)

/**
 * The caja's till row and then all its accounts, locked for the rest of the transaction (in the ledger's order: the
 * accounts by ascending id); 404 for anything but a live caja the caller may see.
 */
async function lockTill(tx: Tx, caller: Caller, cajaId: number): Promise<LockedTill> {
  const scope = clientScope(caller)
  if (scope && !scope.includes(cajaId)) throw notFound('Caja')
  let [till] = rowsOf<LockedTill>(await lockTillRow(tx, cajaId, caller.companyId))
  if (!till) {
    // A caja written without the database's triggers (a bulk load) has no till row yet: made here, then locked.
    await tx.execute(sql`insert into till_states (caja_id, company_id)
      select c.id, c.company_id from clients c where c.id = ${cajaId} and c.company_id = ${caller.companyId} and c.type = 0 and c.deleted_at is null
      on conflict (caja_id) do nothing`)
    ;[till] = rowsOf<LockedTill>(await lockTillRow(tx, cajaId, caller.companyId))
  }
  if (!till) throw notFound('Caja')
  await tx.execute(sql`select a.id from accounts a where a.client_id = ${cajaId} order by a.id for update`)
  return till
}

interface CompanyFacts {
  local_currency: string
  till_tolerance: string
  adjustment_type_id: number | null
}

async function companyFacts(tx: Tx, companyId: number): Promise<CompanyFacts> {
  const [row] = rowsOf<CompanyFacts>(
    await tx.execute(sql`select c.local_currency, c.till_tolerance::text as till_tolerance,
      (select min(t.id) from operation_types t where t.company_id = c.id and t.kind = 'other' and t.name = ${ADJUSTMENT_TYPE}) as adjustment_type_id
      from companies c where c.id = ${companyId}`),
  )
  return row
}

/** The caja's balance per currency (read after the lock, so every write that came before it is in), in account order. */
async function balancesOf(tx: Tx, cajaId: number): Promise<{ currency: string; balance: Dec; accountId: number }[]> {
  const rows = rowsOf<{ id: number; currency_name: string; balance: string }>(
    await tx.execute(sql`select a.id, a.currency_name, a.balance::text as balance from accounts a where a.client_id = ${cajaId} order by a.id`),
  )
  // Two accounts of one currency are counted together; a difference is booked on the first.
  const by = new Map<string, { currency: string; balance: Dec; accountId: number }>()
  for (const r of rows) {
    const known = by.get(r.currency_name)
    if (known) known.balance = known.balance.plus(r.balance)
    else by.set(r.currency_name, { currency: r.currency_name, balance: new D(r.balance), accountId: r.id })
  }
  return [...by.values()]
}

/** A count as stored and answered: amounts as exact decimal text. */
interface CountRow {
  currency: string
  expected: string
  counted: string
  difference: string
  denominations?: { value: string; count: number }[]
}

const text = (d: Dec) => trimDecimal(d.toFixed(6))

/**
 * What was counted against what the caja holds: one row per currency of the caja, in account order. Every currency
 * counted once, none the caja has not (400 with each problem in `details`); a count by denomination adds up to its
 * amount.
 */
function countRows(counted: CountInput[], balances: { currency: string; balance: Dec; accountId: number }[]) {
  const byCurrency = new Map(balances.map((b) => [b.currency.toUpperCase(), b]))
  const given = new Map<string, { amount: Dec; denominations?: { value: string; count: number }[] }>()
  const named = new Set<string>()
  const problems: { field: string; message: string }[] = []
  counted.forEach((c, i) => {
    const account = byCurrency.get(c.currency.trim().toUpperCase())
    if (!account) return problems.push({ field: `counted.${i}.currency`, message: `the caja has no account in ${c.currency}` })
    if (named.has(account.currency)) return problems.push({ field: `counted.${i}.currency`, message: `${account.currency} is counted twice` })
    named.add(account.currency)
    const stored = storedAmount(c.amount)
    if (stored === null) return problems.push({ field: `counted.${i}.amount`, message: 'must be a decimal ≥ 0 below 10^22' })
    const amount = new D(stored)
    if (amount.isNegative()) return problems.push({ field: `counted.${i}.amount`, message: 'must not be negative' })
    let denominations: { value: string; count: number }[] | undefined
    if (c.denominations?.length) {
      let total = new D(0)
      denominations = []
      for (const [j, d] of c.denominations.entries()) {
        const value = storedAmount(d.value)
        if (value === null || new D(value).lte(0)) {
          problems.push({ field: `counted.${i}.denominations.${j}.value`, message: 'must be greater than 0' })
          continue
        }
        total = total.plus(new D(value).times(d.count))
        denominations.push({ value: trimDecimal(value), count: d.count })
      }
      if (!total.equals(amount))
        problems.push({ field: `counted.${i}.denominations`, message: `bills and coins add up to ${text(total)}, not to the amount ${text(amount)}` })
    }
    given.set(account.currency, { amount, denominations })
  })
  for (const b of balances) if (!named.has(b.currency)) problems.push({ field: 'counted', message: `${b.currency} is not counted` })
  if (problems.length) throw invalid('Every currency of the caja is counted once, and only those', problems)
  return balances.map((b) => {
    const g = given.get(b.currency)!
    const row: CountRow = { currency: b.currency, expected: text(b.balance), counted: text(g.amount), difference: text(g.amount.minus(b.balance)) }
    if (g.denominations) row.denominations = g.denominations
    return { row, accountId: b.accountId }
  })
}

/**
 * The differences booked as one completed "Ajuste de caja" operation on the caja, through the ledger's own create
 * (balances, audit trail, events, and the session's movements as for any operation), so that every balance ends equal
 * to what was counted; null when every count matched. Without a `client_id`: its legs already name the caja, and a
 * reference to the caja's row would wait for anyone holding that row (a client edit or deletion) while the caja's
 * accounts are held here.
 */
async function bookDifferences(tx: Tx, caller: Caller, till: LockedTill, facts: CompanyFacts, rows: { row: CountRow; accountId: number }[], moment: string) {
  const differing = rows.filter((r) => !new D(r.row.difference).isZero())
  if (differing.length === 0) return null
  if (facts.adjustment_type_id === null)
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', `The company has no operation type "${ADJUSTMENT_TYPE}" of kind other to book the differences under`, [
      { field: 'counted', message: `create the operation type "${ADJUSTMENT_TYPE}" (kind other)` },
    ])
  const op = await createOperation(tx, caller, {
    operation_type_id: facts.adjustment_type_id,
    description: `${ADJUSTMENT_TYPE}: ${moment} de la sesión ${till.session_id} de ${till.name} (${differing.map((r) => `${r.row.currency} ${r.row.difference}`).join(', ')})`,
    status: 'completed',
    transactions: differing.map((r) => ({ account_id: r.accountId, amount: r.row.difference })),
  })
  return op.id
}

const SESSION_COLUMNS = sql`s.id, s.caja_id, c.name as caja_name, s.status, ${isoSql(sql`s.opened_at`)} as opened_at, s.opened_by, eo.name as opened_by_name,
  s.opening, s.opening_adjustment_operation_id, ${isoSql(sql`s.closed_at`)} as closed_at, s.closed_by, ec.name as closed_by_name, s.closing,
  s.closing_adjustment_operation_id, s.summary, s.note`
const SESSION_FROM = sql`till_sessions s join clients c on c.id = s.caja_id
  left join employees eo on eo.id = s.opened_by left join employees ec on ec.id = s.closed_by`

interface SessionRow {
  id: number
  caja_id: number
  caja_name: string
  status: 'open' | 'closed'
  opened_at: string
  opened_by: number | null
  opened_by_name: string | null
  opening: CountRow[]
  opening_adjustment_operation_id: number | null
  closed_at: string | null
  closed_by: number | null
  closed_by_name: string | null
  closing: CountRow[] | null
  closing_adjustment_operation_id: number | null
  summary: SummaryRow[] | null
  note: string | null
}

interface SummaryRow {
  currency: string
  bought: string
  sold: string
  operations: number
  commissions: string
}

const countDto = (r: CountRow) => ({
  currency: r.currency,
  expected: toJson(r.expected),
  counted: toJson(r.counted),
  difference: toJson(r.difference),
  ...(r.denominations && { denominations: r.denominations.map((d) => ({ value: toJson(d.value), count: d.count })) }),
})
const summaryDto = (r: SummaryRow) => ({ currency: r.currency, bought: toJson(r.bought), sold: toJson(r.sold), operations: r.operations, commissions: toJson(r.commissions) })

/** Adjustments are the session's own bookings, not business: left out of its operations, summary and movements. */
const adjustmentsOf = (s: { opening_adjustment_operation_id: number | null; closing_adjustment_operation_id: number | null }) =>
  `{${[s.opening_adjustment_operation_id, s.closing_adjustment_operation_id].filter((id) => id !== null).join(',')}}`

/**
 * The session's summary (contract §20) from its movements: an operation counts when its last change in the session
 * left it completed by moving the balances (created completed, or approved), adjustments excluded. One row per
 * currency of the caja in account order: bought and sold from its exchanges, the operations moving that currency of
 * the caja, and the commission legs in the local currency.
 */
async function summaryOf(db: Executor, session: Pick<SessionRow, 'id' | 'caja_id' | 'opening_adjustment_operation_id' | 'closing_adjustment_operation_id'>, local: string): Promise<SummaryRow[]> {
  return rowsOf<SummaryRow>(
    await db.execute(sql`with last as (
        select distinct on (m.operation_id) m.operation_id, m.event, m.moved from till_movements m
        where m.session_id = ${session.id} order by m.operation_id, m.id desc
      ), done as (
        select l.operation_id from last l
        where ((l.event = 'created' and l.moved) or l.event = 'approved') and l.operation_id <> all (${adjustmentsOf(session)}::int[])
      ), legs as (
        select t.operation_id, a.currency_name as currency, t.amount, t.is_commission
        from done d join transactions t on t.operation_id = d.operation_id join accounts a on a.id = t.account_id
        where a.client_id = ${session.caja_id}
      ), deals as (
        select e.side, e.currency, e.amount from done d join exchanges e on e.operation_id = d.operation_id where e.caja_id = ${session.caja_id}
      ), cur as (
        select a.currency_name as currency, min(a.id) as first from accounts a where a.client_id = ${session.caja_id} group by a.currency_name
      )
      select cur.currency,
        trim_scale(coalesce((select sum(x.amount) from deals x where x.side = 'buy' and x.currency = cur.currency), 0))::text as bought,
        trim_scale(coalesce((select sum(x.amount) from deals x where x.side = 'sell' and x.currency = cur.currency), 0))::text as sold,
        (select count(distinct l.operation_id) from legs l where l.currency = cur.currency)::int as operations,
        trim_scale(case when cur.currency = ${local} then coalesce((select sum(l.amount) from legs l where l.currency = cur.currency and l.is_commission), 0) else 0 end)::text
          as commissions
      from cur order by cur.first`),
  )
}

/** Sessions as the API answers them; an open one's summary as of now. */
async function sessionDtos(db: Executor, companyId: number, rows: SessionRow[]): Promise<TillSessionDto[]> {
  const local = rows.some((r) => r.summary === null) ? await localCurrencyOf(db, companyId) : ''
  return Promise.all(
    rows.map(async (r) => ({
      id: r.id,
      caja_id: r.caja_id,
      caja_name: r.caja_name,
      status: r.status,
      opened_at: r.opened_at,
      opened_by: r.opened_by,
      opened_by_name: r.opened_by_name,
      opening: r.opening.map(countDto),
      opening_adjustment_operation_id: r.opening_adjustment_operation_id,
      closed_at: r.closed_at,
      closed_by: r.closed_by,
      closed_by_name: r.closed_by_name,
      closing: r.closing?.map(countDto) ?? null,
      closing_adjustment_operation_id: r.closing_adjustment_operation_id,
      summary: (r.summary ?? (await summaryOf(db, r, local))).map(summaryDto),
      note: r.note,
    })),
  )
}

const localCurrencyOf = async (db: Executor, companyId: number) =>
  rowsOf<{ local_currency: string }>(await db.execute(sql`select local_currency from companies where id = ${companyId}`))[0].local_currency

async function sessionRows(db: Executor, where: SQL, tail: SQL = sql``): Promise<SessionRow[]> {
  return rowsOf<SessionRow>(await db.execute(sql`select ${SESSION_COLUMNS} from ${SESSION_FROM} where ${where} ${tail}`))
}

/** One session of the caller's company (and client scope); 404 otherwise. */
async function sessionRow(db: Executor, caller: Caller, id: number): Promise<SessionRow> {
  const scope = clientScope(caller)
  const [row] = await sessionRows(db, sql`s.id = ${id} and s.company_id = ${caller.companyId}${scope ? sql` and s.caja_id = any(${`{${scope.join(',')}}`}::int[])` : sql``}`)
  if (!row) throw notFound('Till session')
  return row
}

export async function getTillSession(db: Executor, caller: Caller, id: number): Promise<TillSessionDto> {
  const [dto] = await sessionDtos(db, caller.companyId, [await sessionRow(db, caller, id)])
  return dto
}

/** The session as its GET answers it, announced to integrators (till_session.opened / closed). */
async function answered(tx: Tx, caller: Caller, id: number, type: 'till_session.opened' | 'till_session.closed', adjustment: number | null) {
  const session = await getTillSession(tx, caller, id)
  await announce(tx, { type, companyId: caller.companyId, object: { kind: 'till_session', id }, render: async () => session })
  return { ...session, adjustment_operation_id: adjustment }
}

/**
 * Opens the caja's till with a count per currency (contract §20): refused while open (409 TILL_OPEN); `expected` is
 * the balance at this moment, and any difference is booked at once in the new session.
 */
export async function openTill(tx: Tx, caller: Caller, cajaId: number, input: { counted: CountInput[] }) {
  const till = await lockTill(tx, caller, cajaId)
  if (till.open) throw conflict('TILL_OPEN', `The till of "${till.name}" is already open (session ${till.session_id}); close it first`)
  const facts = await companyFacts(tx, caller.companyId)
  const rows = countRows(input.counted, await balancesOf(tx, cajaId))
  const [{ id }] = rowsOf<{ id: number }>(
    await tx.execute(sql`insert into till_sessions (company_id, caja_id, status, opened_at, opened_by, opening)
      values (${caller.companyId}, ${cajaId}, 'open', clock_timestamp(), ${caller.employee?.id ?? null}, ${JSON.stringify(rows.map((r) => r.row))}::jsonb)
      returning id`),
  )
  // Open before the opening difference is booked, so the adjustment is a write of this session like any other.
  await tx.execute(sql`update till_states set session_id = ${id}, open = true, updated_at = now() where caja_id = ${cajaId}`)
  const adjustment = await bookDifferences(tx, caller, { ...till, session_id: id }, facts, rows, 'apertura')
  if (adjustment !== null) await tx.execute(sql`update till_sessions set opening_adjustment_operation_id = ${adjustment}, updated_at = now() where id = ${id}`)
  return answered(tx, caller, id, 'till_session.opened', adjustment)
}

/**
 * Closes the caja's open till with a count per currency (contract §20): refused when not open (409 TILL_NOT_OPEN); a
 * difference above the company's till_tolerance needs tills.supervise (403 with the differences in `details`); the
 * differences are booked, the summary frozen, and from its commit nothing moves the caja's accounts until it opens.
 */
export async function closeTill(tx: Tx, caller: Caller, cajaId: number, input: { counted: CountInput[]; note?: string | null }) {
  const till = await lockTill(tx, caller, cajaId)
  if (!till.open)
    throw conflict('TILL_NOT_OPEN', till.session_id === null ? `The till of "${till.name}" has never been opened` : `The till of "${till.name}" is already closed`)
  const sessionId = till.session_id!
  const facts = await companyFacts(tx, caller.companyId)
  const rows = countRows(input.counted, await balancesOf(tx, cajaId))
  const tolerance = new D(facts.till_tolerance)
  const over = rows.filter((r) => new D(r.row.difference).abs().gt(tolerance))
  if (over.length && !can(caller, 'tills.supervise'))
    throw new ApiError(
      403,
      'FORBIDDEN',
      `A difference above the company's till tolerance (${text(tolerance)}) needs tills.supervise to close`,
      rows.filter((r) => !new D(r.row.difference).isZero()).map((r) => ({ ...countDto(r.row), tolerance: toJson(text(tolerance)), over_tolerance: over.includes(r) })),
    )
  const adjustment = await bookDifferences(tx, caller, till, facts, rows, 'cierre')
  const [open] = await sessionRows(tx, sql`s.id = ${sessionId}`)
  const summary = await summaryOf(tx, { ...open, closing_adjustment_operation_id: adjustment }, facts.local_currency)
  await tx.execute(sql`update till_sessions set status = 'closed', closed_at = clock_timestamp(), closed_by = ${caller.employee?.id ?? null},
      closing = ${JSON.stringify(rows.map((r) => r.row))}::jsonb, closing_adjustment_operation_id = ${adjustment},
      summary = ${JSON.stringify(summary)}::jsonb, note = ${input.note?.trim() || null}, updated_at = now()
    where id = ${sessionId}`)
  await tx.execute(sql`update till_states set open = false, updated_at = now() where caja_id = ${cajaId}`)
  return answered(tx, caller, sessionId, 'till_session.closed', adjustment)
}

/** The caja's sessions, newest first; `from`/`to` on `opened_at`, dates in the company's zone. 404 for a caja not the caller's. */
export async function listTillSessions(db: Executor, caller: Caller, cajaId: number, q: { page?: number; pageSize?: number; from?: string; to?: string }) {
  const scope = clientScope(caller)
  const [caja] = rowsOf<{ id: number }>(
    await db.execute(sql`select c.id from clients c where c.id = ${cajaId} and c.company_id = ${caller.companyId} and c.type = 0 and c.deleted_at is null`),
  )
  if (!caja || (scope && !scope.includes(cajaId))) throw notFound('Caja')
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const conds: SQL[] = [sql`s.company_id = ${caller.companyId}`, sql`s.caja_id = ${cajaId}`]
  if (q.from) conds.push(sql`s.opened_at >= ${instant(caller.companyId, q.from)}`)
  if (q.to) conds.push(/^\d{4}-\d{2}-\d{2}$/.test(q.to) ? sql`s.opened_at < ${instant(caller.companyId, q.to, true)}` : sql`s.opened_at <= ${instant(caller.companyId, q.to)}`)
  const where = sql.join(conds, sql` and `)
  const [{ total }] = rowsOf<{ total: number }>(await db.execute(sql`select count(*)::int as total from till_sessions s where ${where}`))
  const rows = await sessionRows(db, where, sql`order by s.opened_at desc, s.id desc limit ${pageSize} offset ${(page - 1) * pageSize}`)
  return { data: await sessionDtos(db, caller.companyId, rows), pagination: pagination(page, pageSize, total) }
}

/** Every live caja of the company (of the caller's scope) with its accounts and its till: never opened, open or closed. */
export async function listCajas(db: Executor, caller: Caller): Promise<{ data: CajaDto[] }> {
  const scope = clientScope(caller)
  const cajas = rowsOf<{ id: number; name: string; session_id: number | null; open: boolean | null; accounts: { id: number; currency: string; balance: string }[] }>(
    await db.execute(sql`select c.id, c.name, s.session_id, s.open,
        coalesce((select json_agg(json_build_object('id', a.id, 'currency', a.currency_name, 'balance', a.balance::text) order by a.id)
                  from accounts a where a.client_id = c.id), '[]') as accounts
      from clients c left join till_states s on s.caja_id = c.id
      where c.company_id = ${caller.companyId} and c.type = 0 and c.deleted_at is null
        ${scope ? sql`and c.id = any(${`{${scope.join(',')}}`}::int[])` : sql``}
      order by c.name collate "C", c.id`),
  )
  const ids = cajas.map((c) => c.session_id).filter((id): id is number => id !== null)
  const sessions = ids.length ? await sessionDtos(db, caller.companyId, await sessionRows(db, sql`s.id = any(${`{${ids.join(',')}}`}::int[])`)) : []
  return {
    data: cajas.map((c) => ({
      id: c.id,
      name: c.name,
      accounts: c.accounts.map((a) => ({ id: a.id, currency: a.currency, balance: toJson(a.balance) })),
      till: c.session_id === null ? 'never_opened' : c.open ? 'open' : 'closed',
      session: sessions.find((s) => s.id === c.session_id) ?? null,
    })),
  }
}

type Event = 'created' | 'approved' | 'reverted' | 'cancelled'

/** How a change moved the caja: into the balances (+1), out of them (−1), or not at all. */
const signOf = (event: Event, moved: boolean) => (!moved ? 0 : event === 'created' || event === 'approved' ? 1 : -1)
/** The operation's status as its last change in the session left it. */
const statusAfter = (event: Event, moved: boolean) =>
  event === 'created' ? (moved ? 'completed' : 'pending') : event === 'approved' ? 'completed' : event === 'reverted' ? 'pending' : 'cancelled'

/**
 * The day's report of one session (contract §20): opening, every operation the session saw move the caja with its
 * receipt number and what it moved, the summary, closing and differences. Of a closed session it is what the close
 * left, whatever happens to its operations later; of an open one, as of now.
 */
export async function tillReport(db: Executor, caller: Caller, id: number): Promise<TillReport> {
  const row = await sessionRow(db, caller, id)
  const [session] = await sessionDtos(db, caller.companyId, [row])
  const [company] = rowsOf<TillReport['company']>(
    await db.execute(sql`select name, legal_name, tax_id, address, license, local_currency, timezone from companies where id = ${caller.companyId}`),
  )
  const ops = rowsOf<{
    id: number
    at: string
    type: string
    description: string
    client_id: number | null
    client_name: string | null
    created_by: number | null
    created_by_name: string | null
    events: { event: Event; at: string; moved: boolean }[]
    point: number | null
    seq: number | null
    side: 'buy' | 'sell' | null
    currency: string | null
    amount: string | null
    rate: string | null
    local_amount: string | null
    commission: string | null
    rate_source: string | null
    ticket_id: number | null
    legs: { currency: string; amount: string }[]
  }>(
    await db.execute(sql`with mv as (
        select m.id, m.operation_id, m.event, m.moved, m.recorded_at from till_movements m
        where m.session_id = ${id} and m.operation_id <> all (${adjustmentsOf(row)}::int[])
      ), ops as (
        select mv.operation_id, min(mv.id) as first_id, min(mv.recorded_at) as first_at,
          json_agg(json_build_object('event', mv.event, 'at', ${isoSql(sql`mv.recorded_at`)}, 'moved', mv.moved) order by mv.id) as events
        from mv group by mv.operation_id
      )
      select o.id, ${isoSql(sql`ops.first_at`)} as at, ot.name as type, o.description, o.client_id, cl.name as client_name, o.created_by,
        e.name as created_by_name, ops.events, r.point, r.seq, x.side, x.currency, x.amount::text as amount, x.rate::text as rate,
        x.local_amount::text as local_amount, x.commission::text as commission, x.rate_source, x.ticket_id,
        coalesce((select json_agg(json_build_object('currency', a.currency_name, 'amount', t.amount::text) order by t.id)
                  from transactions t join accounts a on a.id = t.account_id where t.operation_id = o.id and a.client_id = ${row.caja_id}), '[]') as legs
      from ops join operations o on o.id = ops.operation_id join operation_types ot on ot.id = o.operation_type_id
      left join clients cl on cl.id = o.client_id left join employees e on e.id = o.created_by
      left join exchanges x on x.operation_id = o.id left join receipts r on r.operation_id = o.id
      order by ops.first_id`),
  )
  const currencies = row.opening.map((r) => r.currency)
  const net = new Map<string, Dec>()
  const operations = ops.map((o) => {
    const moved = new Map<string, Dec>()
    for (const ev of o.events) {
      const sign = signOf(ev.event, ev.moved)
      if (sign === 0) continue
      for (const leg of o.legs) moved.set(leg.currency, (moved.get(leg.currency) ?? new D(0)).plus(new D(leg.amount).times(sign)))
    }
    for (const [currency, amount] of moved) net.set(currency, (net.get(currency) ?? new D(0)).plus(amount))
    const last = o.events[o.events.length - 1]
    return {
      operation_id: o.id,
      receipt_number: o.point !== null && o.seq !== null ? receiptNumber(o.point, o.seq) : null,
      at: o.at,
      type: o.type,
      description: o.description,
      client: o.client_id !== null && o.client_name !== null ? { id: o.client_id, name: o.client_name } : null,
      created_by: o.created_by,
      created_by_name: o.created_by_name,
      events: o.events.map((e) => ({ event: e.event, at: e.at })),
      status: statusAfter(last.event, last.moved) as 'pending' | 'completed' | 'cancelled',
      exchange:
        o.side === null
          ? null
          : exchangeDetailDto({ side: o.side, currency: o.currency!, amount: o.amount!, rate: o.rate!, rateSource: o.rate_source!, localAmount: o.local_amount!, commission: o.commission!, ticketId: o.ticket_id }),
      movements: [...moved].filter(([, a]) => !a.isZero()).map(([currency, amount]) => ({ currency, amount: toJson(text(amount)) })),
    }
  })
  for (const c of session.closing ?? []) if (!currencies.includes(c.currency)) currencies.push(c.currency)
  for (const c of net.keys()) if (!currencies.includes(c)) currencies.push(c)
  const differences = [
    ...row.opening.filter((r) => !new D(r.difference).isZero()).map((r) => ({ moment: 'opening' as const, r, op: row.opening_adjustment_operation_id })),
    ...(row.closing ?? []).filter((r) => !new D(r.difference).isZero()).map((r) => ({ moment: 'closing' as const, r, op: row.closing_adjustment_operation_id })),
  ].map(({ moment, r, op }) => ({ moment, ...countDto(r), adjustment_operation_id: op! }))
  return {
    session,
    company,
    opening: session.opening,
    operations,
    summary: session.summary,
    movements: currencies.map((currency) => ({ currency, amount: toJson(text(net.get(currency) ?? new D(0))) })),
    closing: session.closing,
    differences: differences.map(({ denominations: _, ...d }) => d),
    generated_at: new Date().toISOString(),
  }
}
