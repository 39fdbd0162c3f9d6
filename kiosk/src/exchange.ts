import Decimal from 'decimal.js'
import type { ClientDocument, DocumentType } from './manage/Document'

/**
 * What the screens share about purchases and sales at the counter (contract §19): the shapes the API answers, read
 * with `Accept: application/json; money=string` so every amount is a decimal string, the words for them, and the
 * arithmetic of the total, which must match what the server stores to the cent.
 */

export type Side = 'buy' | 'sell'

export interface ExchangeDetail {
  side: Side
  currency: string
  amount: string
  rate: string
  rate_source: 'board' | 'manual'
  local_amount: string
  commission: string
  ticket_id: number | null
}

export interface Receipt {
  number: string
  point: number
  issued_at: string
  status: 'issued' | 'void'
  company: { legal_name: string | null; tax_id: string | null; address: string | null; license: string | null }
  customer: { name: string | null; document: ClientDocument | null }
  side: Side
  currency: string
  amount: string
  rate: string
  local_amount: string
  commission: string
  total: string
}

export interface ExchangeCreated {
  operation: { id: number; status: string }
  exchange: ExchangeDetail
  receipt: Receipt
  warnings?: 'CAJA_BELOW_ZERO'[]
}

export interface ExchangeListItem extends ExchangeDetail {
  operation_id: number
  status: 'pending' | 'completed' | 'cancelled' | 'mixed'
  client_id: number | null
  caja_id: number
  receipt_number: string
  created_at: string
  created_by: number | null
}

/**
 * `GET /api/company` with `money=string` (contract §18): a receipt's header, the exchange's local currency, and the
 * manager's Empresa form.
 */
export interface CompanyProfile {
  id: number
  name: string
  timezone: string
  modules: { mesas: boolean; ventanilla: boolean }
  legal_name: string | null
  tax_id: string | null
  address: string | null
  license: string | null
  receipt_point: number
  local_currency: string
  till_tolerance: string
}

/** A document type as a printed receipt names it: the words of the API's own PDF (server/modules/exchanges/pdf.ts). */
const PRINTED: Record<DocumentType, string> = { DNI: 'DNI', PASAPORTE: 'Pasaporte', CUIT: 'CUIT', CUIL: 'CUIL', CI: 'CI', OTRO: 'Documento' }
export const documentLabel = (type: string) => PRINTED[type as DocumentType] ?? type

export const SIDE_LABEL: Record<Side, string> = { buy: 'Compra', sell: 'Venta' }

/** The receipt's title for each side: the house's purchase or sale of the foreign currency. */
export const RECEIPT_TITLE: Record<Side, string> = { buy: 'Boleto de compra de divisas', sell: 'Boleto de venta de divisas' }

/** What the total means for the person at the counter. */
export const TOTAL_LABEL: Record<Side, string> = { buy: 'Total a pagar al cliente', sell: 'Total a cobrar al cliente' }

/** Enough digits for the product of two numeric(28,6) values to be exact before it is rounded, as the server does. */
const Exact = Decimal.clone({ precision: 80, rounding: Decimal.ROUND_HALF_UP })

/**
 * The figures of an exchange exactly as the server will store them (§19): amount × rate computed exactly and
 * rounded half away from zero to cents; the commission rounded the same way; the total is what the customer
 * receives on a buy (local − commission) or pays on a sell (local + commission). Inputs are decimal strings.
 */
export function exchangeFigures(side: Side, amount: string, rate: string, commission: string | null) {
  const local = new Exact(amount).times(rate).toDecimalPlaces(2, Exact.ROUND_HALF_UP)
  const fee = commission ? new Exact(commission).toDecimalPlaces(2, Exact.ROUND_HALF_UP) : new Exact(0)
  const total = side === 'buy' ? local.minus(fee) : local.plus(fee)
  return { local: local.toFixed(2), commission: fee.toFixed(2), total: total.toFixed(2) }
}

/** Date and time on the company's wall clock, as written in Argentina (24/11/2026 15:04). */
export function issuedAt(iso: string, timeZone: string): string {
  const options: Intl.DateTimeFormatOptions = { day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }
  let f: Intl.DateTimeFormat
  try {
    f = new Intl.DateTimeFormat('es-AR', { ...options, timeZone })
  } catch {
    f = new Intl.DateTimeFormat('es-AR', { ...options, timeZone: 'America/Argentina/Buenos_Aires' })
  }
  return f.format(new Date(iso)).replace(',', '')
}
