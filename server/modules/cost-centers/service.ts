import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm'
import { accounts, clients, costCenterBudgets, costCenters } from '../../../db/schema'
import type { Executor, Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { invalid, notFound, unprocessable } from '../../lib/errors'
import { announce } from '../../lib/events'
import { dec, toJson, toMoney } from '../../lib/money'
import { findAccount, findCostCenter, requireLiveClient } from '../../lib/references'
import type { CostCenterDto } from './model'

type CostCenterRow = typeof costCenters.$inferSelect
type BudgetRow = typeof costCenterBudgets.$inferSelect

const budgetDto = (b: Pick<BudgetRow, 'id' | 'costCenterId' | 'currency' | 'year' | 'period' | 'amount' | 'kind'>) => ({
  id: b.id,
  cost_center_id: b.costCenterId,
  currency: b.currency,
  year: b.year,
  period: b.period,
  amount: toJson(b.amount),
  kind: b.kind as 'expense' | 'income',
})

const costCenterDto = (c: CostCenterRow, budgets: BudgetRow[]): CostCenterDto => ({
  id: c.id,
  company_id: c.companyId,
  client_id: c.clientId,
  name: c.name,
  default_currency: c.defaultCurrency,
  default_internal_account_id: c.defaultInternalAccountId,
  net_balance_by_default: c.netBalanceByDefault,
  created_at: c.createdAt.toISOString(),
  updated_at: c.updatedAt.toISOString(),
  budgets: budgets.map(budgetDto),
})

/**
 * The caja a cost center falls back to: its own client's account in the currency when that client is a
 * caja, else the oldest caja account of the company in the currency.
 */
async function defaultCaja(tx: Tx, companyId: number, clientId: number, currency: string) {
  const [row] = await tx
    .select({ id: accounts.id })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(
      and(
        eq(accounts.companyId, companyId),
        eq(accounts.currencyName, currency),
        eq(clients.type, 0),
        isNull(clients.deletedAt),
      ),
    )
    .orderBy(sql`(${clients.id} = ${clientId}) desc`, asc(accounts.id))
    .limit(1)
  return row?.id ?? null
}

export async function createCostCenter(
  tx: Tx,
  caller: Caller,
  input: {
    name: string
    client_id: number
    default_currency: string
    default_internal_account_id?: number | null
    net_balance_by_default?: boolean
  },
) {
  const companyId = caller.companyId
  await requireLiveClient(tx, companyId, input.client_id)

  let caja: number | null
  if (input.default_internal_account_id != null) {
    const account = await findAccount(tx, companyId, input.default_internal_account_id)
    if (!account)
      throw unprocessable('UNKNOWN_ACCOUNT', 'Unknown account', [
        { field: 'default_internal_account_id', message: `unknown account ${input.default_internal_account_id}` },
      ])
    if (account.clientType !== 0)
      throw unprocessable('ACCOUNT_NOT_INTERNAL', 'The default account must belong to an internal (type 0) client', [
        { field: 'default_internal_account_id', message: `account ${account.id} is not of a caja` },
      ])
    caja = account.id
  } else {
    caja = await defaultCaja(tx, companyId, input.client_id, input.default_currency)
  }

  const [row] = await tx
    .insert(costCenters)
    .values({
      companyId,
      clientId: input.client_id,
      name: input.name,
      defaultCurrency: input.default_currency,
      defaultInternalAccountId: caja,
      netBalanceByDefault: input.net_balance_by_default ?? false,
    })
    .returning()
  const dto = costCenterDto(row, [])
  await announce(tx, { type: 'cost_center.created', companyId, object: { kind: 'cost_center', id: row.id }, render: async () => dto })
  return dto
}

/**
 * One budget per (cost center, currency, year, period, kind): a second post of the same slot updates it.
 * A single INSERT … ON CONFLICT decides atomically; `xmax = 0` is true only for a freshly inserted row.
 */
export async function upsertBudget(
  tx: Tx,
  caller: Caller,
  costCenterId: number,
  input: { currency: string; year: number; period: number; amount: number | string; kind: 'expense' | 'income' },
) {
  const cc = await findCostCenter(tx, caller.companyId, costCenterId)
  if (!cc) throw notFound('Cost center')
  if (dec(input.amount).isNegative())
    throw invalid('Invalid budget amount', [{ field: 'amount', message: 'must not be negative' }])
  const amount = toMoney(input.amount)
  const [row] = await tx
    .insert(costCenterBudgets)
    .values({
      companyId: caller.companyId,
      costCenterId,
      currency: input.currency,
      year: input.year,
      period: input.period,
      amount,
      kind: input.kind,
    })
    .onConflictDoUpdate({
      target: [costCenterBudgets.costCenterId, costCenterBudgets.currency, costCenterBudgets.year, costCenterBudgets.period, costCenterBudgets.kind],
      set: { amount, updatedAt: sql`now()` },
    })
    .returning({
      id: costCenterBudgets.id,
      costCenterId: costCenterBudgets.costCenterId,
      currency: costCenterBudgets.currency,
      year: costCenterBudgets.year,
      period: costCenterBudgets.period,
      amount: costCenterBudgets.amount,
      kind: costCenterBudgets.kind,
      inserted: sql<boolean>`(xmax = 0)`,
    })
  // A budget is part of its cost center's record: the center as listed, budgets included, is what changed.
  await announce(tx, {
    type: 'cost_center.updated',
    companyId: caller.companyId,
    object: { kind: 'cost_center', id: costCenterId },
    render: async () => (await centers(tx, caller.companyId, costCenterId))[0],
  })
  return { created: Boolean(row.inserted), budget: budgetDto(row) }
}

export const listCostCenters = (db: Executor, caller: Caller) => centers(db, caller.companyId)

/** The company's cost centers with their budgets, or just the one given. */
async function centers(db: Executor, companyId: number, only?: number) {
  const rows = await db
    .select()
    .from(costCenters)
    .where(and(eq(costCenters.companyId, companyId), only === undefined ? undefined : eq(costCenters.id, only)))
    .orderBy(asc(costCenters.id))
  if (rows.length === 0) return []
  const budgets = await db
    .select()
    .from(costCenterBudgets)
    .where(inArray(costCenterBudgets.costCenterId, rows.map((r) => r.id)))
    .orderBy(asc(costCenterBudgets.year), asc(costCenterBudgets.period), asc(costCenterBudgets.currency), asc(costCenterBudgets.kind))
  const byCenter = new Map<number, BudgetRow[]>()
  for (const b of budgets) {
    const list = byCenter.get(b.costCenterId)
    if (list) list.push(b)
    else byCenter.set(b.costCenterId, [b])
  }
  return rows.map((r) => costCenterDto(r, byCenter.get(r.id) ?? []))
}
