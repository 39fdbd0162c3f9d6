import { and, asc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm'
import { accounts, clients, costCenters, operations, operationTypes, transactions, transactionTypes } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { clientScope, type Caller } from '../../access/caller'
import { ApiError, conflict, forbidden, invalid, notFound, unprocessable } from '../../lib/errors'
import { iso } from '../../lib/models'
import { dec, isFiniteDecimal, toJson, toMoney } from '../../lib/money'
import { operationVisible } from '../../lib/scope'
import { announce } from '../../lib/events'
import { attachmentDtosByOperation } from '../attachments/service'
import type { BlobStore } from '../../infra/storage'
import type { CreateOperationInput, OperationDto } from './model'
import { requireLiveClient } from '../../lib/references'

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

/**
 * Full records of already-authorised operation rows, transactions in creation order. Attachments carry
 * signed links, so they are listed only when a store to sign with is given.
 */
async function hydrate(db: Executor, companyId: number, rows: OperationRow[], store?: BlobStore): Promise<OperationDto[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [txs, files] = await Promise.all([
    db.select().from(transactions).where(inArray(transactions.operationId, ids)).orderBy(asc(transactions.id)),
    store ? attachmentDtosByOperation(db, store, companyId, ids) : undefined,
  ])
  const byOp = new Map<number, TransactionRow[]>()
  for (const t of txs) {
    const list = byOp.get(t.operationId)
    if (list) list.push(t)
    else byOp.set(t.operationId, [t])
  }
  return rows.map((r) => operationDto(r, byOp.get(r.id) ?? [], files?.get(r.id) ?? []))
}

async function visibleRow(db: Executor, caller: Caller, id: number): Promise<OperationRow> {
  const [row] = await db
    .select()
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
  if (!row) throw notFound('Operation')
  return row
}

/** One visible operation; pass the store to include its attachments with fresh signed links. */
export async function getOperation(db: Executor, caller: Caller, id: number, store?: BlobStore): Promise<OperationDto> {
  const [dto] = await hydrate(db, caller.companyId, [await visibleRow(db, caller, id)], store)
  return dto
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

export async function listOperations(db: Executor, caller: Caller, q: ListOperationsQuery, store?: BlobStore) {
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
    data: await hydrate(db, caller.companyId, rows, store),
    pagination: { page, pageSize, total, totalPages: Math.ceil(total / pageSize) },
  }
}

// ---------------------------------------------------------------------------------------- write side

/*
 * Locking discipline of every ledger write: at most one operation row first, then accounts in ascending id
 * order, so two writers never wait on each other in a cycle. Rows are locked `for no key update`, the lock an
 * UPDATE of a balance or status takes anyway; unlike `for update` it does not block inserts whose foreign key
 * points at the row (new transactions on an account, attachments of an operation).
 */

/** Adds the new operation's amounts to their (already locked) accounts, in exact numeric arithmetic. */
async function addToBalances(tx: Tx, operationId: number) {
  await tx.execute(sql`update accounts a set balance = a.balance + d.delta, updated_at = now()
    from (select account_id, sum(amount) as delta from transactions where operation_id = ${operationId} group by account_id) d
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
  const [row] = await tx
    .select({ id: costCenters.id })
    .from(costCenters)
    .where(and(eq(costCenters.id, id), eq(costCenters.companyId, companyId)))
  return row !== undefined
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

  if (input.client_id != null) await requireLiveClient(tx, companyId, input.client_id)

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

  if (status === 'completed') await addToBalances(tx, op.id)
  await announce(tx, { type: 'operation.created', companyId, object: { kind: 'operation', id: op.id } })
  return operationDto(op, [...txRows].sort((a, b) => a.id - b.id), [])
}

type Transition = {
  /** The operation status the transition starts from; the stored status is kept in step with the transactions. */
  allowed: (status: string) => boolean
  /** Which transactions change. */
  from: SQL
  to: 'pending' | 'completed' | 'cancelled'
  /** What the ledger announces once the change is made. */
  event: 'operation.approved' | 'operation.reverted' | 'operation.cancelled'
  /** Which of the changing transactions currently count in the balances, and whether they start or stop counting. */
  counted: SQL
  sign: 1 | -1
}

/**
 * One status change of a whole operation. Statements, in this order: lock the operation row (so concurrent
 * transitions of it serialise; the status read is the latest committed one), lock the accounts it moves in
 * ascending id order, then flip the transactions, move the balances and store the new operation status in
 * one statement. Balances change by `balance + amount` in numeric arithmetic, never through JavaScript.
 */
async function transition(tx: Tx, caller: Caller, id: number, rule: Transition, refuse: () => ApiError): Promise<number> {
  const op = id
  const [row] = rowsOf<{ status: string }>(
    await tx.execute(sql`select status from operations
      where id = ${op} and company_id = ${caller.companyId} and ${operationVisible(caller, sql`operations.id`)}
      for no key update of operations`),
  )
  if (!row) throw notFound('Operation')
  if (!rule.allowed(row.status)) throw refuse()

  await tx.execute(sql`select id from accounts
    where id in (select account_id from transactions where operation_id = ${op} and ${rule.from} and ${rule.counted})
    order by id for no key update`)

  const [result] = rowsOf<{ changed: number }>(
    await tx.execute(sql`with prev as (
        select id, account_id, amount, (${rule.counted}) as counted from transactions where operation_id = ${op} and ${rule.from}
      ), moved as (
        update transactions t set status = ${sql.raw(`'${rule.to}'`)}, completed_at = ${rule.to === 'completed' ? sql`now()` : sql`null`},
          updated_at = now()
        from prev where t.id = prev.id returning prev.account_id, prev.amount, prev.counted
      ), delta as (
        select account_id, sum(amount) as d from moved where counted group by account_id
      ), balances as (
        update accounts a set balance = a.balance ${rule.sign === 1 ? sql`+` : sql`-`} delta.d, updated_at = now()
        from delta where a.id = delta.account_id returning a.id
      ), stored as (
        update operations set status = ${sql.raw(`'${rule.to}'`)}, updated_at = now() where id = ${op} returning id
      )
      select (select count(*) from moved)::int as changed, (select count(*) from balances) as b, (select count(*) from stored) as o`),
  )
  await announce(tx, { type: rule.event, companyId: caller.companyId, object: { kind: 'operation', id } })
  return result.changed
}

/** pending → completed for every transaction; only when all are pending. Their amounts join the balances. */
export async function approveOperation(tx: Tx, caller: Caller, id: number) {
  const approved = await transition(
    tx,
    caller,
    id,
    { allowed: (s) => s === 'pending', from: sql`status = 'pending'`, to: 'completed', counted: sql`true`, sign: 1, event: 'operation.approved' },
    () => conflict('NOT_ALL_PENDING', 'Only an operation whose transactions are all pending can be approved'),
  )
  return { operation_id: id, message: 'Operation approved', approved_transactions: approved }
}

/** completed → pending for every transaction, taking their amounts back out of the balances. */
export async function revertOperation(tx: Tx, caller: Caller, id: number) {
  const reverted = await transition(
    tx,
    caller,
    id,
    { allowed: (s) => s === 'completed', from: sql`status = 'completed'`, to: 'pending', counted: sql`true`, sign: -1, event: 'operation.reverted' },
    () => conflict('NOT_ALL_COMPLETED', 'Only an operation whose transactions are all completed can be reverted'),
  )
  return { operation_id: id, message: 'Operation reverted to pending', reverted_transactions: reverted }
}

/** Every transaction not yet cancelled becomes cancelled; completed ones leave the balances. */
export async function cancelOperation(tx: Tx, caller: Caller, id: number) {
  const cancelled = await transition(
    tx,
    caller,
    id,
    { allowed: (s) => s !== 'cancelled', from: sql`status <> 'cancelled'`, to: 'cancelled', counted: sql`status = 'completed'`, sign: -1, event: 'operation.cancelled' },
    () => conflict('ALREADY_CANCELLED', 'The operation is already cancelled'),
  )
  return { operation_id: id, message: 'Operation cancelled', cancelled_transactions: cancelled }
}
