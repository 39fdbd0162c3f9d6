import { and, eq, isNull } from 'drizzle-orm'
import { clients } from '../../db/schema'
import type { Executor } from '../../db/client'
import { unprocessable } from './errors'

/** A reference to a live client of the company inside a new record; 422 `UNKNOWN_CLIENT` naming `field` otherwise. */
export async function requireLiveClient(db: Executor, companyId: number, id: number, field = 'client_id') {
  const [client] = await db
    .select({ id: clients.id, type: clients.type })
    .from(clients)
    .where(and(eq(clients.id, id), eq(clients.companyId, companyId), isNull(clients.deletedAt)))
  if (!client) throw unprocessable('UNKNOWN_CLIENT', 'Unknown client', [{ field, message: `unknown client ${id}` }])
  return client
}
