import { and, asc, eq, isNull } from 'drizzle-orm'
import { mesas } from '../../../db/schema'
import type { Executor } from '../../../db/client'
import type { CostingMethod } from './costing'
import { mesaTrades } from './service'

/**
 * What other features may read of the mesas module, besides the pure costing engine (`./costing`): the blotter
 * of each live mesa of a company, in costing order, ready for `computePosition`. The rest of this folder is the
 * module's own; the home metrics read the day's realized P&L through here.
 */
export async function liveBlotters(db: Executor, companyId: number) {
  const live = await db
    .select()
    .from(mesas)
    .where(and(eq(mesas.companyId, companyId), isNull(mesas.deletedAt)))
    .orderBy(asc(mesas.id))
  const out = []
  for (const m of live)
    out.push({ mesaId: m.id, localCurrency: m.localCurrency, costingMethod: m.costingMethod as CostingMethod, trades: await mesaTrades(db, m) })
  return out
}
