import { sql, type SQL, type AnyColumn } from 'drizzle-orm'
import { clientScope, type Caller } from '../access/caller'

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
