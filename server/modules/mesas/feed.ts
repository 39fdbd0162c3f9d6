import { and, eq, isNull, sql } from 'drizzle-orm'
import { mesas } from '../../../db/schema'
import type { Tx } from '../../../db/client'
import { pgArray } from '../../lib/arrays'
import type { DomainEvents } from '../../lib/events'
import { feedOperation } from './service'

/**
 * Runs on the ledger's announcements (`operation.*`), in the same database transaction as the change,
 * so the auto-fed blotter follows the operation (line added when its legs count, dropped on cancel).
 * One probe for all the operations announced together (a batch is one); a company without auto-fed mesas pays
 * that probe of the partial index `mesas_company_auto` and nothing else.
 */
export async function syncMesaLines(tx: Tx, companyId: number, operationIds: number[]): Promise<void> {
  const touched = await tx
    .select({
      mesa: mesas,
      operations: sql<number[]>`array(select distinct t.operation_id from mesa_accounts ma join transactions t on t.account_id = ma.account_id
        where ma.mesa_id = "mesas"."id" and ma.released_at is null and t.operation_id = any(${pgArray(operationIds, 'int')}))`,
    })
    .from(mesas)
    .where(and(eq(mesas.companyId, companyId), isNull(mesas.deletedAt), eq(mesas.blotterFeedMode, 'auto')))
    .orderBy(mesas.id)
  const fed = touched.map((t) => ({ mesa: t.mesa, operations: new Set(t.operations.map(Number)) })).filter((t) => t.operations.size > 0)
  for (const id of operationIds) for (const t of fed) if (t.operations.has(id)) await feedOperation(tx, t.mesa, id)
}

/** The blotter listens to the ledger; the ledger does not know it is there. */
export const followLedger = (events: DomainEvents) =>
  events.on('operation.*', async (tx, announced) => {
    const companies = new Map<number, number[]>()
    for (const e of announced) companies.set(e.companyId, [...(companies.get(e.companyId) ?? []), e.object.id])
    for (const [companyId, ids] of companies) await syncMesaLines(tx, companyId, ids)
  })
