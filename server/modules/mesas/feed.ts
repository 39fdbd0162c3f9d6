import { inArray, sql } from 'drizzle-orm'
import { mesas } from '../../../db/schema'
import { rowsOf, type Tx } from '../../../db/client'
import { fixedStatement } from '../../../db/statement'
import { arrayLiteral, groupBy } from '../../lib/arrays'
import type { DomainEvents } from '../../lib/events'
import { feedOperation } from './service'

const FEED_TARGETS = fixedStatement<{ company: number; operations: string }>(
  (p) => sql`select mesa_id, operation_ids from mesa_feed_targets(${p.company}::int, ${p.operations}::int[])`,
)

/**
 * Runs on the ledger's announcements (`operation.*`), in the same database transaction as the change,
 * so the auto-fed blotter follows the operation (line added when its legs count, dropped on cancel).
 * One probe for all the operations announced together (a batch is one); a company without auto-fed mesas pays
 * that probe of the partial index `mesas_company_auto` and nothing else.
 */
export async function syncMesaLines(tx: Tx, companyId: number, operationIds: number[]): Promise<void> {
  const targets = rowsOf<{ mesa_id: number; operation_ids: number[] }>(
    await FEED_TARGETS(tx, { company: companyId, operations: arrayLiteral(operationIds) }),
  ).filter((t) => t.operation_ids.length > 0)
  if (targets.length === 0) return
  const rows = await tx.select().from(mesas).where(inArray(mesas.id, targets.map((t) => t.mesa_id))).orderBy(mesas.id)
  const fed = rows.map((mesa) => ({ mesa, operations: new Set(targets.find((t) => t.mesa_id === mesa.id)!.operation_ids.map(Number)) }))
  for (const id of operationIds) for (const t of fed) if (t.operations.has(id)) await feedOperation(tx, t.mesa, id)
}

/** The blotter listens to the ledger; the ledger does not know it is there. */
export const followLedger = (events: DomainEvents) =>
  events.on('operation.*', async (tx, announced) => {
    for (const [companyId, events] of groupBy(announced, (e) => e.companyId))
      await syncMesaLines(tx, companyId, events.map((e) => e.object.id))
  })
