import { and, eq, isNull } from 'drizzle-orm'
import { accounts, clients, costCenters } from '../../db/schema'
import type { Executor } from '../../db/client'
import { unprocessable } from './errors'

// Records one feature writes point at records of another (an operation's client, a tool's accounts): every writer
// checks such a reference the same way, without reaching into the owning feature.

/** A reference to a live client of the company inside a new record; 422 `UNKNOWN_CLIENT` naming `field` otherwise. */
export async function requireLiveClient(db: Executor, companyId: number, id: number, field = 'client_id') {
  const [client] = await db
    .select({ id: clients.id, type: clients.type })
    .from(clients)
    .where(and(eq(clients.id, id), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
  if (!client) throw unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field, message: `unknown client ${id}` }])
  return client
}

/** The cost center row of the caller's company, or null. */
export async function findCostCenter(db: Executor, companyId: number, id: number) {
  const [row] = await db
    .select()
    .from(costCenters)
    .where(and(eq(costCenters.id, id), eq(costCenters.companyId, companyId)))
  return row ?? null
}

/** An account of a live client of the company with that client's type, or null. */
export async function findAccount(db: Executor, companyId: number, id: number) {
  const [row] = await db
    .select({ id: accounts.id, clientId: accounts.clientId, currency: accounts.currencyName, clientType: clients.type })
    .from(accounts)
    .innerJoin(clients, eq(clients.id, accounts.clientId))
    .where(and(eq(accounts.id, id), eq(accounts.companyId, companyId), isNull(clients.deletedAt)))
  return row ?? null
}
