import { and, desc, eq, sql, type SQL } from 'drizzle-orm'
import { companies, exchanges, operations, receipts } from '../../../db/schema'
import { rowsOf, type Executor, type Tx } from '../../../db/client'
import { fixedStatement } from '../../../db/statement'
import { can, type Caller } from '../../access/caller'
import { ApiError, conflict, forbidden, invalid, notFound, unprocessable } from '../../lib/errors'
import { pagination } from '../../lib/models'
import { D, formatEsAr, isExactMoney, MONEY_LIMIT, toJson, type Dec } from '../../lib/money'
import { operationVisible } from '../../lib/scope'
import { createClient } from '../clients/service'
import { checkDocument, documentOf, type ClientDocument, type DocumentType } from '../clients/document'
import { exchangeDetailDto, receiptNumber, type ExchangeDetail } from '../operations/exchange-detail'
import { createOperation, instant } from '../operations/service'
import type { CreateExchangeInput, ExchangeListItem, ReceiptDto } from './model'

/** The operation types an exchange is booked under, by side (contract §19; the setup's starter set makes both). */
export const OPERATION_TYPE_NAMES = { buy: 'Compra de divisas', sell: 'Venta de divisas' } as const

const SIDE_WORDS = { buy: 'Compra', sell: 'Venta' } as const

/** Enough digits for a product of two amounts of numeric(28,6) to be exact before it is rounded to cents. */
const Exact = D.clone({ precision: 80, rounding: D.ROUND_HALF_UP })

/** Decimals the rate and the foreign amount may have: numeric(28,6) keeps six, and a seventh would be lost. */
const MAX_DECIMALS = 6

/**
 * A money field as an exact decimal, or 400 naming it: a number or decimal string (the body's schema let it through),
 * greater than zero, below 10^22, with at most `decimals` places (more, when `round` is given, are rounded half away
 * from zero to that many, and what rounds to zero is refused).
 */
function positive(value: unknown, field: string, opts: { decimals: number; round?: boolean }): Dec {
  const text = isExactMoney(value) ? value.rawJSON : String(value)
  let d: Dec
  try {
    d = new Exact(text)
  } catch {
    throw invalid(`${field} is not a number`, [{ field, message: 'must be a number or a decimal string' }])
  }
  if (!d.isFinite() || d.lte(0)) throw invalid(`${field} must be greater than zero`, [{ field, message: 'must be greater than 0' }])
  if (d.abs().gte(MONEY_LIMIT)) throw invalid(`${field} is too large`, [{ field, message: 'must be below 10^22' }])
  if (d.decimalPlaces() > opts.decimals) {
    if (!opts.round) throw invalid(`${field} has more than ${opts.decimals} decimals`, [{ field, message: `at most ${opts.decimals} decimals` }])
    d = d.toDecimalPlaces(opts.decimals, Exact.ROUND_HALF_UP)
    if (d.isZero()) throw invalid(`${field} rounds to zero`, [{ field, message: `at least ${new Exact(1).dividedBy(10 ** opts.decimals).toFixed()}` }])
  }
  return d
}

/** amount × rate in the local currency: exact, then rounded half away from zero to cents (contract §19). */
export const localAmount = (amount: Dec, rate: Dec) => new Exact(amount).times(rate).toDecimalPlaces(2, Exact.ROUND_HALF_UP)

interface ClientRef {
  id: number
  company_id: number
  type: number
  live: boolean
  name: string
  document_type?: string | null
  document_number?: string | null
  document_country?: string | null
}

interface Context {
  company: { local_currency: string; receipt_point: number; legal_name: string | null; tax_id: string | null; address: string | null; license: string | null }
  board: { buy: string; sell: string } | null
  caja: (ClientRef & { accounts: { id: number; currency: string }[] }) | null
  client: ClientRef | null
  holder: ClientRef | null
  operation_type_id: number | null
  commission_type_id: number | null
  ticket: { company_id: number; status: string } | null
}

const EXCHANGE_CONTEXT = fixedStatement<{
  company: number
  currency: string
  caja: number
  client: number | null
  ticket: number | null
  docType: string | null
  docNumber: string | null
  typeName: string
}>(
  (p) => sql`select exchange_context(${p.company}::int, ${p.currency}::text, ${p.caja}::int, ${p.client}::int, ${p.ticket}::int,
    ${p.docType}::text, ${p.docNumber}::text, ${p.typeName}::text) as context`,
)

/**
 * Concurrent exchanges for one new customer take turns here, so the second finds the client the first created instead
 * of failing on the document's unique index. Transaction-scoped; keyed by company, type and number.
 */
const DOCUMENT_LOCK = fixedStatement<{ key: string }>((p) => sql`select pg_advisory_xact_lock(hashtextextended(${p.key}::text, 0))`)

const EXCHANGE_RECORD = fixedStatement<{
  company: number
  op: number
  side: string
  currency: string
  amount: string
  rate: string
  rateSource: string
  localCurrency: string
  localAmount: string
  commission: string
  caja: number
  client: number | null
  ticket: number | null
  point: number
  legalName: string | null
  taxId: string | null
  address: string | null
  license: string | null
  customerName: string | null
  docType: string | null
  docNumber: string | null
  docCountry: string | null
  payout: number
}>(
  (p) => sql`select exchange_record(${p.company}::int, ${p.op}::int, ${p.side}::text, ${p.currency}::text, ${p.amount}::numeric, ${p.rate}::numeric,
    ${p.rateSource}::text, ${p.localCurrency}::text, ${p.localAmount}::numeric, ${p.commission}::numeric, ${p.caja}::int, ${p.client}::int,
    ${p.ticket}::int, ${p.point}::int, ${p.legalName}::text, ${p.taxId}::text, ${p.address}::text, ${p.license}::text, ${p.customerName}::text,
    ${p.docType}::text, ${p.docNumber}::text, ${p.docCountry}::text, ${p.payout}::int) as recorded`,
)

const unknownClient = (field: string, id: number) => unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field, message: `unknown client ${id}` }])
const badParameter = (field: string, message: string) => unprocessable('INVALID_PARAMETERS', message, [{ field, message }])

/** The customer an exchange names: given by id, found by document, to be created, or none. */
type Customer = { kind: 'none' } | { kind: 'known'; client: ClientRef } | { kind: 'new'; name: string; document: ClientDocument | null }

function customerOf(input: CreateExchangeInput, ctx: Context, document: ClientDocument | null, companyId: number): Customer {
  if (input.client_id != null) {
    const c = ctx.client
    if (!c || c.company_id !== companyId || !c.live) throw unknownClient('client_id', input.client_id)
    if (c.type !== 1) throw badParameter('client_id', `Client ${c.id} is a caja (type 0); the customer is an external client (type 1)`)
    return { kind: 'known', client: c }
  }
  if (!input.customer) return { kind: 'none' }
  const holder = ctx.holder
  if (holder && document) {
    if (holder.type !== 1) throw new ApiError(409, 'DOCUMENT_TAKEN', `${document.type} ${document.number} belongs to a caja`, [{ field: 'customer.document', message: 'held by a caja (type 0 client)' }])
    return { kind: 'known', client: holder }
  }
  const name = input.customer.name.trim()
  if (!name) throw invalid("The customer's name is blank", [{ field: 'customer.name', message: 'must not be blank' }])
  return { kind: 'new', name, document }
}

/**
 * One purchase or sale at the counter (contract §19), in the caller's transaction: checked whole against the company's
 * profile, rates board, caja, customer, types and ticket (one statement), then booked as one operation through the
 * ledger's own create (balances, audit trail, events and desk feeds as for any operation), with the exchange and its
 * receipt written inside that create before it is announced. Nothing is written when anything is refused.
 */
export async function createExchange(tx: Tx, caller: Caller, input: CreateExchangeInput) {
  const side = input.side
  const currency = input.currency.trim().toUpperCase()
  const amount = positive(input.amount, 'amount', { decimals: MAX_DECIMALS })
  const typedRate = input.rate == null ? null : positive(input.rate, 'rate', { decimals: MAX_DECIMALS })
  const commission = input.commission ? positive(input.commission.amount, 'commission.amount', { decimals: 2, round: true }) : new Exact(0)
  if (input.client_id != null && input.customer)
    throw invalid('Name the customer by client_id or by customer, not both', [{ field: 'customer', message: 'not with client_id' }])
  const document = input.customer?.document ? checkDocument(input.customer.document, 'customer.document') : null

  if (document) await DOCUMENT_LOCK(tx, { key: `fos.document.${caller.companyId}.${document.type}.${document.number}` })
  const [{ context: ctx }] = rowsOf<{ context: Context }>(
    await EXCHANGE_CONTEXT(tx, {
      company: caller.companyId,
      currency,
      caja: input.caja_id,
      client: input.client_id ?? null,
      ticket: input.ticket_id ?? null,
      docType: document?.type ?? null,
      docNumber: document?.number ?? null,
      typeName: OPERATION_TYPE_NAMES[side],
    }),
  )
  const local = ctx.company.local_currency

  // The currency and its rate.
  if (currency === local) throw badParameter('currency', `${currency} is the company's local currency; exchanges trade another one against it`)
  if (!ctx.board) {
    const known = (Intl.supportedValuesOf('currency') as string[]).includes(currency)
    throw badParameter('currency', known ? `${currency} is not on the rates board; publish its rates first` : `${currency} is not a known currency, nor one on the rates board`)
  }
  const boardRate = new Exact(ctx.board[side])
  const rate = typedRate ?? boardRate
  if (rate.lte(0)) throw badParameter('rate', `The board's ${side} rate of ${currency} is 0; publish its rates first or type one`)
  const rateSource = rate.equals(boardRate) ? 'board' : 'manual'
  if (rateSource === 'manual' && !can(caller, 'exchanges.rate'))
    throw forbidden(`A rate other than the board's (${boardRate.toFixed()}) needs the permission exchanges.rate`)

  // The caja and its two accounts.
  const caja = ctx.caja
  if (!caja || caja.company_id !== caller.companyId || !caja.live) throw unknownClient('caja_id', input.caja_id)
  if (caja.type !== 0) throw unprocessable('ACCOUNT_NOT_INTERNAL', `Client ${caja.id} is not a caja (type 0)`, [{ field: 'caja_id', message: 'not a type 0 client' }])
  const foreignAccount = caja.accounts.find((a) => a.currency === currency)
  const localAccount = caja.accounts.find((a) => a.currency === local)
  const missing = [!foreignAccount && currency, !localAccount && local].filter(Boolean)
  if (missing.length)
    throw unprocessable('ACCOUNT_CURRENCY_MISMATCH', `The caja "${caja.name}" has no account in ${missing.join(' nor ')}`, [
      { field: 'caja_id', message: `no account in ${missing.join(', ')}` },
    ])

  const customer = customerOf(input, ctx, document, caller.companyId)

  // The ticket served.
  if (input.ticket_id != null) {
    const ticket = ctx.ticket
    if (!ticket || ticket.company_id !== caller.companyId)
      throw unprocessable('UNKNOWN_TICKET', 'Unknown ticket', [{ field: 'ticket_id', message: `unknown ticket ${input.ticket_id}` }])
    if (ticket.status !== 'called' && ticket.status !== 'finished')
      throw conflict('INVALID_TICKET_STATUS', `Ticket ${input.ticket_id} is ${ticket.status === 'waiting' ? 'still waiting' : ticket.status}; call it first`)
  }

  // The types it is booked under.
  if (ctx.operation_type_id === null)
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', `The company has no operation type "${OPERATION_TYPE_NAMES[side]}" of kind exchange`, [
      { field: 'side', message: `create the operation type "${OPERATION_TYPE_NAMES[side]}" (kind exchange)` },
    ])
  if (!commission.isZero() && ctx.commission_type_id === null)
    throw unprocessable('OPERATION_TYPE_NOT_FOUND', 'The company has no commission transaction type (is_commission)', [
      { field: 'commission', message: 'create a transaction type with is_commission true' },
    ])

  const localAmt = localAmount(amount, rate)
  if (localAmt.isZero()) throw invalid('amount × rate is less than one cent', [{ field: 'amount', message: 'amount × rate must be at least 0.01' }])
  if (localAmt.gte(MONEY_LIMIT)) throw unprocessable('AMOUNT_OUT_OF_RANGE', 'amount × rate is too large', [{ field: 'amount', message: 'amount × rate must be below 10^22' }])
  if (side === 'buy' && commission.gte(localAmt))
    throw badParameter('commission.amount', `The commission must be less than the ${localAmt.toFixed(2)} ${local} paid to the customer`)

  const client =
    customer.kind === 'known' ? customer.client : customer.kind === 'new' ? await createClient(tx, caller, { name: customer.name, type: 1, document: customer.document }) : null
  const customerDocument = customer.kind === 'known' ? documentOfRef(customer.client) : customer.kind === 'new' ? customer.document : null

  const sign = side === 'buy' ? 1 : -1
  const foreignLeg = amount.times(sign)
  const localLeg = localAmt.times(-sign)
  const status = can(caller, 'operations.approve') ? ('completed' as const) : ('pending' as const)
  const payout = side === 'buy' ? localAccount! : foreignAccount!
  // What the exchange moves on the account that pays out (the commission stays in the local currency).
  const payoutDelta = side === 'buy' ? localLeg.plus(commission) : foreignLeg
  const detail: ExchangeDetail = exchangeDetailDto({
    side,
    currency,
    amount: amount.toFixed(),
    rate: rate.toFixed(),
    rateSource,
    localAmount: localAmt.toFixed(2),
    commission: commission.toFixed(2),
    ticketId: input.ticket_id ?? null,
  })
  let receipt: ReceiptDto | undefined
  let payoutBalance: Dec | undefined

  const operation = await createOperation(
    tx,
    caller,
    {
      operation_type_id: ctx.operation_type_id,
      client_id: client?.id ?? null,
      description: input.description ?? `${SIDE_WORDS[side]} de ${formatEsAr(amount.toFixed())} ${currency} a ${formatEsAr(rate.toFixed())}`,
      status,
      transactions: [
        { account_id: foreignAccount!.id, amount: foreignLeg.toFixed() },
        { account_id: localAccount!.id, amount: localLeg.toFixed(2) },
        ...(commission.isZero() ? [] : [{ account_id: localAccount!.id, amount: commission.toFixed(2), transaction_type_id: ctx.commission_type_id }]),
      ],
    },
    async (tx, created) => {
      const [{ recorded }] = rowsOf<{ recorded: { seq: number; issued_at: string; payout_balance: string } }>(
        await EXCHANGE_RECORD(tx, {
          company: caller.companyId,
          op: created.id,
          side,
          currency,
          amount: amount.toFixed(),
          rate: rate.toFixed(),
          rateSource,
          localCurrency: local,
          localAmount: localAmt.toFixed(2),
          commission: commission.toFixed(2),
          caja: caja.id,
          client: client?.id ?? null,
          ticket: input.ticket_id ?? null,
          point: ctx.company.receipt_point,
          legalName: ctx.company.legal_name,
          taxId: ctx.company.tax_id,
          address: ctx.company.address,
          license: ctx.company.license,
          customerName: client?.name ?? null,
          docType: customerDocument?.type ?? null,
          docNumber: customerDocument?.number ?? null,
          docCountry: customerDocument?.country ?? null,
          payout: payout.id,
        }),
      )
      payoutBalance = new Exact(recorded.payout_balance)
      receipt = receiptDto({
        point: ctx.company.receipt_point,
        seq: recorded.seq,
        issuedAt: recorded.issued_at,
        void: false,
        company: ctx.company,
        customerName: client?.name ?? null,
        document: customerDocument,
        detail,
      })
      return { exchange: detail, receipt_number: receipt.number }
    },
  )
  // As if the exchange counted, pending or not: a completed one is already in the balance read after it.
  const after = status === 'completed' ? payoutBalance! : payoutBalance!.plus(payoutDelta)
  return { operation, exchange: detail, receipt: receipt!, ...(after.isNegative() && { warnings: ['CAJA_BELOW_ZERO' as const] }) }
}

const documentOfRef = (c: ClientRef): ClientDocument | null =>
  c.document_type && c.document_number ? { type: c.document_type as DocumentType, number: c.document_number, country: c.document_country ?? 'AR' } : null

/** The receipt as the API answers it, from what it was issued with and the operation's state. */
function receiptDto(r: {
  point: number
  seq: number
  issuedAt: string
  void: boolean
  company: { legal_name: string | null; tax_id: string | null; address: string | null; license: string | null }
  customerName: string | null
  document: ClientDocument | null
  detail: ExchangeDetail
}): ReceiptDto {
  const local = new Exact(r.detail.local_amount.rawJSON)
  const commission = new Exact(r.detail.commission.rawJSON)
  return {
    number: receiptNumber(r.point, r.seq),
    point: r.point,
    issued_at: r.issuedAt,
    status: r.void ? 'void' : 'issued',
    company: { legal_name: r.company.legal_name, tax_id: r.company.tax_id, address: r.company.address, license: r.company.license },
    customer: { name: r.customerName, document: r.document },
    side: r.detail.side,
    currency: r.detail.currency,
    amount: r.detail.amount,
    rate: r.detail.rate,
    local_amount: r.detail.local_amount,
    commission: r.detail.commission,
    total: toJson(r.detail.side === 'buy' ? local.minus(commission) : local.plus(commission)),
  }
}

/** A receipt and what only its printed form needs. */
export interface ReceiptView {
  receipt: ReceiptDto
  localCurrency: string
  /** The company's name, printed when the receipt carries no legal name. */
  companyName: string
  timezone: string
}

/** The receipt of a visible operation; 404 when the operation is not the caller's or has none. */
export async function getReceipt(db: Executor, caller: Caller, operationId: number): Promise<ReceiptView> {
  const [row] = await db
    .select({ r: receipts, e: exchanges, status: operations.status, companyName: companies.name, timezone: companies.timezone })
    .from(receipts)
    .innerJoin(exchanges, eq(exchanges.operationId, receipts.operationId))
    .innerJoin(operations, eq(operations.id, receipts.operationId))
    .innerJoin(companies, eq(companies.id, operations.companyId))
    .where(and(eq(receipts.operationId, operationId), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
    .prepare('receipt_of_operation')
    .execute()
  if (!row) throw notFound('Receipt')
  return {
    localCurrency: row.e.localCurrency,
    companyName: row.companyName,
    timezone: row.timezone,
    receipt: receiptDto({
      point: row.r.point,
      seq: row.r.seq,
      issuedAt: row.r.issuedAt.toISOString(),
      // A cancelled operation voids its receipt; a reverted one is pending again and its receipt still stands.
      void: row.status === 'cancelled',
      company: { legal_name: row.r.legalName, tax_id: row.r.taxId, address: row.r.address, license: row.r.license },
      customerName: row.r.customerName,
      document: documentOf(row.r),
      detail: exchangeDetailDto(row.e),
    }),
  }
}

export interface ListExchangesQuery {
  page?: number
  pageSize?: number
  from?: string
  to?: string
  caja_id?: number
  ticket_id?: number
  client_id?: number
}

/** The company's exchanges, newest first, within the caller's client scope. */
export async function listExchanges(db: Executor, caller: Caller, q: ListExchangesQuery) {
  const page = q.page ?? 1
  const pageSize = q.pageSize ?? 50
  const conds: SQL[] = [eq(exchanges.companyId, caller.companyId), operationVisible(caller, exchanges.operationId)]
  if (q.caja_id !== undefined) conds.push(eq(exchanges.cajaId, q.caja_id))
  if (q.ticket_id !== undefined) conds.push(eq(exchanges.ticketId, q.ticket_id))
  if (q.client_id !== undefined) conds.push(eq(exchanges.clientId, q.client_id))
  if (q.from) conds.push(sql`${exchanges.createdAt} >= ${instant(caller.companyId, q.from)}`)
  if (q.to)
    conds.push(/^\d{4}-\d{2}-\d{2}$/.test(q.to) ? sql`${exchanges.createdAt} < ${instant(caller.companyId, q.to, true)}` : sql`${exchanges.createdAt} <= ${instant(caller.companyId, q.to)}`)
  const where = and(...conds)
  const [[{ total }], rows] = await Promise.all([
    db.select({ total: sql<number>`count(*)::int` }).from(exchanges).where(where),
    db
      .select({ e: exchanges, status: operations.status, createdBy: operations.createdBy, point: receipts.point, seq: receipts.seq })
      .from(exchanges)
      .innerJoin(operations, eq(operations.id, exchanges.operationId))
      .innerJoin(receipts, eq(receipts.operationId, exchanges.operationId))
      .where(where)
      .orderBy(desc(exchanges.createdAt), desc(exchanges.id))
      .limit(pageSize)
      .offset((page - 1) * pageSize),
  ])
  const data: ExchangeListItem[] = rows.map((r) => ({
    operation_id: r.e.operationId,
    status: r.status as ExchangeListItem['status'],
    ...exchangeDetailDto(r.e),
    client_id: r.e.clientId,
    caja_id: r.e.cajaId,
    receipt_number: receiptNumber(r.point, r.seq),
    created_at: r.e.createdAt.toISOString(),
    created_by: r.createdBy,
  }))
  return { data, pagination: pagination(page, pageSize, total) }
}

export type ExchangeCreated = Awaited<ReturnType<typeof createExchange>>
