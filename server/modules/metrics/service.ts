import { eq, sql } from 'drizzle-orm'
import { companies } from '../../../db/schema'
import type { Database, Executor, Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { D, toJson, type Dec } from '../../lib/money'
import { isoSql, localDate } from '../../lib/time'
import { computePosition } from '../mesas/costing'
import { liveBlotters } from '../mesas/public'

const num = toJson

export interface Period {
  /** inclusive start and exclusive end, ISO UTC */
  start: string
  end: string
}

/**
 * The local day and local month of `date` as UTC instants. Postgres converts local midnights with the zone's
 * own rules, so days around a DST change are the 23 or 25 hours they really last.
 */
export async function localPeriods(database: Database, db: Executor, date: string, timezone: string) {
  const month = `${date.slice(0, 7)}-01`
  const [row] = await database.rows<{ day_start: string; day_end: string; month_start: string; month_end: string }>(
    sql`select ${isoSql(sql`(${date}::date)::timestamp at time zone ${timezone}`)} as day_start,
      ${isoSql(sql`(${date}::date + 1)::timestamp at time zone ${timezone}`)} as day_end,
      ${isoSql(sql`(${month}::date)::timestamp at time zone ${timezone}`)} as month_start,
      ${isoSql(sql`(${month}::date + interval '1 month') at time zone ${timezone}`)} as month_end`,
    db,
  )
  return { day: { start: row.day_start, end: row.day_end }, month: { start: row.month_start, end: row.month_end } }
}

/**
 * Realized P&L of each live mesa over the day: the costing engine replays the whole blotter in costing order
 * (earlier lines build the lots today's lines close), and only the realized amounts of lines traded today are
 * summed, so the figure is exactly how much the position's realized P&L moved during the day.
 */
async function dayPnl(db: Executor, companyId: number, day: Period) {
  const start = new Date(day.start).getTime()
  const end = new Date(day.end).getTime()
  const out = []
  for (const mesa of await liveBlotters(db, companyId)) {
    const { realizedByLine } = computePosition(mesa.costingMethod, mesa.trades)
    let realized: Dec = new D(0)
    mesa.trades.forEach((trade, i) => {
      const at = trade.tradedAt.getTime()
      if (at >= start && at < end) realized = realized.plus(realizedByLine[i])
    })
    out.push({ mesa_id: mesa.mesaId, currency: mesa.localCurrency, realized: num(realized) })
  }
  return out
}

async function commissions(database: Database, db: Executor, companyId: number, day: Period) {
  const rows = await database.rows<{ currency: string; amount: string }>(
    sql`select currency, sum(amount)::text as amount from transactions
      where company_id = ${companyId} and status = 'completed' and is_commission
        and completed_at >= ${day.start}::timestamptz and completed_at < ${day.end}::timestamptz
      group by currency order by currency`,
    db,
  )
  return rows.map((r) => ({ currency: r.currency, amount: num(r.amount) }))
}

/**
 * Budget against spending per cost center and currency for the month: every currency with an `expense`
 * budget this month or with spending this month, and always the cost center's default currency.
 *
 * An operation's expense is what left the company: the net outflow of its cajas (type 0 accounts) when it moves
 * any, else (an expense advanced by an external payer, which debits no caja) the net credit to the external
 * accounts. So the budget tool's four shapes read right (internal or external, expense or income counts 0), a
 * payment from a caja to a supplier counts once, and a transfer between cajas counts nothing.
 */
async function costCenters(database: Database, db: Executor, companyId: number, date: string, month: Period) {
  const year = Number(date.slice(0, 4))
  const period = Number(date.slice(5, 7))
  const rows = await database.rows<{ cost_center_id: number; name: string; currency: string; budget: string; spent: string }>(
    sql`with budget as (
        select cost_center_id, currency, amount from cost_center_budgets
        where company_id = ${companyId} and kind = 'expense' and year = ${year} and period = ${period}
      ), per_operation as (
        select o.cost_center_id, t.currency,
          case when bool_or(c.type = 0) then -sum(t.amount) filter (where c.type = 0) else sum(t.amount) end as amount
        from transactions t join operations o on o.id = t.operation_id
        join accounts a on a.id = t.account_id join clients c on c.id = a.client_id
        where t.company_id = ${companyId} and o.cost_center_id is not null and t.status = 'completed'
          and t.completed_at >= ${month.start}::timestamptz and t.completed_at < ${month.end}::timestamptz
        group by o.id, o.cost_center_id, t.currency
      ), spent as (
        select cost_center_id, currency, sum(amount) as amount from per_operation
        where amount > 0
        group by cost_center_id, currency
      ), slot as (
        select id as cost_center_id, default_currency as currency from cost_centers where company_id = ${companyId}
        union select cost_center_id, currency from budget
        union select cost_center_id, currency from spent
      )
      select cc.id as cost_center_id, cc.name, s.currency,
        coalesce(b.amount, 0)::text as budget, coalesce(x.amount, 0)::text as spent
      from slot s join cost_centers cc on cc.id = s.cost_center_id
      left join budget b on b.cost_center_id = s.cost_center_id and b.currency = s.currency
      left join spent x on x.cost_center_id = s.cost_center_id and x.currency = s.currency
      order by cc.id, s.currency`,
    db,
  )
  return rows.map((r) => ({ cost_center_id: Number(r.cost_center_id), name: r.name, currency: r.currency, budget: num(r.budget), spent: num(r.spent) }))
}

/** Today's cards, read in one snapshot (the route's repeatable-read transaction) so the figures agree with each other. */
export async function homeMetrics(database: Database, tx: Tx, caller: Caller, now: Date) {
  const [company] = await tx
    .select({ timezone: companies.timezone, mesasEnabled: companies.mesasEnabled })
    .from(companies)
    .where(eq(companies.id, caller.companyId))
  const date = localDate(now, company.timezone)
  const { day, month } = await localPeriods(database, tx, date, company.timezone)
  return {
    date,
    dayPnl: company.mesasEnabled ? await dayPnl(tx, caller.companyId, day) : [],
    commissions: await commissions(database, tx, caller.companyId, day),
    costCenters: await costCenters(database, tx, caller.companyId, date, month),
  }
}
