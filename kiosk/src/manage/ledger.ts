import Decimal from 'decimal.js'
import { money } from './api'
import { when } from './ui'

/** Shapes of contract §2–§4 as read with `money=string`: every amount is a decimal string. */
export interface Account {
  id: number
  name: string
  currency_name: string
  client_id: number
  balance: string
}

export interface Client {
  id: number
  name: string
  description: string | null
  type: 0 | 1
  document?: { type: string; number: string; country: string } | null
  accounts: Account[]
}

export interface Transaction {
  id: number
  operation_id: number
  account_id: number
  currency: string
  amount: string
  status: 'pending' | 'completed' | 'cancelled'
  is_commission: boolean
  description: string
}

export interface Attachment {
  id: number
  file_name: string
  mime_type: string | null
  size_bytes: number | null
  signed_url: string | null
  uploaded_by: { id: number | null; name: string | null; email: string | null }
  created_at: string
}

export type OperationStatus = 'pending' | 'completed' | 'cancelled' | 'mixed'

export interface Operation {
  id: number
  operation_type_id: number
  client_id: number | null
  description: string
  date: string
  status: OperationStatus
  created_by: number | null
  created_at: string
  transactions: Transaction[]
  attachments: Attachment[]
  /** Only on an exchange (contract §19): its receipt, `PPPPP-NNNNNNNN`. */
  receipt_number?: string
}

export interface OperationType {
  id: number
  name: string
  kind: string
}

export interface Page<T> {
  data: T[]
  pagination: { page: number; pageSize: number; total: number; totalPages: number }
}

export const STATUS_LABEL: Record<OperationStatus, string> = {
  pending: 'Pendiente',
  completed: 'Aprobada',
  cancelled: 'Cancelada',
  mixed: 'Mixta',
}

export const TX_STATUS_LABEL: Record<Transaction['status'], string> = { pending: 'Pendiente', completed: 'Aprobada', cancelled: 'Cancelada' }

/** The most a list of `GET /api/clients` holds (its `pageSize` bound), and the most ids one `ids` filter takes. */
const MOST = 200

/**
 * Every caja of the company, all pages: a branch has a few dozen, and the position, the account pickers and the names
 * of most legs need them all. External clients are never read whole: they are picked by a search (pickers.tsx) or
 * asked for by id (`clientsNamed`).
 */
export async function allCajas(): Promise<Client[]> {
  const out: Client[] = []
  for (let page = 1; ; page++) {
    const body = await money<{ data: Client[]; count: number }>('GET', `/api/clients?type=0&page=${page}&pageSize=${MOST}`)
    out.push(...body.data)
    if (body.data.length < MOST || out.length >= body.count) return out
  }
}

/**
 * The clients with these ids (`ids`) or holding these accounts (`account_ids`), in requests of 200: the names behind
 * the ids of a page of records. An id the caller cannot see (another company's, a deleted client, outside a client
 * scope) is simply not answered.
 */
export async function clientsNamed(by: 'ids' | 'account_ids', ids: number[]): Promise<Client[]> {
  const unique = [...new Set(ids)]
  const out: Client[] = []
  for (let i = 0; i < unique.length; i += MOST) {
    const q = new URLSearchParams({ [by]: unique.slice(i, i + MOST).join(','), pageSize: String(MOST) })
    out.push(...(await money<{ data: Client[] }>('GET', `/api/clients?${q}`)).data)
  }
  return out
}

/** Today in the company's default zone (contract §1): date-only filters are days in Argentina time, not the browser's. */
export function today(): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Argentina/Buenos_Aires', year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date())
}

export type Move = 'approve' | 'revert' | 'cancel'

/**
 * The balance each account would have after the action, computed exactly: approving adds every pending leg,
 * reverting takes back every completed one, cancelling takes back the completed ones and drops the pending ones
 * (balance = sum of completed legs, contract §3).
 */
export function balancesAfter(op: Operation, move: Move, accounts: Map<number, Account>) {
  const after = new Map<number, Decimal>()
  for (const t of op.transactions) {
    const account = accounts.get(t.account_id)
    if (!account) continue
    const current = after.get(t.account_id) ?? new Decimal(account.balance)
    const counts = move === 'approve' ? t.status === 'pending' : t.status === 'completed'
    if (!counts) {
      after.set(t.account_id, current)
      continue
    }
    after.set(t.account_id, move === 'approve' ? current.plus(t.amount) : current.minus(t.amount))
  }
  return [...after].map(([id, balance]) => ({ account: accounts.get(id)!, before: accounts.get(id)!.balance, after: balance.toFixed() }))
}

/** Sums decimal strings by currency without a float in between. */
export function totalsByCurrency(accounts: Account[]): { currency: string; total: string }[] {
  const sums = new Map<string, Decimal>()
  for (const a of accounts) sums.set(a.currency_name, (sums.get(a.currency_name) ?? new Decimal(0)).plus(a.balance))
  return [...sums].sort(([a], [b]) => a.localeCompare(b)).map(([currency, total]) => ({ currency, total: total.toFixed() }))
}

/** Audit trail actions in the words of the screens. */
export const AUDIT_ACTION_LABEL: Record<string, string> = { create: 'Alta', update: 'Cambio', cancel: 'Cancelación', revert: 'Reversión', delete: 'Baja' }

/** A moment as the trail stores it (ISO 8601 with its zone): shown as the rest of the app shows times. */
const MOMENT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/
const shown = (v: unknown) =>
  v === null || v === undefined ? '—' : typeof v === 'string' && MOMENT.test(v) ? when(v) : typeof v === 'object' ? JSON.stringify(v) : String(v)

/**
 * What an audit entry changed, field by field ("—" when only its time of change moved). The company is always the
 * one signed in to, so its column says nothing.
 */
export function describeChanges(changes: { field: string; before: unknown; after: unknown }[]): string {
  return (
    changes
      .filter((c) => c.field !== 'updated_at' && c.field !== 'company_id')
      .map((c) => `${c.field}: ${shown(c.before)} → ${shown(c.after)}`)
      .join('; ') || '—'
  )
}
