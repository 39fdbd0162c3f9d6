/**
 * The plain-SQL ceilings of the write figures: the rows a route writes, and the audit and event rows beside them, by
 * a postgres.js client in a tenant transaction set up as the app sets one up, with none of the route's checks.
 */
import type postgres from 'postgres'

/** An event the API records for a created record: type, object kind, the object as its GET renders it. */
export type Event = [type: string, kind: string, object: postgres.Row]

/** A tenant transaction as the app opens one: actor, channel, company, role, then the work. */
export const asTenant = (sql: postgres.Sql, companyId: number, fn: (tx: postgres.TransactionSql) => Promise<unknown>) =>
  sql.begin(async (tx) => {
    await tx`select set_config('app.actor_email', '', true), set_config('app.channel', '', true), set_config('app.channel_detail', '', true),
      set_config('app.company_id', ${String(companyId)}, true), set_config('transaction_read_only', 'off', true), set_config('role', 'fos_app', true)`
    await fn(tx)
  })

/** The event rows the API writes beside each created record (the outbox), from the rows just inserted, in one statement. */
export const outbox = (tx: postgres.TransactionSql, companyId: number, events: Event[]) =>
  tx`insert into events (company_id, type, object_kind, object_id, data)
    select ${companyId}, e.type, e.kind, e.id, jsonb_build_object('object', e.object)
    from jsonb_to_recordset(${tx.json(events.map(([type, kind, object]) => ({ type, kind, id: object.id, object })) as never)}::jsonb)
      as e(type text, kind text, id int, object jsonb)`

/** One pending operation of three transactions over accounts `account()` picks, with its event. */
export const plainOperationCreate = (sql: postgres.Sql, companyId: number, typeId: number, account: () => number) =>
  asTenant(sql, companyId, async (tx) => {
    const [op] = await tx`insert into operations (company_id, operation_type_id, status) values (${companyId}, ${typeId}, 'pending') returning *`
    const transactions = await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
      values (${companyId}, ${op.id}, ${account()}, 'ARS', 100, 'pending'), (${companyId}, ${op.id}, ${account()}, 'ARS', -60, 'pending'),
             (${companyId}, ${op.id}, ${account()}, 'ARS', -40, 'pending') returning *`
    await outbox(tx, companyId, [['operation.created', 'operation', { ...op, transactions, attachments: [] }]])
  })
