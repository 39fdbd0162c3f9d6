import { eq } from 'drizzle-orm'
import { accounts, clients, costCenters } from '../../db/schema'
import type { Executor } from '../../db/client'
import { unprocessable } from './errors'

// Records one feature writes point at records of another (an operation's client, a tool's accounts): every writer
// checks such a reference the same way, without reaching into the owning feature.
//
// Each lookup goes by primary key alone and checks the company on the row it finds. A company condition beside the
// id lets the planner start from the company's index, which is right only while the statistics know the tenant;
// with rows added since the last ANALYZE, or a tenant the sample missed, it walks the company's rows for one id.
// Another company's id is then as unknown as one that does not exist.

/** A reference to a live client of the company inside a new record; 422 `UNKNOWN_CLIENT` naming `field` otherwise. */
export async function requireLiveClient(db: Executor, companyId: number, id: number, field = 'client_id') {
  const [client] = await db
    .select({ id: clients.id, type: clients.type, companyId: clients.companyId, deletedAt: clients.deletedAt })
    .from(clients)
    .where(eq(clients.id, id))
  if (!client || client.companyId !== companyId || client.deletedAt !== null)
    throw unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field, message: `unknown client ${id}` }])
  return { id: client.id, type: client.type }
}

/** The cost center row of the caller's company, or null. */
export async function findCostCenter(db: Executor, companyId: number, id: number) {
  const [row] = await db.select().from(costCenters).where(eq(costCenters.id, id))
  return row?.companyId === companyId ? row : null
}

/** An account of a live client of the company with that client's type, or null. */
export async function findAccount(db: Executor, companyId: number, id: number) {
  const [row] = await db
    .select({
      id: accounts.id,
      clientId: accounts.clientId,
      currency: accounts.currencyName,
      clientType: clients.type,
      companyId: accounts.companyId,
      deletedAt: clients.deletedAt,
    })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(eq(accounts.id, id))
  if (!row || row.companyId !== companyId || row.deletedAt !== null) return null
  return { id: row.id, clientId: row.clientId, currency: row.currency, clientType: row.clientType }
}
