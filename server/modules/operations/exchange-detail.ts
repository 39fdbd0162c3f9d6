import { sql } from 'drizzle-orm'
import { exchanges, receipts } from '../../../db/schema'
import type { Executor } from '../../../db/client'
import { pgArray } from '../../lib/arrays'
import { toJson } from '../../lib/money'
import type { OperationDto } from './model'

/**
 * What `GET /api/operations/{id}` adds for an operation made by an exchange (contract §19): the exchange and its
 * receipt number. The ledger renders it, so every answer and event showing the operation shows it; the exchanges
 * module writes the rows.
 */
export type ExchangeDetail = NonNullable<OperationDto['exchange']>

type ExchangeRow = typeof exchanges.$inferSelect

/** `PPPPP-NNNNNNNN`: the point and the sequence, zero-padded. */
export const receiptNumber = (point: number, seq: number) => `${String(point).padStart(5, '0')}-${String(seq).padStart(8, '0')}`

export const exchangeDetailDto = (e: Pick<ExchangeRow, 'side' | 'currency' | 'amount' | 'rate' | 'rateSource' | 'localAmount' | 'commission' | 'ticketId'>): ExchangeDetail => ({
  side: e.side as ExchangeDetail['side'],
  currency: e.currency,
  amount: toJson(e.amount),
  rate: toJson(e.rate),
  rate_source: e.rateSource as ExchangeDetail['rate_source'],
  local_amount: toJson(e.localAmount),
  commission: toJson(e.commission),
  ticket_id: e.ticketId,
})

/** The exchange and receipt number of each of these operations that has one, by operation id. */
export async function exchangeDetails(db: Executor, operationIds: number[]): Promise<Map<number, Pick<OperationDto, 'exchange' | 'receipt_number'>>> {
  const rows = await db
    .select({ exchange: exchanges, point: receipts.point, seq: receipts.seq })
    .from(exchanges)
    .leftJoin(receipts, sql`${receipts.operationId} = ${exchanges.operationId}`)
    .where(sql`${exchanges.operationId} = any(${pgArray(operationIds, 'int')})`)
    .prepare('operation_exchanges')
    .execute()
  return new Map(
    rows.map((r) => [
      r.exchange.operationId,
      { exchange: exchangeDetailDto(r.exchange), ...(r.point !== null && r.seq !== null && { receipt_number: receiptNumber(r.point, r.seq) }) },
    ]),
  )
}
