import { and, asc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm'
import { accounts, clients, operations, operationTypes, transactions, transactionTypes } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../plugins/database'
import { clientScope, type Caller } from '../../plugins/auth'
import { ApiError, conflict, forbidden, invalid, notFound, unprocessable } from '../../lib/errors'
import { iso } from '../../lib/models'
import { dec, isFiniteDecimal, toJson, toMoney } from '../../lib/money'
import { operationVisible } from '../../lib/scope'
import { syncMesaLines } from '../mesas/feed'
import type { CreateOperationInput, OperationDto } from './model'

export type { CreateOperationInput, OperationDto } from './model'

type OperationRow = typeof operations.$inferSelect
type TransactionRow = typeof transactions.$inferSelect
type OperationStatus = OperationDto['status']

/** Amounts beyond 22 integer digits do not fit the numeric(28,6) columns. */
const MAX_ABS_AMOUNT = dec('1e22')

// ---------------------------------------------------------------------------------------------- types

export async function listOperationTypes(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(operationTypes)
    .where(eq(operationTypes.companyId, caller.companyId))
    .orderBy(asc(operationTypes.id))
  return rows.map(operationTypeDto)
}

export async function createOperationType(tx: Tx, caller: Caller, input: { name: string; kind: string }) {
  const [row] = await tx
    .insert(operationTypes)
    .values({ companyId: caller.companyId, name: input.name, kind: input.kind })
    .returning()
  return operationTypeDto(row)
}

const operationTypeDto = (r: typeof operationTypes.$inferSelect) => ({
  id: r.id,
  company_id: r.companyId,
  name: r.name,
  kind: r.kind as 'up_down' | 'other' | 'exchange' | 'budget',
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
})

export async function listTransactionTypes(db: Executor, caller: Caller) {
  const rows = await db
    .select()
    .from(transactionTypes)
    .where(eq(transactionTypes.companyId, caller.companyId))
    .orderBy(asc(transactionTypes.id))
  return rows.map(transactionTypeDto)
}

export async function createTransactionType(tx: Tx, caller: Caller, input: { name: string; is_commission?: boolean }) {
  const [row] = await tx
    .insert(transactionTypes)
    .values({ companyId: caller.companyId, name: input.name, isCommission: input.is_commission ?? false })
    .returning()
  return transactionTypeDto(row)
}

const transactionTypeDto = (r: typeof transactionTypes.$inferSelect) => ({
  id: r.id,
  company_id: r.companyId,
  name: r.name,
  is_commission: r.isCommission,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
})

// ----------------------------------------------------------------------------------------- read side

const transactionDto = (r: TransactionRow) => ({
  id: r.id,
  operation_id: r.operationId,
  account_id: r.accountId,
  currency: r.currency,
  amount: toJson(r.amount),
  status: r.status as 'pending' | 'completed' | 'cancelled',
  transaction_type_id: r.transactionTypeId,
  is_commission: r.isCommission,
  description: r.description,
  created_at: r.createdAt.toISOString(),
  updated_at: r.updatedAt.toISOString(),
})

function operationDto(op: OperationRow, txs: TransactionRow[], attachments: unknown[]): OperationDto {
  return {
    id: op.id,
    company_id: op.companyId,
    operation_type_id: op.operationTypeId,
    client_id: op.clientId,
    cost_center_id: op.costCenterId,
    description: op.description,
    date: iso(op.date)!,
    status: op.status as OperationStatus,
    created_by: op.createdBy,
    created_at: op.createdAt.toISOString(),
    updated_at: op.updatedAt.toISOString(),
    transactions: txs.map(transactionDto),
    attachments: attachments as OperationDto['attachments'],
  }
}

/** Full records of already-authorised operation rows, transactions in creation order. */
async function hydrate(db: Executor, rows: OperationRow[]): Promise<OperationDto[]> {
  if (rows.length === 0) return []
  const txs = await db
    .select()
    .from(transactions)
    .where(inArray(transactions.operationId, rows.map((r) => r.id)))
    .orderBy(asc(transactions.id))
  const byOp = new Map<number, TransactionRow[]>()
  for (const t of txs) {
    const list = byOp.get(t.operationId)
    if (list) list.push(t)
    else byOp.set(t.operationId, [t])
  }
  return rows.map((r) => operationDto(r, byOp.get(r.id) ?? [], []))
}

async function visibleRow(db: Executor, caller: Caller, id: number): Promise<OperationRow> {
  const [row] = await db
    .select()
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
  if (!row) throw notFound('Operation')
  return row
}

export async function getOperation(db: Executor, caller: Caller, id: number): Promise<OperationDto> {
  const [dto] = await hydrate(db, [await visibleRow(db, caller, id)])
  return dto
}

/** 404 unless the operation exists in the caller's company and inside the caller's client scope. */
export async function assertOperationVisible(db: Executor, caller: Caller, id: number): Promise<void> {
  const [row] = await db
    .select({ id: operations.id })
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
  if (!row) throw notFound('Operation')
}

/** A date-time as given, or a date-only value as that day's midnight in the company's time zone. */
function instant(companyId: number, value: string, endOfDay = false): SQL {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = endOfDay ? sql`(${value}::date + 1)` : sql`${value}::date`
    return sql`(${day}::timestamp at time zone (select timezone from companies where id = ${companyId}))`
  }
  return sql`${value}::timestamptz`
}

export interface ListOperationsQuery {
  page?: number
  pageSize?: number
  status?: OperationStatus
  client_id?: number
  from?: string
  to?: string
}

export async function listOperations(db: Executor, caller: Caller, q: ListOperationsQuery) {
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const conds: SQL[] = [eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)]
  if (q.status) conds.push(eq(operations.status, q.status))
  if (q.client_id !== undefined)
    conds.push(sql`(${operations.clientId} = ${q.client_id} or exists (
      select 1 from transactions ct join accounts ca on ca.id = ct.account_id
      where ct.operation_id = ${operations.id} and ca.client_id = ${q.client_id}))`)
  if (q.from) conds.push(sql`${operations.date} >= ${instant(caller.companyId, q.from)}`)
  if (q.to)
    conds.push(
      /^\d{4}-\d{2}-\d{2}$/.test(q.to)
        ? sql`${operations.date} < ${instant(caller.companyId, q.to, true)}`
        : sql`${operations.date} <= ${instant(caller.companyId, q.to)}`,
    )
  const where = and(...conds)
  const [{ total }] = await db.select({ total: sql<number>`count(*)::int` }).from(operations).where(where)
  const rows = await db
    .select()
    .from(operations)
    .where(where)
    .orderBy(sql`${operations.date} desc, ${operations.id} desc`)
    .limit(pageSize)
    .offset((page - 1) * pageSize)
  return {
    data: await hydrate(db, rows),
    pagination: { page, pageSize, total, totalPages: Math.ceil(total / pageSize) },
  }
}

// ---------------------------------------------------------------------------------------- write side

/**
 * Locks accounts in ascending id order. Every ledger path takes account locks this way (after at most one
 * operation lock), so two writers never wait on each other in a cycle. `no key update` is the lock an
 * UPDATE of the balance takes anyway; unlike `for update` it does not block inserts whose foreign key
 * points at the account (new transactions, mesa links).
 */
async function lockAccounts(tx: Tx, ids: number[]) {
  if (ids.length === 0) return
  const sorted = [...new Set(ids)].sort((a, b) => a - b)
  await tx.execute(sql`select id from accounts where id in ${sql`(${sql.join(sorted.map((i) => sql`${i}`), sql`, `)})`} order by id for no key update`)
}

/** Adds (sign 1) or removes (sign -1) the given transactions' amounts from their accounts, in exact numeric arithmetic. */
async function moveBalances(tx: Tx, transactionIds: number[], sign: 1 | -1) {
  if (transactionIds.length === 0) return
  const ids = sql`(${sql.join(transactionIds.map((i) => sql`${i}`), sql`, `)})`
  await tx.execute(sql`update accounts a
    set balance = a.balance + ${sign === 1 ? sql`d.delta` : sql`-d.delta`}, updated_at = now()
    from (select account_id, sum(amount) as delta from transactions where id in ${ids} group by account_id) d
    where a.id = d.account_id`)
}

function badAmount(index: number, message: string): ApiError {
  return invalid('Invalid transaction amount', [{ field: `transactions.${index}.amount`, message }])
}

function unknownRefs(code: 'UNKNOWN_ACCOUNT' | 'UNKNOWN_TRANSACTION_TYPE', field: string, wanted: { index: number; id: number }[], known: Set<number>) {
  const missing = wanted.filter((w) => !known.has(w.id))
  if (missing.length === 0) return
  const what = code === 'UNKNOWN_ACCOUNT' ? 'account' : 'transaction type'
  throw unprocessable(
    code,
    `Unknown ${what}`,
    missing.map((m) => ({ field: `transactions.${m.index}.${field}`, message: `unknown ${what} ${m.id}` })),
  )
}

async function costCenterExists(tx: Tx, companyId: number, id: number): Promise<boolean> {
  const [table] = rowsOf<{ present: boolean }>(await tx.execute(sql`select to_regclass('cost_centers') is not null as present`))
  if (!table?.present) return false
  const rows = rowsOf<{ found: boolean }>(
    await tx.execute(sql`select exists (select 1 from cost_centers where id = ${id} and company_id = ${companyId}) as found`),
  )
  return Boolean(rows[0]?.found)
}

/**
 * Creates an operation and its transactions in the caller's transaction. With `status: completed` the
 * balances move at once, exactly as an approval would. A client-scoped employee may only create an
 * operation they will be able to see (its client, or an account it moves, is in their scope): else 403.
 */
export async function createOperation(tx: Tx, caller: Caller, input: CreateOperationInput): Promise<OperationDto> {
  const companyId = caller.companyId
  if (!Array.isArray(input.transactions) || input.transactions.length === 0)
    throw invalid('An operation needs at least one transaction', [{ field: 'transactions', message: 'must have at least 1 item' }])

  const amounts = input.transactions.map((t, i) => {
    if (!isFiniteDecimal(t.amount)) throw badAmount(i, 'must be a number or a decimal string')
    const value = dec(t.amount)
    if (value.abs().gte(MAX_ABS_AMOUNT)) throw badAmount(i, 'too large')
    const stored = toMoney(value)
    if (dec(stored).isZero()) throw badAmount(i, 'must not be zero (after rounding to 6 decimals)')
    return stored
  })

  const [type] = await tx
    .select({ id: operationTypes.id })
    .from(operationTypes)
    .where(and(eq(operationTypes.id, input.operation_type_id), eq(operationTypes.companyId, companyId)))
  if (!type)
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', 'Unknown operation type', [
      { field: 'operation_type_id', message: `unknown operation type ${input.operation_type_id}` },
    ])

  if (input.client_id != null) {
    const [client] = await tx
      .select({ id: clients.id })
      .from(clients)
      .where(and(eq(clients.id, input.client_id), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
    if (!client)
      throw unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field: 'client_id', message: `unknown client ${input.client_id}` }])
  }

  if (input.cost_center_id != null && !(await costCenterExists(tx, companyId, input.cost_center_id)))
    throw unprocessable('UNKNOWN_COST_CENTER', 'Unknown cost center', [
      { field: 'cost_center_id', message: `unknown cost center ${input.cost_center_id}` },
    ])

  const status = input.status ?? 'pending'
  const accountIds = [...new Set(input.transactions.map((t) => t.account_id))].sort((a, b) => a - b)
  // Taken before the inserts so the foreign-key locks on accounts also come in ascending order.
  const accountRows = await tx
    .select({ id: accounts.id, currency: accounts.currencyName, clientId: accounts.clientId })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(and(inArray(accounts.id, accountIds), eq(accounts.companyId, companyId), isNull(clients.deletedAt)))
    .orderBy(asc(accounts.id))
    .for(status === 'completed' ? 'no key update' : 'key share', { of: accounts })
  const accountById = new Map(accountRows.map((a) => [a.id, a]))
  unknownRefs('UNKNOWN_ACCOUNT', 'account_id', input.transactions.map((t, index) => ({ index, id: t.account_id })), new Set(accountById.keys()))

  const typeRefs = input.transactions
    .map((t, index) => ({ index, id: t.transaction_type_id }))
    .filter((r): r is { index: number; id: number } => r.id != null)
  const typeRows = typeRefs.length
    ? await tx
        .select({ id: transactionTypes.id, isCommission: transactionTypes.isCommission })
        .from(transactionTypes)
        .where(and(inArray(transactionTypes.id, typeRefs.map((r) => r.id)), eq(transactionTypes.companyId, companyId)))
    : []
  const commission = new Map(typeRows.map((r) => [r.id, r.isCommission]))
  unknownRefs('UNKNOWN_TRANSACTION_TYPE', 'transaction_type_id', typeRefs, new Set(commission.keys()))

  const scope = clientScope(caller)
  if (scope) {
    const mine = new Set(scope)
    const visible =
      (input.client_id != null && mine.has(input.client_id)) || accountRows.some((a) => mine.has(a.clientId))
    if (!visible) throw forbidden('The operation would be outside your client scope')
  }

  const [op] = await tx
    .insert(operations)
    .values({
      companyId,
      operationTypeId: input.operation_type_id,
      clientId: input.client_id ?? null,
      costCenterId: input.cost_center_id ?? null,
      description: input.description ?? '',
      ...(input.date !== undefined && { date: instant(companyId, input.date) }),
      status,
      createdBy: caller.employee?.id ?? null,
    })
    .returning()

  const txRows = await tx
    .insert(transactions)
    .values(
      input.transactions.map((t, i) => ({
        companyId,
        operationId: op.id,
        accountId: t.account_id,
        currency: accountById.get(t.account_id)!.currency,
        amount: amounts[i],
        status,
        transactionTypeId: t.transaction_type_id ?? null,
        isCommission: t.transaction_type_id != null ? commission.get(t.transaction_type_id)! : false,
        description: t.description ?? '',
        completedAt: status === 'completed' ? sql`now()` : null,
      })),
    )
    .returning()

  if (status === 'completed') await moveBalances(tx, txRows.map((t) => t.id), 1)
  await syncMesaLines(tx, companyId, op.id)
  return operationDto(op, [...txRows].sort((a, b) => a.id - b.id), [])
}

/** The operation row, locked against other status changes; 404 like a read when the caller cannot see it. */
async function lockOperation(tx: Tx, caller: Caller, id: number) {
  const [row] = await tx
    .select({ id: operations.id })
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
    .for('no key update', { of: operations })
  if (!row) throw notFound('Operation')
  // Read after the lock is held: a transition that committed while this one waited is visible here.
  return tx
    .select({ id: transactions.id, accountId: transactions.accountId, status: transactions.status })
    .from(transactions)
    .where(eq(transactions.operationId, id))
    .orderBy(asc(transactions.id))
}

async function setStatuses(tx: Tx, ids: number[], status: 'pending' | 'completed' | 'cancelled') {
  await tx
    .update(transactions)
    .set({ status, completedAt: status === 'completed' ? sql`now()` : null, updatedAt: sql`now()` })
    .where(inArray(transactions.id, ids))
}

async function refreshStatus(tx: Tx, companyId: number, id: number) {
  await tx.execute(sql`update operations set updated_at = now(), status = (
      select case when bool_and(status = 'pending') then 'pending'
                  when bool_and(status = 'completed') then 'completed'
                  when bool_and(status = 'cancelled') then 'cancelled'
                  else 'mixed' end
      from transactions where operation_id = ${id})
    where id = ${id}`)
  await syncMesaLines(tx, companyId, id)
}

/** pending → completed for every transaction; only when all are pending. */
export async function approveOperation(tx: Tx, caller: Caller, id: number) {
  const txs = await lockOperation(tx, caller, id)
  if (txs.length === 0 || txs.some((t) => t.status !== 'pending'))
    throw conflict('NOT_ALL_PENDING', 'Only an operation whose transactions are all pending can be approved')
  await lockAccounts(tx, txs.map((t) => t.accountId))
  const ids = txs.map((t) => t.id)
  await setStatuses(tx, ids, 'completed')
  await moveBalances(tx, ids, 1)
  await refreshStatus(tx, caller.companyId, id)
  return { operation_id: id, message: 'Operation approved', approved_transactions: ids.length }
}

/** completed → pending for every transaction, taking their amounts back out of the balances. */
export async function revertOperation(tx: Tx, caller: Caller, id: number) {
  const txs = await lockOperation(tx, caller, id)
  if (txs.length === 0 || txs.some((t) => t.status !== 'completed'))
    throw conflict('NOT_ALL_COMPLETED', 'Only an operation whose transactions are all completed can be reverted')
  await lockAccounts(tx, txs.map((t) => t.accountId))
  const ids = txs.map((t) => t.id)
  await moveBalances(tx, ids, -1)
  await setStatuses(tx, ids, 'pending')
  await refreshStatus(tx, caller.companyId, id)
  return { operation_id: id, message: 'Operation reverted to pending', reverted_transactions: ids.length }
}

/** Every transaction not yet cancelled becomes cancelled; completed ones leave the balances. */
export async function cancelOperation(tx: Tx, caller: Caller, id: number) {
  const txs = await lockOperation(tx, caller, id)
  const live = txs.filter((t) => t.status !== 'cancelled')
  if (live.length === 0) throw conflict('ALREADY_CANCELLED', 'The operation is already cancelled')
  const completed = live.filter((t) => t.status === 'completed')
  await lockAccounts(tx, completed.map((t) => t.accountId))
  await moveBalances(tx, completed.map((t) => t.id), -1)
  await setStatuses(tx, live.map((t) => t.id), 'cancelled')
  await refreshStatus(tx, caller.companyId, id)
  return { operation_id: id, message: 'Operation cancelled', cancelled_transactions: live.length }
}
