import { and, asc, desc, eq, inArray, isNotNull, isNull, sql } from 'drizzle-orm'
import { accounts, clients, mesaAccounts, mesaLines, mesas, operations, transactions } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { fixedStatement } from '../../../db/statement'
import { clientScope, type Caller } from '../../access/caller'
import { ApiError, conflict, invalid, notFound, unprocessable } from '../../lib/errors'
import { announce } from '../../lib/events'
import { D, dec, toJson, toMoney, type Dec } from '../../lib/money'
import { iso } from '../../lib/models'
import { operationVisible } from '../../lib/scope'
import { computePosition, engineSide, type CostingMethod } from './costing'
import { matchKind, sameCurrency, suggestionJson, suggestTrade, type Leg, type MatchKind, type TradeSuggestion } from './inference'

export type Mesa = typeof mesas.$inferSelect
type LineRow = typeof mesaLines.$inferSelect

const FX_SCALE = 12
const RECENT_LINES = 10

export const mesaDto = (m: Mesa, accountIds: number[]) => ({
  id: m.id,
  company_id: m.companyId,
  name: m.name,
  local_currency: m.localCurrency,
  quote_currency: m.quoteCurrency,
  costing_method: m.costingMethod as CostingMethod,
  account_ids: accountIds,
  quote_direction: m.quoteDirection as 'quote' | 'local',
  blotter_feed_mode: m.blotterFeedMode as 'auto' | 'manual',
  include_pending_legs: m.includePendingLegs,
  created_by: m.createdBy,
  created_at: m.createdAt.toISOString(),
  updated_at: m.updatedAt.toISOString(),
  deleted_at: iso(m.deletedAt),
})

export const lineDto = (l: LineRow) => ({
  id: l.id,
  mesa_id: l.mesaId,
  operation_id: l.operationId,
  side: l.side as 'buy' | 'sell',
  local_amount: toJson(l.localAmount),
  quote_amount: toJson(l.quoteAmount),
  fx: toJson(l.fx),
  source: l.source as 'manual' | 'auto' | 'fabricated',
  match_kind: l.matchKind as MatchKind | null,
  traded_at: l.tradedAt.toISOString(),
  created_by: l.createdBy,
  created_at: l.createdAt.toISOString(),
})

async function liveAccountIds(db: Executor, mesaIds: number[]) {
  const byMesa = new Map<number, number[]>(mesaIds.map((id) => [id, []]))
  if (mesaIds.length === 0) return byMesa
  const rows = await db
    .select({ mesaId: mesaAccounts.mesaId, accountId: mesaAccounts.accountId })
    .from(mesaAccounts)
    .where(and(inArray(mesaAccounts.mesaId, mesaIds), isNull(mesaAccounts.releasedAt)))
    .orderBy(mesaAccounts.accountId)
  for (const r of rows) byMesa.get(r.mesaId)!.push(r.accountId)
  return byMesa
}

export async function getMesa(db: Executor, caller: Caller, id: number, forUpdate = false) {
  const q = db
    .select()
    .from(mesas)
    .where(and(eq(mesas.id, id), eq(mesas.companyId, caller.companyId), isNull(mesas.deletedAt)))
  const [row] = forUpdate ? await q.for('update') : await q
  if (!row) throw notFound('Mesa')
  return row
}

export async function readMesa(db: Executor, caller: Caller, id: number) {
  const m = await getMesa(db, caller, id)
  return mesaDto(m, (await liveAccountIds(db, [m.id])).get(m.id)!)
}

export async function listMesas(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(mesas)
    .where(and(eq(mesas.companyId, caller.companyId), isNull(mesas.deletedAt)))
    .orderBy(mesas.id)
  const ids = await liveAccountIds(db, rows.map((m) => m.id))
  return rows.map((m) => mesaDto(m, ids.get(m.id)!))
}

export interface MesaInput {
  name: string
  local_currency: string
  quote_currency: string
  costing_method: CostingMethod
  account_ids: number[]
  quote_direction?: 'quote' | 'local'
  blotter_feed_mode?: 'auto' | 'manual'
  include_pending_legs?: boolean
}

/** Checks the accounts a mesa is to hold, in the order of the contract's codes; `mesaId` is the mesa keeping its own. */
async function checkAccounts(tx: Tx, companyId: number, ids: number[], local: string, quote: string, mesaId?: number) {
  const found = await tx
    .select({ id: accounts.id, currency: accounts.currencyName, type: clients.type })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(and(eq(accounts.companyId, companyId), inArray(accounts.id, ids), isNull(clients.deletedAt)))
  const byId = new Map(found.map((a) => [a.id, a]))
  const unknown = ids.filter((id) => !byId.has(id))
  if (unknown.length)
    throw unprocessable('UNKNOWN_ACCOUNT', 'Unknown account in account_ids', unknown.map((id) => ({ field: 'account_ids', message: `unknown account ${id}` })))
  const external = ids.filter((id) => byId.get(id)!.type !== 0)
  if (external.length)
    throw unprocessable('ACCOUNT_NOT_INTERNAL', 'A mesa holds only accounts of internal (type 0) clients', external.map((id) => ({ field: 'account_ids', message: `account ${id} is not internal` })))
  const mismatched = ids.filter((id) => {
    const c = byId.get(id)!.currency
    return !sameCurrency(c, local) && !sameCurrency(c, quote)
  })
  if (mismatched.length)
    throw unprocessable('ACCOUNT_CURRENCY_MISMATCH', "An account's currency is neither the local nor the quote currency", mismatched.map((id) => ({ field: 'account_ids', message: `account ${id} is in ${byId.get(id)!.currency}` })))
  const taken = await tx
    .select({ accountId: mesaAccounts.accountId, mesaId: mesaAccounts.mesaId })
    .from(mesaAccounts)
    .where(and(inArray(mesaAccounts.accountId, ids), isNull(mesaAccounts.releasedAt)))
  const others = taken.filter((r) => r.mesaId !== mesaId)
  if (others.length) throw inOtherMesa(others.map((r) => r.accountId))
}

const inOtherMesa = (ids?: number[]) =>
  new ApiError(409, 'ACCOUNT_IN_OTHER_MESA', 'An account already belongs to another live mesa', ids?.map((id) => ({ field: 'account_ids', message: `account ${id} is in another mesa` })))

function isLiveAccountViolation(e: unknown): boolean {
  for (let cur: any = e; cur; cur = cur.cause) {
    if (cur.code === '23505' && String(cur.constraint_name ?? cur.constraint ?? cur.message ?? '').includes('mesa_accounts_live_account')) return true
  }
  return false
}

/** The unique index is the real guard: a concurrent create that passed the check above still fails here, as a 409. */
async function attachAccounts(tx: Tx, companyId: number, mesaId: number, ids: number[]) {
  if (ids.length === 0) return
  try {
    await tx.insert(mesaAccounts).values(ids.map((accountId) => ({ companyId, mesaId, accountId })))
  } catch (e) {
    if (isLiveAccountViolation(e)) throw inOtherMesa()
    throw e
  }
}

export async function createMesa(tx: Tx, caller: Caller, input: MesaInput) {
  if (sameCurrency(input.local_currency, input.quote_currency))
    throw unprocessable('CURRENCIES_MUST_DIFFER', 'local_currency and quote_currency must differ', [{ field: 'quote_currency', message: 'equals local_currency' }])
  await checkAccounts(tx, caller.companyId, input.account_ids, input.local_currency, input.quote_currency)
  const [m] = await tx
    .insert(mesas)
    .values({
      companyId: caller.companyId,
      name: input.name,
      localCurrency: input.local_currency.trim(),
      quoteCurrency: input.quote_currency.trim(),
      costingMethod: input.costing_method,
      quoteDirection: input.quote_direction ?? 'quote',
      blotterFeedMode: input.blotter_feed_mode ?? 'manual',
      includePendingLegs: input.include_pending_legs ?? false,
      createdBy: caller.employee?.id ?? null,
    })
    .returning()
  await attachAccounts(tx, caller.companyId, m.id, input.account_ids)
  if (m.blotterFeedMode === 'auto') await feedMesa(tx, m)
  return mesaDto(m, [...input.account_ids].sort((a, b) => a - b))
}

export async function updateMesa(tx: Tx, caller: Caller, id: number, input: Partial<MesaInput>) {
  const before = await getMesa(tx, caller, id, true)
  const local = input.local_currency?.trim() ?? before.localCurrency
  const quote = input.quote_currency?.trim() ?? before.quoteCurrency
  const currenciesChange = !sameCurrency(local, before.localCurrency) || !sameCurrency(quote, before.quoteCurrency)
  if (currenciesChange) {
    if (sameCurrency(local, quote))
      throw unprocessable('CURRENCIES_MUST_DIFFER', 'local_currency and quote_currency must differ', [{ field: 'quote_currency', message: 'equals local_currency' }])
    // Existing lines are amounts in the old currencies; re-labelling them would falsify the position.
    const [line] = await tx.select({ id: mesaLines.id }).from(mesaLines).where(eq(mesaLines.mesaId, id)).limit(1)
    if (line) throw conflict('CONFLICT', 'Currencies of a mesa with blotter lines cannot change')
  }
  const current = (await liveAccountIds(tx, [id])).get(id)!
  const wanted = input.account_ids ?? current
  if (input.account_ids || currenciesChange) await checkAccounts(tx, caller.companyId, wanted, local, quote, id)
  if (input.account_ids) {
    const dropped = current.filter((a) => !wanted.includes(a))
    if (dropped.length)
      await tx
        .update(mesaAccounts)
        .set({ releasedAt: new Date() })
        .where(and(eq(mesaAccounts.mesaId, id), inArray(mesaAccounts.accountId, dropped), isNull(mesaAccounts.releasedAt)))
    await attachAccounts(tx, caller.companyId, id, wanted.filter((a) => !current.includes(a)))
  }
  const [m] = await tx
    .update(mesas)
    .set({
      ...(input.name !== undefined && { name: input.name }),
      ...(currenciesChange && { localCurrency: local, quoteCurrency: quote }),
      ...(input.costing_method !== undefined && { costingMethod: input.costing_method }),
      ...(input.quote_direction !== undefined && { quoteDirection: input.quote_direction }),
      ...(input.blotter_feed_mode !== undefined && { blotterFeedMode: input.blotter_feed_mode }),
      ...(input.include_pending_legs !== undefined && { includePendingLegs: input.include_pending_legs }),
      updatedAt: new Date(),
    })
    .where(eq(mesas.id, id))
    .returning()
  // Turning the feed on (or changing what counts) applies it to what is already there, as if it had always been on.
  if (m.blotterFeedMode === 'auto' && (input.blotter_feed_mode === 'auto' || input.include_pending_legs !== undefined || input.account_ids)) await feedMesa(tx, m)
  return mesaDto(m, (await liveAccountIds(tx, [id])).get(id)!)
}

export async function deleteMesa(tx: Tx, caller: Caller, id: number) {
  await getMesa(tx, caller, id, true)
  const now = new Date()
  await tx.update(mesaAccounts).set({ releasedAt: now }).where(and(eq(mesaAccounts.mesaId, id), isNull(mesaAccounts.releasedAt)))
  await tx.update(mesas).set({ deletedAt: now, updatedAt: now }).where(eq(mesas.id, id))
  return { deleted: true as const }
}

// ---- legs, inference, suggestions ----

const countingStatuses = (m: Mesa) => (m.includePendingLegs ? ['completed', 'pending'] : ['completed'])

/**
 * The operation's transactions are read first, by operation id, and only then matched against the mesa's accounts:
 * written as a join, the planner may start from the mesa's accounts and walk every transaction of each account (it
 * did, once the statistics no longer knew how many a desk's account holds), on every approval of a desk's operation.
 */
const COUNTING_LEGS = fixedStatement<{ operation: number; mesa: number; pending: boolean }>(
  (p) => sql`with legs as materialized (
      select id, account_id, currency, amount, status from transactions
      where operation_id = ${p.operation}::int and not is_commission and (status = 'completed' or (${p.pending}::boolean and status = 'pending'))
    )
    select id, account_id as "accountId", currency, amount::text as amount, status from legs
    where exists (select from mesa_accounts ma where ma.account_id = legs.account_id and ma.mesa_id = ${p.mesa}::int and ma.released_at is null)
    order by id`,
)

/** The operation's non-commission transactions on the mesa's live accounts whose status counts. */
async function countingLegs(db: Executor, m: Mesa, operationId: number): Promise<Leg[]> {
  return rowsOf<Leg>(await COUNTING_LEGS(db, { operation: operationId, mesa: m.id, pending: m.includePendingLegs }))
}

const legJson = (l: Leg) => ({ id: l.id, account_id: l.accountId, currency: l.currency, amount: toJson(l.amount), status: l.status })

async function visibleOperation(db: Executor, caller: Caller, operationId: number) {
  const [op] = await db
    .select({ id: operations.id, date: operations.date })
    .from(operations)
    .where(and(eq(operations.id, operationId), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
  if (!op) throw notFound('Operation')
  return op
}

async function recentAverageFx(db: Executor, mesaId: number): Promise<Dec | null> {
  const rows = await db
    .select({ fx: mesaLines.fx })
    .from(mesaLines)
    .where(eq(mesaLines.mesaId, mesaId))
    .orderBy(desc(mesaLines.tradedAt), desc(mesaLines.id))
    .limit(RECENT_LINES)
  if (rows.length === 0) return null
  return rows.reduce((s, r) => s.plus(r.fx), new D(0)).dividedBy(rows.length)
}

const noTradeLegs = () =>
  unprocessable('NO_TRADE_LEGS', 'The operation has no counting leg in one of the mesa currencies on its accounts')

export async function infer(db: Executor, caller: Caller, mesaId: number, operationId: number | undefined) {
  if (operationId === undefined) throw invalid('operation_id is required', [{ field: 'operation_id', message: 'required' }])
  const m = await getMesa(db, caller, mesaId)
  await visibleOperation(db, caller, operationId)
  const legs = await countingLegs(db, m, operationId)
  const s = suggestTrade(m, legs)
  if (!s) throw noTradeLegs()
  return { operationId, suggestion: suggestionJson(s), legs: legs.map(legJson) }
}

export async function suggestions(db: Executor, caller: Caller, mesaId: number) {
  const m = await getMesa(db, caller, mesaId)
  const rows = await db
    .select({ operationId: transactions.operationId, id: transactions.id, accountId: transactions.accountId, currency: transactions.currency, amount: transactions.amount, status: transactions.status })
    .from(transactions)
    .innerJoin(mesaAccounts, and(eq(mesaAccounts.accountId, transactions.accountId), eq(mesaAccounts.mesaId, m.id), isNull(mesaAccounts.releasedAt)))
    .innerJoin(operations, eq(operations.id, transactions.operationId))
    .where(
      and(
        eq(transactions.companyId, caller.companyId),
        eq(transactions.isCommission, false),
        inArray(transactions.status, countingStatuses(m)),
        sql`not exists (select 1 from mesa_lines l where l.mesa_id = ${m.id} and l.operation_id = ${transactions.operationId})`,
        operationVisible(caller, transactions.operationId),
      ),
    )
    .orderBy(asc(operations.date), asc(operations.id), asc(transactions.id))
  const byOperation = new Map<number, Leg[]>()
  for (const r of rows) {
    const legs = byOperation.get(r.operationId) ?? []
    legs.push(r)
    byOperation.set(r.operationId, legs)
  }
  const avg = await recentAverageFx(db, m.id)
  const data = []
  for (const [operationId, legs] of byOperation) {
    const s = suggestTrade(m, legs)
    if (s) data.push({ operation_id: operationId, match_kind: matchKind(s, avg), suggestion: suggestionJson(s) })
  }
  return data
}

// ---- blotter lines ----

/** A client-scoped employee sees the lines of operations it can see; fabricated lines have no client and stay hidden. */
const linesVisible = (caller: Caller) =>
  clientScope(caller) ? and(isNotNull(mesaLines.operationId), operationVisible(caller, mesaLines.operationId)) : undefined

export async function listLines(db: Executor, caller: Caller, mesaId: number) {
  await getMesa(db, caller, mesaId)
  const rows = await db
    .select()
    .from(mesaLines)
    .where(and(eq(mesaLines.mesaId, mesaId), linesVisible(caller)))
    .orderBy(asc(mesaLines.tradedAt), asc(mesaLines.id))
  return rows.map(lineDto)
}

function lineValues(m: Mesa, s: TradeSuggestion) {
  return {
    companyId: m.companyId,
    mesaId: m.id,
    side: s.side,
    localAmount: toMoney(s.localAmount),
    quoteAmount: toMoney(s.quoteAmount),
    fx: s.fx.toDecimalPlaces(FX_SCALE).toFixed(FX_SCALE),
  }
}

export type LineInput =
  | { operation_id: number }
  | { side: 'buy' | 'sell'; local_amount: number | string; quote_amount: number | string; traded_at?: string }

export async function createLine(tx: Tx, caller: Caller, mesaId: number, input: LineInput, now: Date) {
  const m = await getMesa(tx, caller, mesaId, true)
  if ('operation_id' in input) {
    const op = await visibleOperation(tx, caller, input.operation_id)
    const s = suggestTrade(m, await countingLegs(tx, m, op.id))
    if (!s) throw noTradeLegs()
    const kind = matchKind(s, await recentAverageFx(tx, m.id))
    const [row] = await tx
      .insert(mesaLines)
      .values({ ...lineValues(m, s), operationId: op.id, source: 'manual', matchKind: kind, tradedAt: op.date, createdBy: caller.employee?.id ?? null })
      .onConflictDoNothing()
      .returning()
    if (!row) throw conflict('CONFLICT', 'This operation already has a line on this mesa')
    return announceLine(tx, 'mesa_line.created', row)
  }
  const local = dec(input.local_amount)
  const quote = dec(input.quote_amount)
  const bad = [
    ...(local.gt(0) ? [] : [{ field: 'local_amount', message: 'must be greater than 0' }]),
    ...(quote.gt(0) ? [] : [{ field: 'quote_amount', message: 'must be greater than 0' }]),
  ]
  if (bad.length) throw invalid('Amounts must be positive', bad)
  const localStored = toMoney(local)
  const quoteStored = toMoney(quote)
  if (!dec(quoteStored).gt(0) || !dec(localStored).gt(0)) throw invalid('Amounts below 0.000001 round to zero', [{ field: 'quote_amount', message: 'too small' }])
  const [row] = await tx
    .insert(mesaLines)
    .values({
      companyId: m.companyId,
      mesaId: m.id,
      side: input.side,
      localAmount: localStored,
      quoteAmount: quoteStored,
      fx: dec(localStored).dividedBy(quoteStored).toDecimalPlaces(FX_SCALE).toFixed(FX_SCALE),
      source: 'fabricated',
      matchKind: null,
      tradedAt: input.traded_at ? new Date(input.traded_at) : now,
      createdBy: caller.employee?.id ?? null,
    })
    .returning()
  return announceLine(tx, 'mesa_line.created', row)
}

/** Lines made or removed by hand or by the auto feed are told alike; a deleted line is told as it last was. */
async function announceLine(tx: Tx, type: 'mesa_line.created' | 'mesa_line.deleted', row: LineRow) {
  const dto = lineDto(row)
  await announce(tx, { type, companyId: row.companyId, object: { kind: 'mesa_line', id: row.id }, render: async () => dto })
  return dto
}

export async function deleteLine(tx: Tx, caller: Caller, mesaId: number, lineId: number) {
  await getMesa(tx, caller, mesaId)
  const [row] = await tx
    .delete(mesaLines)
    .where(and(eq(mesaLines.id, lineId), eq(mesaLines.mesaId, mesaId), eq(mesaLines.companyId, caller.companyId), linesVisible(caller)))
    .returning()
  if (!row) throw notFound('Line')
  await announceLine(tx, 'mesa_line.deleted', row)
  return { deleted: true as const }
}

// ---- position ----

const num = (d: Dec) => toJson(d)

/** The blotter in costing order: by trade time, then by id for lines of the same instant. */
export async function mesaTrades(db: Executor, m: Mesa) {
  const rows = await db
    .select({ id: mesaLines.id, side: mesaLines.side, localAmount: mesaLines.localAmount, quoteAmount: mesaLines.quoteAmount, tradedAt: mesaLines.tradedAt })
    .from(mesaLines)
    .where(eq(mesaLines.mesaId, m.id))
    .orderBy(asc(mesaLines.tradedAt), asc(mesaLines.id))
  const direction = m.quoteDirection as 'quote' | 'local'
  return rows.map((r) => ({ ...r, side: engineSide(direction, r.side as 'buy' | 'sell') }))
}

export async function position(db: Executor, caller: Caller, mesaId: number) {
  const m = await getMesa(db, caller, mesaId)
  const p = computePosition(m.costingMethod as CostingMethod, await mesaTrades(db, m))
  return {
    costing_method: m.costingMethod as CostingMethod,
    quote_position: num(p.quotePosition),
    average_cost: p.averageCost ? num(p.averageCost) : null,
    realized_pnl: num(p.realizedPnl),
    lots: p.lots.map((l) => ({ line_id: l.lineId, quantity: num(l.quantity), price: num(l.price), cost: num(l.cost) })),
  }
}

// ---- the auto feed ----

/**
 * Brings one operation's auto line on one auto mesa in step: present while the legs count and match well
 * (exact or fx_close), absent otherwise. An existing line is kept as it is, so approving keeps the same line;
 * manual lines are the user's and are never removed here.
 */
export async function feedOperation(tx: Tx, m: Mesa, operationId: number) {
  const [existing] = await tx
    .select({ id: mesaLines.id, source: mesaLines.source })
    .from(mesaLines)
    .where(and(eq(mesaLines.mesaId, m.id), eq(mesaLines.operationId, operationId)))
  const s = suggestTrade(m, await countingLegs(tx, m, operationId))
  if (s) {
    if (existing) return
    const kind = matchKind(s, await recentAverageFx(tx, m.id))
    if (kind === 'partial') return
    const [op] = await tx.select({ date: operations.date }).from(operations).where(eq(operations.id, operationId))
    const [row] = await tx
      .insert(mesaLines)
      .values({ ...lineValues(m, s), operationId, source: 'auto', matchKind: kind, tradedAt: op.date, createdBy: null })
      .onConflictDoNothing()
      .returning()
    if (row) await announceLine(tx, 'mesa_line.created', row)
    return
  }
  if (existing?.source === 'auto') {
    const [row] = await tx.delete(mesaLines).where(eq(mesaLines.id, existing.id)).returning()
    await announceLine(tx, 'mesa_line.deleted', row)
  }
}

/** Applies the feed to every operation already on the mesa's accounts, oldest first so fx_close sees the lines before it. */
async function feedMesa(tx: Tx, m: Mesa) {
  const rows = await tx.execute(sql`
    select t.operation_id from transactions t
    join mesa_accounts ma on ma.account_id = t.account_id and ma.mesa_id = ${m.id} and ma.released_at is null
    join operations o on o.id = t.operation_id
    where t.company_id = ${m.companyId}
    group by t.operation_id, o.date
    order by o.date, t.operation_id`)
  const ids = rowsOf<{ operation_id: number }>(rows).map((r) => Number(r.operation_id))
  for (const id of ids) await feedOperation(tx, m, id)
}
