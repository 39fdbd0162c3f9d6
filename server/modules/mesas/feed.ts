import { and, eq, isNull, sql } from 'drizzle-orm'
import { mesas } from '../../../db/schema'
import type { Tx } from '../../../db/client'
import type { DomainEvents } from '../../lib/events'
import { feedOperation } from './service'

/**
 * Runs on the ledger's announcements (`operation.*`), in the same database transaction as the change,
 * so the auto-fed blotter follows the operation (line added when its legs count, dropped on cancel).
 * A company without auto-fed mesas pays one probe of the partial index `mesas_company_auto`.
 */
export async function syncMesaLines(tx: Tx, companyId: number, operationId: number): Promise<void> {
  const touched = await tx
    .select()
    .from(mesas)
    .where(
      and(
        eq(mesas.companyId, companyId),
        isNull(mesas.deletedAt),
        eq(mesas.blotterFeedMode, 'auto'),
        sql`exists (select 1 from mesa_accounts ma join transactions t on t.account_id = ma.account_id
                    where ma.mesa_id = ${mesas.id} and ma.released_at is null and t.operation_id = ${operationId})`,
      ),
    )
    .orderBy(mesas.id)
  for (const m of touched) await feedOperation(tx, m, operationId)
}

/** The blotter listens to the ledger; the ledger does not know it is there. */
export const followLedger = (events: DomainEvents) =>
  events.on('operation.*', (tx, event) => syncMesaLines(tx, event.companyId, event.object.id))
