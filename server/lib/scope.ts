import { and, eq, sql, type SQL, type AnyColumn } from 'drizzle-orm'
import { operations } from '../../db/schema'
import type { Executor } from '../../db/client'
import { clientScope, type Caller } from '../access/caller'
import { notFound } from './errors'

/**
 * The client-scope rule as one SQL condition on an operation id: true for unscoped callers; for an employee
 * with client_ids, the operation's client is one of them or one of its transactions moves an account of one.
 */
export function operationVisible(caller: Caller, operationId: AnyColumn | SQL): SQL {
  const ids = clientScope(caller)
  if (!ids) return sql`true`
  const list = sql`${`{${ids.join(',')}}`}::int[]`
  return sql`(exists (select 1 from operations so where so.id = ${operationId} and so.client_id = any(${list}))
    or exists (select 1 from transactions st join accounts sa on sa.id = st.account_id
               where st.operation_id = ${operationId} and sa.client_id = any(${list})))`
}

/** 404 unless the operation exists in the caller's company and inside the caller's client scope. */
export async function assertOperationVisible(db: Executor, caller: Caller, id: number): Promise<void> {
  const [row] = await db
    .select({ id: operations.id })
    .from(operations)
    .where(and(eq(operations.id, id), eq(operations.companyId, caller.companyId), operationVisible(caller, operations.id)))
  if (!row) throw notFound('Operation')
}
