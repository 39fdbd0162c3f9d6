import { and, asc, eq, sql, type Placeholder, type SQL } from 'drizzle-orm'
import { operations, operationTypes, transactions, transactionTypes } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { fixedStatement } from '../../../db/statement'
import { clientScope, type Caller } from '../../access/caller'
import { ApiError, conflict, forbidden, invalid, notFound, unprocessable } from '../../lib/errors'
import { iso } from '../../lib/models'
import { dec, storedAmount, toJson, type Dec } from '../../lib/money'
import { arrayLiteral, groupBy, pgArray } from '../../lib/arrays'
import { isoSql } from '../../lib/time'
import { operationVisible } from '../../lib/scope'
import { announce, announceAll, type DomainEvent } from '../../lib/events'
import { drawnIds, insertPlanned, nextId, type KeyCheckPlans } from '../../lib/write'
import { attachmentDtosByOperation } from '../attachments/service'
import { exchangeDetails } from './exchange-detail'
import type { BlobStore } from '../../infra/storage'
import type { CreateOperationInput, OperationDto } from './model'

export type { CreateOperationInput, OperationDto } from './model'

type OperationRow = typeof operations.$inferSelect
type TransactionRow = typeof transactions.$inferSelect
type OperationStatus = OperationDto['status']


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

function operationDto(op: OperationRow, txs: TransactionRow[], attachments: unknown[], exchange?: Pick<OperationDto, 'exchange' | 'receipt_number'>): OperationDto {
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
    ...exchange,
  }
}

/**
 * Full records of already-authorised operation rows, transactions in creation order. Attachments carry
 * signed links, so they are listed only when a store to sign with is given.
 */
async function hydrate(db: Executor, companyId: number, rows: OperationRow[], store?: BlobStore): Promise<OperationDto[]> {
  if (rows.length === 0) return []
  const ids = rows.map((r) => r.id)
  const [txs, files, exchanged] = await Promise.all([
    db.select().from(transactions).where(sql`${transactions.operationId} = any(${pgArray(ids, 'int')})`).orderBy(asc(transactions.id)).prepare('operation_legs').execute(),
    store ? attachmentDtosByOperation(db, store, companyId, ids) : undefined,
    exchangeDetails(db, ids),
  ])
  const byOp = groupBy(txs, (t) => t.operationId)
  return rows.map((r) => operationDto(r, byOp.get(r.id) ?? [], files?.get(r.id) ?? [], exchanged.get(r.id)))
}

async function visibleRow(db: Executor, caller: Caller, id: number): Promise<OperationRow> {
  const [row] = await db
    .select()
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
    .prepare('operation_row')
    .execute()
  if (!row) throw notFound('Operation')
  return row
}

/** One visible operation; pass the store to include its attachments with fresh signed links. */
export async function getOperation(db: Executor, caller: Caller, id: number, store?: BlobStore): Promise<OperationDto> {
  const [dto] = await hydrate(db, caller.companyId, [await visibleRow(db, caller, id)], store)
  return dto
}

/**
 * The operation as its GET returns it and what a messaging run that made it adds, as jsonb SQL expressions
 * (db/sql/ledger.sql): the outbox records an event within its own statement, so a transition pays one round trip
 * for it, and the database keeps the functions' plans.
 */
const operationJson = (id: SQL) => sql`operation_json(${id})`
const operationOrigin = (id: SQL) => sql`operation_origin(${id})`
/** No draft can name an operation still being created, so its origin is the channel alone. */
const createdOrigin = () => sql`channel_origin()`

/**
 * What the ledger announces about operation `id`: rendered at this point of the transaction, or, for one just
 * created, the record the create answers (what its GET returns), so a batch records all its events in one statement.
 */
const operationEvent = (type: string, companyId: number, id: number, created?: OperationDto): DomainEvent => ({
  type,
  companyId,
  object: { kind: 'operation', id },
  ...(created ? { render: async () => created, facts: createdOrigin } : { renderSql: operationJson, facts: operationOrigin }),
})

/** A date-time as given, or a date-only value as that day's midnight in the company's time zone. */
export function instant(companyId: number, value: string, endOfDay = false): SQL {
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
  const [{ total }] = await db.select({ total: sql<number>`count(*)::int` }).from(operations).where(where).prepare('operations_count').execute()
  const rows = await db
    .select()
    .from(operations)
    .where(where)
    .orderBy(sql`${operations.date} desc, ${operations.id} desc`)
    .limit(pageSize)
    .offset((page - 1) * pageSize)
    .prepare('operations_page')
    .execute()
  return {
    data: await hydrate(db, caller.companyId, rows, store),
    pagination: { page, pageSize, total, totalPages: Math.ceil(total / pageSize) },
  }
}

// ---------------------------------------------------------------------------------------- write side

/*
 * Locking discipline of every ledger write: at most one operation row first, then accounts in ascending id order, so
 * two writers never wait on each other in a cycle. Rows are locked `for no key update`, the lock an UPDATE of a
 * balance or status takes anyway; unlike `for update` it does not block inserts whose foreign key points at the row
 * (new transactions on an account, attachments of an operation).
 *
 * The till check rides on those locks: an open or a close of a caja locks every account of the caja `for update`
 * (server/modules/tills/service.ts), which waits for any lock a write holds on one of them and makes any later one
 * wait. So once a write holds its accounts, its caja's till cannot open or close until it commits, and the till state
 * it reads in a statement after the lock is the one it commits under: a closed caja refuses it (409 TILL_CLOSED), an
 * open one records it among its session's movements.
 */

/** A caja's till as the write locked it: `session_id` null when it was never opened. */
interface TillRow {
  caja_id: number
  session_id: number | null
  open: boolean
}

/** 409 TILL_CLOSED for a write moving an account of caja `cajaId`, whose till is closed. */
export const tillClosed = (cajaId: number, field = 'transactions') =>
  new ApiError(409, 'TILL_CLOSED', `Caja ${cajaId} is closed; nothing moves its accounts until its till is opened again (POST /api/cajas/${cajaId}/open)`, [
    { field, message: `caja ${cajaId} is closed` },
  ])

function badAmount(index: number, message: string): ApiError {
  return invalid('Invalid transaction amount', [{ field: `transactions.${index}.amount`, message }])
}

function unknownRefs(code: 'UNKNOWN_ACCOUNT' | 'UNKNOWN_TRANSACTION_TYPE', field: string, wanted: { index: number; id: number }[], known: { has(id: number): boolean }) {
  const missing = wanted.filter((w) => !known.has(w.id))
  if (missing.length === 0) return
  const what = code === 'UNKNOWN_ACCOUNT' ? 'account' : 'transaction type'
  throw unprocessable(
    code,
    `Unknown ${what}`,
    missing.map((m) => ({ field: `transactions.${m.index}.${field}`, message: `unknown ${what} ${m.id}` })),
  )
}

/** The most operations one batch may create. */
export const MAX_BATCH = 1000

const ids = (values: Iterable<number | null | undefined>) => [...new Set([...values].filter((v): v is number => v != null))].sort((a, b) => a - b)

const OPERATION_REFS = fixedStatement<{ accounts: string; clients: string; types: string; costCenters: string; txTypes: string; forUpdate: boolean }>(
  (p) => sql`select operation_refs(${p.accounts}::int[], ${p.clients}::int[], ${p.types}::int[], ${p.costCenters}::int[], ${p.txTypes}::int[],
    ${p.forUpdate}::boolean) as refs`,
)

/**
 * What the operations to create refer to, all fetched in one call of `operation_refs` (db/sql/ledger.sql) by primary
 * key, the company checked on the rows afterwards. Lookups are driven by id alone on purpose: a company condition
 * beside the id lets the planner start from the company's index, which is the right plan only while the statistics
 * know the tenant; with rows added since the last ANALYZE, or a tenant the sample missed, it walks every row of the
 * company for each lookup. The accounts are locked first, in ascending id order (see the locking discipline above),
 * all with the balance update's lock when any operation is created completed.
 */
async function loadRefs(tx: Tx, companyId: number, inputs: CreateOperationInput[]) {
  const list = (values: Iterable<number | null | undefined>) => arrayLiteral(ids(values))
  const [{ refs }] = rowsOf<{
    refs: {
      accounts: { id: number; company_id: number; client_id: number; currency_name: string }[]
      clients: { id: number; company_id: number; deleted: boolean }[]
      types: { id: number; company_id: number }[]
      cost_centers: { id: number; company_id: number }[]
      tx_types: { id: number; company_id: number; is_commission: boolean }[]
      tills: TillRow[]
    }
  }>(
    await OPERATION_REFS(tx, {
      accounts: list(inputs.flatMap((i) => i.transactions.map((t) => t.account_id))),
      clients: list(inputs.map((i) => i.client_id)),
      types: list(inputs.map((i) => i.operation_type_id)),
      costCenters: list(inputs.map((i) => i.cost_center_id)),
      txTypes: list(inputs.flatMap((i) => i.transactions.map((t) => t.transaction_type_id))),
      forUpdate: inputs.some((i) => i.status === 'completed'),
    }),
  )
  const own = <T extends { id: number; company_id: number }>(rows: T[]) => new Map(rows.filter((r) => r.company_id === companyId).map((r) => [r.id, r]))
  const clientRows = own(refs.clients)
  const liveClient = (id: number) => clientRows.get(id)?.deleted === false
  const accounts = new Map([...own(refs.accounts)].filter(([, a]) => liveClient(a.client_id)))
  const tills = new Map(refs.tills.map((t) => [t.caja_id, t]))
  return { types: own(refs.types), liveClient, costCenters: own(refs.cost_centers), accounts, txTypes: own(refs.tx_types), tills }
}

type Refs = Awaited<ReturnType<typeof loadRefs>>

/** The amounts as stored (six places), or 400 naming the first bad one. */
function amountsOf(input: CreateOperationInput): string[] {
  if (!Array.isArray(input.transactions) || input.transactions.length === 0)
    throw invalid('An operation needs at least one transaction', [{ field: 'transactions', message: 'must have at least 1 item' }])
  return input.transactions.map((t, i) => {
    const stored = storedAmount(t.amount)
    if (stored === null) throw badAmount(i, 'must be a number or a decimal string below 10^22 in absolute value')
    if (Number(stored) === 0) throw badAmount(i, 'must not be zero (after rounding to 6 decimals)')
    return stored
  })
}

/** One operation checked against its references: what to insert, or the first thing wrong with it (thrown). */
function prepare(caller: Caller, input: CreateOperationInput, refs: Refs, amounts = amountsOf(input)) {
  if (!refs.types.has(input.operation_type_id))
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', 'Unknown operation type', [
      { field: 'operation_type_id', message: `unknown operation type ${input.operation_type_id}` },
    ])
  if (input.client_id != null && !refs.liveClient(input.client_id))
    throw unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field: 'client_id', message: `unknown client ${input.client_id}` }])
  if (input.cost_center_id != null && !refs.costCenters.has(input.cost_center_id))
    throw unprocessable('UNKNOWN_COST_CENTER', 'Unknown cost center', [
      { field: 'cost_center_id', message: `unknown cost center ${input.cost_center_id}` },
    ])
  unknownRefs('UNKNOWN_ACCOUNT', 'account_id', input.transactions.map((t, index) => ({ index, id: t.account_id })), refs.accounts)
  const typeRefs = input.transactions
    .map((t, index) => ({ index, id: t.transaction_type_id }))
    .filter((r): r is { index: number; id: number } => r.id != null)
  unknownRefs('UNKNOWN_TRANSACTION_TYPE', 'transaction_type_id', typeRefs, refs.txTypes)
  for (const [index, t] of input.transactions.entries()) {
    const till = refs.tills.get(refs.accounts.get(t.account_id)!.client_id)
    if (till && till.session_id !== null && !till.open) throw tillClosed(till.caja_id, `transactions.${index}.account_id`)
  }

  const scope = clientScope(caller)
  if (scope) {
    const mine = new Set(scope)
    const visible =
      (input.client_id != null && mine.has(input.client_id)) || input.transactions.some((t) => mine.has(refs.accounts.get(t.account_id)!.client_id))
    if (!visible) throw forbidden('The operation would be outside your client scope')
  }
  return { input, amounts, status: input.status ?? 'pending' }
}

type Prepared = ReturnType<typeof prepare>

const OPERATION_COLUMNS = sql`id, company_id, operation_type_id, client_id, cost_center_id, description,
  ${isoSql(sql`date`)} as date, status, created_by, ${isoSql(sql`created_at`)} as created_at, ${isoSql(sql`updated_at`)} as updated_at`
const TRANSACTION_COLUMNS = sql`id, operation_id, account_id, currency, amount::text as amount, status, transaction_type_id, is_commission,
  description, ${isoSql(sql`created_at`)} as created_at, ${isoSql(sql`updated_at`)} as updated_at`

/**
 * The date an operation is stored with, from the one it was given (`day`, text or null): a date-time as given, a
 * date-only value as that day's midnight in the company's time zone, none as now (the SQL side of `instant` below).
 */
const storedDate = (day: SQL, companyId: Placeholder) => sql`coalesce(case when ${day} ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
    then ${day}::date::timestamp at time zone (select timezone from companies where id = ${companyId}::int)
    else ${day}::timestamptz end, now())`

/** How both inserts below end: what they inserted, in id order, and the plan mode of the key checks run after it. */
const insertedRows = (keyChecks: Placeholder) => sql`select coalesce((select json_agg(ops order by ops.id) from ops), '[]') as ops,
      coalesce((select json_agg(txs order by txs.id) from txs), '[]') as txs, set_config('plan_cache_mode', ${keyChecks}, true) as plan_mode`

/**
 * Operations and all their transactions in one statement: ids are drawn first so each transaction names its
 * operation (by its place in the arrays, from 1) inside the statement; the foreign keys are checked at its end, when
 * both sets of rows exist (their plans: server/lib/write.ts).
 */
const INSERT_OPERATIONS = fixedStatement<{
  count: number
  companyId: number
  createdBy: number | null
  types: string
  clients: string
  costCenters: string
  descriptions: string
  days: string
  statuses: string
  legOps: string
  legAccounts: string
  legCurrencies: string
  legAmounts: string
  legStatuses: string
  legTypes: string
  legCommissions: string
  legDescriptions: string
  keyChecks: KeyCheckPlans
}>(
  (p) => sql`${drawnIds('operations', p.count)}, ops as (
      insert into operations (id, company_id, operation_type_id, client_id, cost_center_id, description, date, status, created_by)
      select ids.id, ${p.companyId}::int, u.type_id, u.client_id, u.cost_center_id, u.description, ${storedDate(sql`u.day`, p.companyId)},
        u.status, ${p.createdBy}::int
      from unnest(${p.types}::int[], ${p.clients}::int[], ${p.costCenters}::int[], ${p.descriptions}::text[], ${p.days}::text[], ${p.statuses}::text[])
        with ordinality as u(type_id, client_id, cost_center_id, description, day, status, n)
      join ids on ids.n = u.n
      order by u.n
      returning ${OPERATION_COLUMNS}
    ), txs as (
      insert into transactions (company_id, operation_id, account_id, currency, amount, status, transaction_type_id, is_commission,
        description, completed_at)
      select ${p.companyId}::int, ids.id, u.account_id, u.currency, u.amount, u.status, u.type_id, u.is_commission,
        u.description, case when u.status = 'completed' then now() end
      from unnest(${p.legOps}::int[], ${p.legAccounts}::int[], ${p.legCurrencies}::text[], ${p.legAmounts}::numeric[], ${p.legStatuses}::text[],
                  ${p.legTypes}::int[], ${p.legCommissions}::bool[], ${p.legDescriptions}::text[])
        with ordinality as u(op, account_id, currency, amount, status, type_id, is_commission, description, n)
      join ids on ids.n = u.op
      order by u.n
      returning ${TRANSACTION_COLUMNS}
    )
    ${insertedRows(p.keyChecks)}`,
)

type InsertedOperation = Omit<OperationDto, 'transactions' | 'attachments'>
type InsertedTransaction = Omit<OperationDto['transactions'][number], 'amount' | 'status'> & { amount: string; status: string }

/**
 * Inserts checked operations with two statements whatever their number (operations, then all their transactions,
 * each from arrays bound as single parameters), moves the balances of those created completed, and announces each.
 * Rows come back in id order, which is the order they were produced in, so the n-th operation is the n-th input.
 * Balances move with one UPDATE per operation and account, as single creates make them: the audit trail then holds
 * the same rows (each balance step with its before and after) whether the operations came one by one or in a batch;
 * operations that touch different accounts share one statement, so a batch needs as many as the most operations
 * moving one account.
 */
async function insertOperations(tx: Tx, caller: Caller, items: Prepared[], refs: Refs, attach?: Attach): Promise<OperationDto[]> {
  const companyId = caller.companyId
  const legs = items.flatMap((p, i) => p.input.transactions.map((t, j) => ({ op: i + 1, t, amount: p.amounts[j], status: p.status })))
  const [inserted] = rowsOf<{ ops: InsertedOperation[]; txs: InsertedTransaction[] }>(
    await insertPlanned(tx, items.length + legs.length, (keyChecks) =>
      INSERT_OPERATIONS(tx, {
        count: items.length,
        companyId,
        createdBy: caller.employee?.id ?? null,
        types: arrayLiteral(items.map((p) => p.input.operation_type_id)),
        clients: arrayLiteral(items.map((p) => p.input.client_id ?? null)),
        costCenters: arrayLiteral(items.map((p) => p.input.cost_center_id ?? null)),
        descriptions: arrayLiteral(items.map((p) => p.input.description ?? '')),
        days: arrayLiteral(items.map((p) => p.input.date ?? null)),
        statuses: arrayLiteral(items.map((p) => p.status)),
        legOps: arrayLiteral(legs.map((l) => l.op)),
        legAccounts: arrayLiteral(legs.map((l) => l.t.account_id)),
        legCurrencies: arrayLiteral(legs.map((l) => refs.accounts.get(l.t.account_id)!.currency_name)),
        legAmounts: arrayLiteral(legs.map((l) => l.amount)),
        legStatuses: arrayLiteral(legs.map((l) => l.status)),
        legTypes: arrayLiteral(legs.map((l) => l.t.transaction_type_id ?? null)),
        legCommissions: arrayLiteral(legs.map((l) => (l.t.transaction_type_id != null ? refs.txTypes.get(l.t.transaction_type_id)!.is_commission : false))),
        legDescriptions: arrayLiteral(legs.map((l) => l.t.description ?? '')),
        keyChecks,
      }),
    ),
  )
  const ops = inserted.ops
  const txRows = inserted.txs

  // Per completed operation, the sum it adds to each account; then rounds in which no account appears twice.
  const rounds: Map<number, Dec>[] = []
  items.forEach((p) => {
    if (p.status !== 'completed') return
    const sums = new Map<number, Dec>()
    p.input.transactions.forEach((t, j) => sums.set(t.account_id, (sums.get(t.account_id) ?? dec(0)).plus(p.amounts[j])))
    for (const [account, delta] of sums) {
      let round = rounds.find((r) => !r.has(account))
      if (!round) rounds.push((round = new Map()))
      round.set(account, delta)
    }
  })
  for (const round of rounds) {
    await tx.execute(sql`update accounts a set balance = a.balance + d.delta, updated_at = now()
      from unnest(${pgArray([...round.keys()], 'int')}, ${pgArray([...round.values()].map((d) => d.toFixed()), 'numeric')}) as d(id, delta)
      where a.id = d.id`)
  }

  // Each operation moving an open caja joins that caja's session (read by loadRefs once the accounts were locked).
  const moves = items.flatMap((p, i) => {
    const sessions = new Set(p.input.transactions.map((t) => refs.tills.get(refs.accounts.get(t.account_id)!.client_id)).filter((t) => t?.open).map((t) => t!.session_id!))
    return [...sessions].map((session) => ({ session, op: ops[i].id, moved: p.status === 'completed' }))
  })
  if (moves.length)
    await RECORD_CREATED(tx, {
      company: companyId,
      sessions: arrayLiteral(moves.map((m) => m.session)),
      ops: arrayLiteral(moves.map((m) => m.op)),
      moved: arrayLiteral(moves.map((m) => m.moved)),
    })

  return announceCreated(tx, companyId, ops, txRows, attach)
}

/** Operations created while their cajas were open, as movements of those cajas' sessions. */
const RECORD_CREATED = fixedStatement<{ company: number; sessions: string; ops: string; moved: string }>(
  (p) => sql`insert into till_movements (company_id, session_id, operation_id, event, moved)
    select ${p.company}::int, u.session_id, u.op, 'created', u.moved from unnest(${p.sessions}::int[], ${p.ops}::int[], ${p.moved}::bool[]) as u(session_id, op, moved)`,
)

/**
 * Rows that belong with one operation being created (an exchange and its receipt), written once the operation's own
 * rows are in and its balances moved, and before it is announced; what it answers joins the operation as its GET
 * shows it, in the create's answer and in the event alike. Its first statement must be sent before it first awaits
 * anything else (the announcement is sent right behind it).
 */
export type Attach = (tx: Tx, created: OperationDto) => Promise<Partial<OperationDto>>

/** Inserted operations as the create answers them (what their GET returns), each announced. */
async function announceCreated(tx: Tx, companyId: number, ops: InsertedOperation[], txRows: InsertedTransaction[], attach?: Attach): Promise<OperationDto[]> {
  const byOp = groupBy(txRows, (t) => t.operation_id)
  const created: OperationDto[] = ops.map((op) => ({
    ...op,
    status: op.status as OperationStatus,
    transactions: (byOp.get(op.id) ?? []).map((t) => ({ ...t, amount: toJson(t.amount), status: t.status as 'pending' | 'completed' | 'cancelled' })),
    attachments: [],
  }))
  if (attach) {
    // The attached rows' statement goes out first and the announcement right behind it, one round trip for both (the
    // connection runs statements in the order sent): the event renders the operation in SQL, so it already shows what
    // was attached, and rows locked by the attach (a receipt counter) wait on no round trip of the server's before the
    // commit. Both are settled before anything is thrown.
    const [attached, announced] = await Promise.allSettled([
      attach(tx, created[0]),
      announceAll(tx, [{ type: 'operation.created', companyId, object: { kind: 'operation', id: created[0].id }, renderSql: operationJson, facts: createdOrigin }]),
    ])
    if (attached.status === 'rejected') throw attached.reason
    if (announced.status === 'rejected') throw announced.reason
    Object.assign(created[0], attached.value)
    return created
  }
  await announceAll(tx, created.map((dto) => operationEvent('operation.created', companyId, dto.id, dto)))
  return created
}

/**
 * One pending operation checked and inserted by a single statement, the checks `prepare` makes written as the
 * statement's condition: its operation type, client and cost center, and each leg's account (with a live client) and
 * transaction type, are the company's, and a client-scoped caller can see the operation. Every table is read by
 * primary key. When any check fails nothing is inserted (an id is drawn only when all pass), and the create reads its
 * references to say exactly what (`createOperation`). No account is locked first: the foreign-key checks take the
 * only lock a pending operation needs (`for key share`), which conflicts with no lock any ledger write takes, so
 * their order cannot deadlock. Those locks are what an open or a close of the caja waits for (see the locking
 * discipline above), so the till is checked by the next statement (`till_created`, db/sql/tills.sql), sent right
 * ahead of the announcement.
 */
const INSERT_CHECKED = fixedStatement<
  {
    companyId: number
    createdBy: number | null
    type: number
    client: number | null
    costCenter: number | null
    description: string
    day: string | null
    scope: string | null
    legAccounts: string
    legAmounts: string
    legTypes: string
    legDescriptions: string
    keyChecks: KeyCheckPlans
  }
>(
  // Every lookup goes by id alone, the company compared on the row it finds (as loadRefs does): a company condition
  // beside the id lets the planner start from a company index and walk the tenant's rows. Each leg's lookups are
  // subqueries of their own (`limit 1` keeps the planner from folding them into a join), so a plan made while the
  // tables were small still probes the primary keys once per leg and never scans a table whole.
  (p) => sql`with legs as materialized (
      select u.n, u.account_id, u.amount, u.type_id, u.description, a.currency_name, a.client_id, coalesce(tt.is_commission, false) as is_commission,
        coalesce(a.company_id = ${p.companyId}::int and a.live, false) and (u.type_id is null or coalesce(tt.company_id = ${p.companyId}::int, false)) as known
      from unnest(${p.legAccounts}::int[], ${p.legAmounts}::numeric[], ${p.legTypes}::int[], ${p.legDescriptions}::text[])
        with ordinality as u(account_id, amount, type_id, description, n)
      left join lateral (
        select a.currency_name, a.client_id, a.company_id,
          (select c.company_id = ${p.companyId}::int and c.deleted_at is null from clients c where c.id = a.client_id) as live
        from accounts a where a.id = u.account_id limit 1) a on true
      left join lateral (select tt.company_id, tt.is_commission from transaction_types tt where tt.id = u.type_id limit 1) tt on true
    ), ids as materialized (
      select ${nextId('operations')} as id
      where (select bool_and(l.known) from legs l)
        and coalesce((select t.company_id = ${p.companyId}::int from operation_types t where t.id = ${p.type}::int), false)
        and (${p.client}::int is null
             or coalesce((select c.company_id = ${p.companyId}::int and c.deleted_at is null from clients c where c.id = ${p.client}::int), false))
        and (${p.costCenter}::int is null
             or coalesce((select cc.company_id = ${p.companyId}::int from cost_centers cc where cc.id = ${p.costCenter}::int), false))
        and (${p.scope}::int[] is null or ${p.client}::int = any (${p.scope}::int[])
             or exists (select from legs l where l.client_id = any (${p.scope}::int[])))
    ), ops as (
      insert into operations (id, company_id, operation_type_id, client_id, cost_center_id, description, date, status, created_by)
      select ids.id, ${p.companyId}::int, ${p.type}::int, ${p.client}::int, ${p.costCenter}::int, ${p.description}::text,
        ${storedDate(sql`${p.day}::text`, p.companyId)}, 'pending', ${p.createdBy}::int
      from ids
      returning ${OPERATION_COLUMNS}
    ), txs as (
      insert into transactions (company_id, operation_id, account_id, currency, amount, status, transaction_type_id, is_commission, description)
      select ${p.companyId}::int, ids.id, l.account_id, l.currency_name, l.amount, 'pending', l.type_id, l.is_commission, l.description
      from ids cross join legs l
      order by l.n
      returning ${TRANSACTION_COLUMNS}
    )
    ${insertedRows(p.keyChecks)}`,
)

const TILL_CREATED = fixedStatement<{ op: number; company: number }>((p) => sql`select till_created(${p.op}::int, ${p.company}::int) as closed`)

/** `INSERT_CHECKED` for one pending operation: the created operation, announced, or null when a check failed. */
async function insertChecked(tx: Tx, caller: Caller, input: CreateOperationInput, amounts: string[], attach?: Attach): Promise<OperationDto | null> {
  const scope = clientScope(caller)
  const [inserted] = rowsOf<{ ops: InsertedOperation[]; txs: InsertedTransaction[] }>(
    await insertPlanned(
      tx,
      1 + amounts.length,
      (keyChecks) =>
        INSERT_CHECKED(tx, {
          companyId: caller.companyId,
          createdBy: caller.employee?.id ?? null,
          type: input.operation_type_id,
          client: input.client_id ?? null,
          costCenter: input.cost_center_id ?? null,
          description: input.description ?? '',
          day: input.date ?? null,
          scope: scope ? arrayLiteral(scope) : null,
          legAccounts: arrayLiteral(input.transactions.map((t) => t.account_id)),
          legAmounts: arrayLiteral(amounts),
          legTypes: arrayLiteral(input.transactions.map((t) => t.transaction_type_id ?? null)),
          legDescriptions: arrayLiteral(input.transactions.map((t) => t.description ?? '')),
          keyChecks,
        }),
    ),
  )
  if (inserted.ops.length === 0) return null
  // The till check and the announcement go out together, one round trip; a closed caja rolls back both.
  const checking = Promise.resolve(TILL_CREATED(tx, { op: inserted.ops[0].id, company: caller.companyId }))
  const [checked, announced] = await Promise.allSettled([checking, announceCreated(tx, caller.companyId, inserted.ops, inserted.txs, attach)])
  if (checked.status === 'rejected') throw checked.reason
  const [{ closed }] = rowsOf<{ closed: number | null }>(checked.value)
  if (closed !== null) throw tillClosed(closed)
  if (announced.status === 'rejected') throw announced.reason
  return announced.value[0]
}

/**
 * Creates an operation and its transactions in the caller's transaction. With `status: completed` the
 * balances move at once, exactly as an approval would. A client-scoped employee may only create an
 * operation they will be able to see (its client, or an account it moves, is in their scope): else 403.
 * `attach` adds rows of another feature that belong with it (see Attach).
 */
export async function createOperation(tx: Tx, caller: Caller, input: CreateOperationInput, attach?: Attach): Promise<OperationDto> {
  // Amounts first: a bad one is answered before any account is locked.
  const amounts = amountsOf(input)
  // A pending operation is checked by the statement that inserts it; only when a check fails are its references read,
  // to answer what `prepare` finds wrong (or, should a reference have changed in between, to insert it this way).
  if ((input.status ?? 'pending') === 'pending') {
    const created = await insertChecked(tx, caller, input, amounts, attach)
    if (created) return created
  }
  const refs = await loadRefs(tx, caller.companyId, [input])
  const [dto] = await insertOperations(tx, caller, [prepare(caller, input, refs, amounts)], refs, attach)
  return dto
}

/**
 * Creates up to MAX_BATCH operations in the caller's transaction, all or none: every item is checked exactly as a
 * single create checks it, and when any fails the answer is 422 BATCH_ITEM_INVALID listing each failing item
 * (`index`, `code`, `error`, and the item's own `details`) with nothing written.
 */
export async function createOperations(tx: Tx, caller: Caller, inputs: CreateOperationInput[]): Promise<OperationDto[]> {
  if (inputs.length === 0 || inputs.length > MAX_BATCH)
    throw invalid(`A batch holds 1 to ${MAX_BATCH} operations`, [{ field: 'operations', message: `1 to ${MAX_BATCH} items` }])
  const refs = await loadRefs(tx, caller.companyId, inputs)
  const prepared: Prepared[] = []
  const bad: { index: number; code: string; error: string; details?: unknown }[] = []
  inputs.forEach((input, index) => {
    try {
      prepared.push(prepare(caller, input, refs))
    } catch (e) {
      if (!(e instanceof ApiError)) throw e
      bad.push({ index, code: e.code, error: e.message, ...(e.details !== undefined && { details: e.details }) })
    }
  })
  if (bad.length) throw unprocessable('BATCH_ITEM_INVALID', `${bad.length} of ${inputs.length} operations are invalid; nothing was created`, bad)
  return insertOperations(tx, caller, prepared, refs)
}

type Transition = {
  /**
   * Transactions in this status change (with `except`, all but those in it); the operation must be in it too (all
   * but it), its stored status kept in step with the transactions.
   */
  from: 'pending' | 'completed' | 'cancelled'
  except?: boolean
  to: 'pending' | 'completed' | 'cancelled'
  /** What the ledger announces once the change is made. */
  event: 'operation.approved' | 'operation.reverted' | 'operation.cancelled'
  /** Which of the changing transactions currently count in the balances (all when absent), and whether they start or stop counting. */
  counted?: 'completed'
  sign: 1 | -1
}

const LEDGER_TRANSITION = fixedStatement<{
  id: number
  company: number
  scope: string | null
  from: string
  except: boolean
  counted: string | null
  to: string
  sign: number
}>(
  (p) => sql`select op_company, changed, till_closed from ledger_transition(${p.id}::int, ${p.company}::int, ${p.scope}::int[], ${p.from}::text,
    ${p.except}::boolean, ${p.counted}::text, ${p.to}::text, ${p.sign}::int)`,
)

/**
 * One status change of a whole operation, made by `ledger_transition` (db/sql/ledger.sql) in one round trip: lock
 * the operation row, the accounts it moves in ascending id order, read their cajas' till (refused while one is closed:
 * 409 TILL_CLOSED), then flip the transactions, move the balances and store the new operation status.
 * A database function because its statements' plans are kept by the session, also behind a pooler in transaction
 * pooling, where nothing can be prepared. Balances change by `balance + amount`
 * in numeric arithmetic, never through JavaScript.
 */
async function transition(tx: Tx, caller: Caller, id: number, rule: Transition, refuse: () => ApiError): Promise<number> {
  const scope = clientScope(caller)
  const changing = Promise.resolve(
    LEDGER_TRANSITION(tx, {
      id,
      company: caller.companyId,
      scope: scope ? arrayLiteral(scope) : null,
      from: rule.from,
      except: rule.except ?? false,
      counted: rule.counted ?? null,
      to: rule.to,
      sign: rule.sign,
    }),
  )
  // Announced without waiting for the change's answer, one round trip for both: the connection runs statements in
  // the order sent, so the listeners already see the operation changed; when it was refused or is not the caller's,
  // the error below rolls back whatever they wrote. Both are settled before anything is thrown.
  const [changed, announced] = await Promise.allSettled([changing, announce(tx, operationEvent(rule.event, caller.companyId, id))])
  if (changed.status === 'rejected') throw changed.reason
  const [row] = rowsOf<{ op_company: number; changed: number | null; till_closed: number | null }>(changed.value)
  if (!row || row.op_company !== caller.companyId) throw notFound('Operation')
  if (row.till_closed !== null) throw tillClosed(row.till_closed, 'id')
  if (row.changed === null) throw refuse()
  if (announced.status === 'rejected') throw announced.reason
  return row.changed
}

/** pending → completed for every transaction; only when all are pending. Their amounts join the balances. */
export async function approveOperation(tx: Tx, caller: Caller, id: number) {
  const approved = await transition(
    tx,
    caller,
    id,
    { from: 'pending', to: 'completed', sign: 1, event: 'operation.approved' },
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
    { from: 'completed', to: 'pending', sign: -1, event: 'operation.reverted' },
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
    { from: 'cancelled', except: true, to: 'cancelled', counted: 'completed', sign: -1, event: 'operation.cancelled' },
    () => conflict('ALREADY_CANCELLED', 'The operation is already cancelled'),
  )
  return { operation_id: id, message: 'Operation cancelled', cancelled_transactions: cancelled }
}
