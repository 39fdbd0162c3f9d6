import { and, asc, eq, isNull } from 'drizzle-orm'
import { accounts, clients, employees, messagingDrafts } from '../../../db/schema'
import type { Tx } from '../../../db/client'
import type { Caller } from '../../access/caller'
import { conflict, unprocessable, type ErrorCode } from '../../lib/errors'
import { dec, isFiniteDecimal, storedAmount, toMoney, type Dec } from '../../lib/money'
import { createOperation } from '../operations/service'
import { findAccount, findCostCenter } from '../../lib/references'
import { setAuditChannel } from '../../lib/write'
import type { FixedConfigInput, RequestedByDto, RunInput, RunResult } from './model'
import { companyCurrencies, getToolRow, toolKind, toolParameters, type StoredParameter, type ToolKind, type ToolRow } from './service'

/** Labels for fields a bot may be told about without the tool declaring them as parameters. */
const DEFAULT_LABELS: Record<string, string> = {
  mode: 'Modo',
  direction: 'Dirección',
  sourceAccountId: 'Cuenta de origen',
  destinationAccountId: 'Cuenta de destino',
  clientId: 'Cliente',
  currency: 'Moneda',
  amount: 'Monto',
  description: 'Descripción',
  localAccountId: 'Cuenta en moneda local',
  quoteAccountId: 'Cuenta en moneda de cotización',
  side: 'Compra o venta',
  quoteAmount: 'Monto en moneda de cotización',
  fx: 'Tipo de cambio',
  costCenterId: 'Centro de resultados',
  paymentSourceMode: 'Origen del pago',
  internalAccountId: 'Caja',
  payerClientId: 'Cliente pagador',
  transactions: 'Movimientos',
  date: 'Fecha',
}

/** One parameter problem; `field` is the parameter key, so a bot can ask the person for exactly that. */
export interface ParameterProblem {
  field: string
  label: string
  reason: 'missing' | 'invalid'
  message: string
}

export const invalidParameters = (problems: ParameterProblem[]) =>
  unprocessable(
    'INVALID_PARAMETERS',
    `Missing or invalid parameters: ${problems.map((p) => `${p.field} (${p.label})`).join(', ')}`,
    problems,
  )

/**
 * What the builders below require of a field, whichever parameter type fills it: a closed set of values, a
 * positive amount, an id. A run checks every bot value against these before building, so all bad fields are named
 * at once, and the MCP input schema publishes them (`enum`, `exclusiveMinimum`).
 */
export type FieldRule = { enum: readonly string[] } | { positive: true } | { amount: true } | { id: true }

export const FIELD_RULES: Record<ToolKind, Record<string, FieldRule>> = {
  up_down: {
    mode: { enum: ['standard', 'internal_transfer', 'third_party'] },
    direction: { enum: ['up', 'down'] },
    amount: { amount: true },
    sourceAccountId: { id: true },
    destinationAccountId: { id: true },
    clientId: { id: true },
  },
  exchange: {
    side: { enum: ['buy', 'sell'] },
    quoteAmount: { amount: true },
    fx: { positive: true },
    localAccountId: { id: true },
    quoteAccountId: { id: true },
  },
  budget: {
    direction: { enum: ['expense', 'income'] },
    paymentSourceMode: { enum: ['internal', 'external'] },
    amount: { amount: true },
    costCenterId: { id: true },
    internalAccountId: { id: true },
    payerClientId: { id: true },
  },
  other: {},
}

/**
 * An amount a leg will carry, as it is stored (numeric(28,6): six places, half away from zero), when that is above
 * zero. Every leg is computed from amounts as stored, so what the operation shows is what the stated rate gives.
 */
const storedPositive = (value: unknown): Dec | undefined => {
  const stored = storedAmount(value)
  return stored !== null && dec(stored).gt(0) ? dec(stored) : undefined
}

const TOO_SMALL = 'must be at least 0.000001 (amounts keep six decimal places)'

/** A value a field's rule refuses: the message; undefined when the rule is met. */
function breaks(rule: FieldRule | undefined, value: unknown): string | undefined {
  if (!rule) return undefined
  if ('enum' in rule) return typeof value === 'string' && rule.enum.includes(value) ? undefined : `must be one of ${rule.enum.join(', ')}`
  if ('positive' in rule) return isFiniteDecimal(value) && dec(value).gt(0) ? undefined : 'must be greater than zero'
  if ('amount' in rule) return storedPositive(value) ? undefined : isFiniteDecimal(value) && dec(value).gt(0) ? TOO_SMALL : 'must be greater than zero'
  return asId(value) === undefined ? 'must be a positive integer id' : undefined
}

const MAX_ID = 2147483647
const asId = (raw: unknown): number | undefined => {
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw
  return typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= MAX_ID ? n : undefined
}

/** A bot's raw value checked against the parameter's declared type; a string message when it does not fit. */
function parseValue(p: StoredParameter, raw: unknown, currencies: string[]): { value: unknown } | string {
  switch (p.type) {
    case 'string': {
      const s = typeof raw === 'number' ? String(raw) : raw
      return typeof s === 'string' && s.trim() !== '' && s.length <= 2000 ? { value: s.trim() } : 'must be a non-empty text'
    }
    case 'number':
      return isFiniteDecimal(raw) ? { value: raw } : 'must be a number'
    case 'amount':
      return isFiniteDecimal(raw) && dec(raw).gt(0) ? { value: raw } : 'must be an amount greater than zero'
    case 'account':
    case 'client':
    case 'cost_center': {
      const id = asId(raw)
      return id !== undefined ? { value: id } : 'must be a positive integer id'
    }
    case 'currency': {
      const s = typeof raw === 'string' ? raw.trim() : ''
      const match = currencies.find((c) => c === s) ?? currencies.find((c) => c.toLowerCase() === s.toLowerCase())
      return match ? { value: match } : `must be one of the company's currencies: ${currencies.join(', ') || '(none)'}`
    }
    case 'date': {
      const s = typeof raw === 'string' ? raw.trim() : ''
      const day = /^(\d{4}-\d{2}-\d{2})(T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2}))?$/.exec(s)?.[1]
      // A calendar day that does not exist (2025-02-30) must not reach the database as a date.
      const ok = day !== undefined && !Number.isNaN(Date.parse(s)) && new Date(`${day}T00:00:00Z`).toISOString().startsWith(day)
      return ok ? { value: s } : 'must be a date (YYYY-MM-DD) or an ISO date-time with a time zone'
    }
    case 'side': {
      const s = typeof raw === 'string' ? raw.trim().toLowerCase() : ''
      return s === 'buy' || s === 'sell' ? { value: s } : 'must be buy or sell'
    }
  }
}

interface Leg {
  accountId: number
  amount: Dec | string | number
  transactionTypeId?: number | null
  description?: string | null
}

interface Built {
  legs: Leg[]
  clientId: number | null
  costCenterId: number | null
}

type Account = NonNullable<Awaited<ReturnType<typeof findAccount>>>

/** The merged values of one run and where each came from, with the checks every kind uses. */
class Merge {
  constructor(
    readonly tx: Tx,
    readonly companyId: number,
    readonly values: Record<string, unknown>,
    readonly fromParameter: Set<string>,
    readonly labels: Map<string, string>,
  ) {}

  label(key: string) {
    return this.labels.get(key) ?? DEFAULT_LABELS[key] ?? key
  }

  has(key: string) {
    return this.values[key] !== undefined && this.values[key] !== null
  }

  /** Fields the kind cannot do without: every absent one is named at once. */
  need(...keys: string[]) {
    const missing = keys.filter((k) => !this.has(k))
    if (missing.length)
      throw invalidParameters(missing.map((k) => ({ field: k, label: this.label(k), reason: 'missing', message: 'required' })))
  }

  /** A bad value from the bot is the bot's parameter problem; a bad fixed value is the configuration's. */
  reject(key: string, message: string, code: ErrorCode = 'INVALID_PARAMETERS') {
    if (this.fromParameter.has(key) || code === 'INVALID_PARAMETERS')
      return invalidParameters([{ field: key, label: this.label(key), reason: 'invalid', message }])
    return unprocessable(code, `fixed_config.${key}: ${message}`, [{ field: `fixed_config.${key}`, message }])
  }

  oneOf<T extends string>(key: string, allowed: readonly T[], fallback: T): T {
    if (!this.has(key)) return fallback
    const v = this.values[key]
    if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T
    throw this.reject(key, `must be one of ${allowed.join(', ')}`)
  }

  /** A rate or factor, exact as given. */
  positive(key: string): Dec {
    const v = this.values[key]
    if (!isFiniteDecimal(v) || !dec(v).gt(0)) throw this.reject(key, 'must be greater than zero')
    return dec(v)
  }

  /** An amount a leg carries, as it will be stored (`storedPositive`). */
  amount(key: string): Dec {
    const problem = breaks({ amount: true }, this.values[key])
    if (problem) throw this.reject(key, problem)
    return storedPositive(this.values[key])!
  }

  id(key: string): number {
    const id = asId(this.values[key])
    if (id === undefined) throw this.reject(key, 'must be a positive integer id')
    return id
  }

  async account(key: string): Promise<Account> {
    const acc = await findAccount(this.tx, this.companyId, this.id(key))
    if (!acc) throw this.reject(key, `unknown account ${this.values[key]}`, 'UNKNOWN_ACCOUNT')
    return acc
  }

  async client(key: string) {
    const [row] = await this.tx
      .select({ id: clients.id, type: clients.type })
      .from(clients)
      .where(and(eq(clients.id, this.id(key)), eq(clients.companyId, this.companyId), isNull(clients.deletedAt)))
    if (!row) throw this.reject(key, `unknown client ${this.values[key]}`, 'UNKNOWN_CLIENT')
    return row
  }

  /** The oldest account of a client in a currency, or null. */
  async accountOf(clientId: number, currency: string) {
    const [row] = await this.tx
      .select({ id: accounts.id })
      .from(accounts)
      .where(and(eq(accounts.clientId, clientId), eq(accounts.companyId, this.companyId), eq(accounts.currencyName, currency)))
      .orderBy(asc(accounts.id))
      .limit(1)
    return row ? (await findAccount(this.tx, this.companyId, row.id))! : null
  }

  currencyMatches(acc: Account) {
    if (this.has('currency') && acc.currency !== this.values.currency)
      throw this.reject('currency', `the account ${acc.id} is in ${acc.currency}, not ${this.values.currency}`, 'ACCOUNT_CURRENCY_MISMATCH')
  }
}

const externalClient = (...accs: Account[]) => accs.find((a) => a.clientType === 1)?.clientId ?? null

async function buildUpDown(m: Merge): Promise<Built> {
  const mode = m.oneOf('mode', ['standard', 'internal_transfer', 'third_party'] as const, 'standard')
  if (mode === 'standard') {
    const direction = m.oneOf('direction', ['up', 'down'] as const, 'up')
    if (!m.has('destinationAccountId')) m.need('amount', 'clientId', 'currency')
    else m.need('amount')
    const amount = m.amount('amount')
    let target: Account
    if (m.has('destinationAccountId')) target = await m.account('destinationAccountId')
    else {
      const client = await m.client('clientId')
      const found = await m.accountOf(client.id, m.values.currency as string)
      if (!found) throw m.reject('currency', `the client has no account in ${m.values.currency}`, 'UNKNOWN_ACCOUNT')
      target = found
    }
    m.currencyMatches(target)
    const signed = direction === 'up' ? amount : amount.neg()
    const legs: Leg[] = [{ accountId: target.id, amount: signed }]
    if (m.has('sourceAccountId')) {
      const caja = await m.account('sourceAccountId')
      if (caja.clientType !== 0) throw m.reject('sourceAccountId', `account ${caja.id} is not of a caja`, 'ACCOUNT_NOT_INTERNAL')
      if (caja.currency !== target.currency)
        throw m.reject('sourceAccountId', `the caja account is in ${caja.currency}, the client account in ${target.currency}`, 'ACCOUNT_CURRENCY_MISMATCH')
      if (caja.id === target.id) throw m.reject('sourceAccountId', 'must differ from the client account')
      legs.push({ accountId: caja.id, amount: signed })
    }
    const clientId = m.has('clientId') ? m.id('clientId') : target.clientType === 1 ? target.clientId : null
    return { legs, clientId, costCenterId: null }
  }
  m.need('sourceAccountId', 'destinationAccountId', 'amount')
  const amount = m.amount('amount')
  const source = await m.account('sourceAccountId')
  const destination = await m.account('destinationAccountId')
  if (source.id === destination.id) throw m.reject('destinationAccountId', 'must differ from the source account')
  if (mode === 'internal_transfer')
    for (const [key, acc] of [['sourceAccountId', source], ['destinationAccountId', destination]] as const)
      if (acc.clientType !== 0) throw m.reject(key, `account ${acc.id} is not of a caja`, 'ACCOUNT_NOT_INTERNAL')
  if (source.currency !== destination.currency)
    throw m.reject('destinationAccountId', `the accounts are in ${source.currency} and ${destination.currency}`, 'ACCOUNT_CURRENCY_MISMATCH')
  m.currencyMatches(source)
  return {
    legs: [
      { accountId: source.id, amount: amount.neg() },
      { accountId: destination.id, amount },
    ],
    clientId: m.has('clientId') ? m.id('clientId') : externalClient(source, destination),
    costCenterId: null,
  }
}

async function buildExchange(m: Merge): Promise<Built> {
  const side = m.oneOf('side', ['buy', 'sell'] as const, 'buy')
  m.need('localAccountId', 'quoteAccountId', 'quoteAmount', 'fx')
  const quoteAmount = m.amount('quoteAmount')
  const fx = m.positive('fx')
  const local = await m.account('localAccountId')
  const quote = await m.account('quoteAccountId')
  if (local.currency === quote.currency)
    throw m.reject('quoteAccountId', `both accounts are in ${local.currency}; they must differ`, 'CURRENCIES_MUST_DIFFER')
  // From the quote leg as stored, so the two legs keep the stated rate (0.0000006 USD at 1,000,000 is stored as
  // 0.000001, and its local leg is 1, not 0.6).
  const localAmount = dec(toMoney(quoteAmount.mul(fx)))
  if (localAmount.isZero()) throw m.reject('quoteAmount', `at ${fx.toFixed()} the local amount rounds to 0; ${TOO_SMALL}`)
  // Compra (buy): the quote currency comes in and local goes out; venta (sell) the reverse.
  const inQuote = side === 'buy' ? 1 : -1
  return {
    legs: [
      { accountId: quote.id, amount: inQuote === 1 ? quoteAmount : quoteAmount.neg() },
      { accountId: local.id, amount: inQuote === 1 ? localAmount.neg() : localAmount },
    ],
    clientId: externalClient(quote, local),
    costCenterId: null,
  }
}

async function buildBudget(m: Merge): Promise<Built> {
  const direction = m.oneOf('direction', ['expense', 'income'] as const, 'expense')
  const source = m.oneOf('paymentSourceMode', ['internal', 'external'] as const, 'internal')
  m.need('costCenterId', 'amount', ...(source === 'external' ? ['payerClientId'] : []))
  const amount = m.amount('amount')
  const cc = await findCostCenter(m.tx, m.companyId, m.id('costCenterId'))
  if (!cc) throw m.reject('costCenterId', `unknown cost center ${m.values.costCenterId}`, 'UNKNOWN_COST_CENTER')
  let account: Account
  let signed: Dec
  if (source === 'internal') {
    if (m.has('internalAccountId')) {
      account = await m.account('internalAccountId')
      if (account.clientType !== 0) throw m.reject('internalAccountId', `account ${account.id} is not of a caja`, 'ACCOUNT_NOT_INTERNAL')
    } else {
      const fallback = cc.defaultInternalAccountId == null ? null : await findAccount(m.tx, m.companyId, cc.defaultInternalAccountId)
      if (!fallback) throw m.reject('internalAccountId', `cost center ${cc.id} has no default caja`, 'UNKNOWN_ACCOUNT')
      account = fallback
      // The default caja is per cost center; in another currency the same caja's account in that currency is meant.
      if (m.has('currency') && account.currency !== m.values.currency) {
        const same = await m.accountOf(account.clientId, m.values.currency as string)
        if (same) account = same
      }
    }
    m.currencyMatches(account)
    signed = direction === 'expense' ? amount.neg() : amount
  } else {
    const payer = await m.client('payerClientId')
    if (payer.type !== 1) throw m.reject('payerClientId', `client ${payer.id} is not an external (type 1) client`, 'UNKNOWN_CLIENT')
    const currency = m.has('currency') ? (m.values.currency as string) : cc.defaultCurrency
    const found = await m.accountOf(payer.id, currency)
    if (!found)
      throw m.reject(m.has('currency') ? 'currency' : 'payerClientId', `the payer client has no account in ${currency}`, 'UNKNOWN_ACCOUNT')
    account = found
    // The payer advanced the money: an expense is owed to them (credit), an income is charged to them (debit).
    signed = direction === 'expense' ? amount : amount.neg()
  }
  return { legs: [{ accountId: account.id, amount: signed }], clientId: cc.clientId, costCenterId: cc.id }
}

async function buildOther(m: Merge): Promise<Built> {
  const txs = m.values.transactions as Extract<FixedConfigInput, { toolKind: 'other' }>['transactions']
  if (!txs?.length) m.need('transactions')
  return {
    legs: txs!.map((t) => ({ accountId: t.accountId, amount: t.amount, transactionTypeId: t.transactionTypeId, description: t.description })),
    clientId: null,
    costCenterId: null,
  }
}

const BUILDERS = { up_down: buildUpDown, exchange: buildExchange, budget: buildBudget, other: buildOther }

type RequestedByInput = NonNullable<RunInput['requested_by']>

async function resolveRequester(tx: Tx, companyId: number, r: RequestedByInput | null | undefined): Promise<RequestedByDto> {
  let employee: RequestedByDto['employee'] = null
  let client: RequestedByDto['client'] = null
  if (r?.employee_id != null) {
    const [row] = await tx
      .select({ id: employees.id, name: employees.name })
      .from(employees)
      .where(and(eq(employees.id, r.employee_id), eq(employees.companyId, companyId), isNull(employees.deletedAt)))
    if (!row)
      throw unprocessable('UNKNOWN_EMPLOYEE', 'Unknown employee in requested_by', [
        { field: 'requested_by.employee_id', message: `unknown employee ${r.employee_id}` },
      ])
    employee = row
  }
  if (r?.client_id != null) {
    const [row] = await tx
      .select({ id: clients.id, name: clients.name })
      .from(clients)
      .where(and(eq(clients.id, r.client_id), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
    if (!row)
      throw unprocessable('UNKNOWN_CLIENT', 'Unknown client in requested_by', [
        { field: 'requested_by.client_id', message: `unknown client ${r.client_id}` },
      ])
    client = row
  }
  return { contact_id: r?.contact_id ?? null, phone: r?.phone ?? null, employee, client }
}

/** Merges the tool's fixed config with the bot's values, each checked against its declared type. */
async function merge(tx: Tx, companyId: number, tool: ToolRow, given: Record<string, unknown>): Promise<Merge> {
  const fixed = tool.fixedConfig as Record<string, unknown>
  const values: Record<string, unknown> = { ...fixed }
  const fromParameter = new Set<string>()
  const params = toolParameters(tool)
  const labels = new Map(params.map((p) => [p.key, p.label]))
  const currencies = params.some((p) => p.type === 'currency') ? await companyCurrencies(tx, companyId) : []
  const problems: ParameterProblem[] = []
  const rules = FIELD_RULES[toolKind(tool)]
  for (const p of params) {
    const raw = Object.hasOwn(given, p.key) ? given[p.key] : undefined
    if (raw === undefined || raw === null || raw === '') {
      if (p.required) problems.push({ field: p.key, label: p.label, reason: 'missing', message: 'required' })
      continue
    }
    const parsed = parseValue(p, raw, currencies)
    const refused = typeof parsed === 'string' ? parsed : breaks(rules[p.key], parsed.value)
    if (refused !== undefined) problems.push({ field: p.key, label: p.label, reason: 'invalid', message: refused })
    else if (typeof parsed !== 'string') {
      values[p.key] = parsed.value
      fromParameter.add(p.key)
    }
  }
  if (problems.length) throw invalidParameters(problems)
  return new Merge(tx, companyId, values, fromParameter, labels)
}

/**
 * Runs a messaging tool: one operation (pending) built from the tool's kind, and the draft that ties it to
 * the bot conversation. The audit channel is set on this transaction before anything is written, so the
 * first audit rows of the operation and its transactions already carry it; later changes find it through
 * the draft. Used by `POST /api/messaging/tools/{id}/run` and by the MCP server.
 */
export async function runTool(tx: Tx, caller: Caller, toolId: number, input: RunInput): Promise<RunResult> {
  const tool = await getToolRow(tx, caller, toolId)
  if (!tool.enabled) throw conflict('TOOL_DISABLED', 'The tool is disabled')
  const requester = await resolveRequester(tx, caller.companyId, input.requested_by)
  const m = await merge(tx, caller.companyId, tool, input.parameters ?? {})
  const built = await BUILDERS[toolKind(tool)](m)

  const channel = input.channel ?? 'messaging'
  const channelDetail = { requested_by: requester }
  await setAuditChannel(tx, channel, channelDetail)

  const description = m.has('description') ? String(m.values.description) : tool.name
  const operation = await createOperation(tx, caller, {
    operation_type_id: tool.companyOperationTypeId,
    description,
    client_id: built.clientId,
    cost_center_id: built.costCenterId,
    ...(m.fromParameter.has('date') && { date: String(m.values.date) }),
    transactions: built.legs.map((l) => ({
      account_id: l.accountId,
      amount: toMoney(l.amount),
      ...(l.transactionTypeId != null && { transaction_type_id: l.transactionTypeId }),
      ...(l.description != null && { description: l.description }),
    })),
  })
  const [draft] = await tx
    .insert(messagingDrafts)
    .values({
      companyId: caller.companyId,
      toolId: tool.id,
      operationId: operation.id,
      channel,
      requestedBy: input.requested_by ?? {},
      channelDetail,
    })
    .returning({ id: messagingDrafts.id })
  return { operation, draft: { id: draft.id, tool_id: tool.id, channel, requested_by: requester } }
}
