/**
 * Approvals per second: through the HTTP API (the app listening on a port in its own process, 32 concurrent
 * clients here) against the same SQL transaction issued directly by postgres.js at the same concurrency, the
 * ceiling the API can approach. Rounds alternate between the two so a change in machine load hits both alike.
 * Runs on a throwaway database it creates and drops; bounded by operation count and a time limit per round.
 *
 *   bun bench/approve.ts     (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS)
 */
import postgres from 'postgres'
import { alternating, driveIds, figure, phase, printFigures, rate } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { serveApp, spawnApp, type ServedApp } from './lib/app'
import { CONCURRENCY, httpApprove, OPS_PER_ROUND, ROUNDS, SECONDS_PER_ROUND, SHARED_ACCOUNTS, sharedAccounts, twoLegOps, WARMUP } from './lib/approvals'


async function main() {
  const db = await createBenchDatabase('fos_bench')
  let server: ServedApp | undefined
  // Idle connections close between rounds, so the two pools never hold 2 × CONCURRENCY sessions for long.
  const direct = postgres(db.url, { max: CONCURRENCY, idle_timeout: 1, onnotice: () => {} })
  try {
    server = await spawnApp(import.meta.path, [db.url])
    const { companyId } = server
    const accounts = await sharedAccounts(direct, companyId, SHARED_ACCOUNTS)
    /** Pending two-leg operations over randomly paired shared accounts, inserted in bulk. */
    const seedOps = (count: number) => twoLegOps(direct, accounts, SHARED_ACCOUNTS, count)
    const http = { errors: 0 }
    const approve = httpApprove(server.base, server.key, http)
    const drive = (ids: number[], fn: (id: number) => Promise<void>, into = phase()) => driveIds(ids, fn, into, CONCURRENCY, SECONDS_PER_ROUND)

    // The statements the approve route issues inside its transaction (company key: no scope condition),
    // including the blotter feed's probe for auto-fed mesas and the event outbox's one statement.
    const viaSql = async (id: number) => {
      await direct.begin(async (q) => {
        await q`select set_config('app.actor_email', '', true), set_config('app.channel', '', true),
                       set_config('app.channel_detail', '', true), set_config('app.company_id', ${String(companyId)}, true),
                       set_config('role', 'fos_app', true)`
        const [op] = await q`select status from operations where id = ${id} and company_id = ${companyId} and true for no key update of operations`
        if (op?.status !== 'pending') throw new Error('operation not pending')
        await q`select id from accounts
                where id in (select account_id from transactions where operation_id = ${id} and status = 'pending' and true)
                order by id for no key update`
        await q`with prev as (
                  select id, account_id, amount, (true) as counted from transactions where operation_id = ${id} and status = 'pending'
                ), moved as (
                  update transactions t set status = 'completed', completed_at = now(), updated_at = now()
                  from prev where t.id = prev.id returning prev.account_id, prev.amount, prev.counted
                ), delta as (
                  select account_id, sum(amount) as d from moved where counted group by account_id
                ), balances as (
                  update accounts a set balance = a.balance + delta.d, updated_at = now()
                  from delta where a.id = delta.account_id returning a.id
                ), op as (
                  update operations set status = 'completed', updated_at = now() where id = ${id} returning id
                )
                select (select count(*) from moved)::int as changed, (select count(*) from balances) as b, (select count(*) from op) as o`
        await q`select * from mesas where company_id = ${companyId} and deleted_at is null and blotter_feed_mode = 'auto'
                and exists (select 1 from mesa_accounts ma join transactions t on t.account_id = ma.account_id
                            where ma.mesa_id = mesas.id and ma.released_at is null and t.operation_id = ${id})
                order by id`
        // The event outbox: the operation rendered as its GET returns it, recorded and queued in one statement.
        await q`with ev as (
                  insert into events (company_id, type, object_kind, object_id, data)
                  values (${companyId}, 'operation.approved', 'operation', ${id}, jsonb_build_object('object', (select jsonb_build_object(
                    'id', o.id, 'company_id', o.company_id, 'operation_type_id', o.operation_type_id, 'client_id', o.client_id,
                    'cost_center_id', o.cost_center_id, 'description', o.description, 'date', to_char(o.date at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'status', o.status,
                    'created_by', o.created_by, 'created_at', to_char(o.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(o.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                    'transactions', coalesce((select jsonb_agg(jsonb_build_object(
                        'id', t.id, 'operation_id', t.operation_id, 'account_id', t.account_id, 'currency', t.currency, 'amount', t.amount::float8,
                        'status', t.status, 'transaction_type_id', t.transaction_type_id, 'is_commission', t.is_commission,
                        'description', t.description, 'created_at', to_char(t.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'updated_at', to_char(t.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) order by t.id)
                      from transactions t where t.operation_id = o.id), '[]'::jsonb),
                    'attachments', coalesce((select jsonb_agg(jsonb_build_object('id', a.id, 'file_name', a.file_name, 'mime_type', a.mime_type,
                        'size_bytes', a.size_bytes, 'created_at', to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'uploaded_by', jsonb_build_object('id', e.id, 'name', e.name, 'email', a.uploaded_by_email)) order by a.id)
                      from operation_attachments a left join employees e on e.company_id = a.company_id and lower(e.email) = lower(a.uploaded_by_email) and e.deleted_at is null
                      where a.operation_id = o.id and a.deleted_at is null), '[]'::jsonb))
                    from operations o where o.id = ${id})) || coalesce(coalesce(
                      (select jsonb_build_object('channel', d.channel, 'requested_by', d.channel_detail -> 'requested_by') from messaging_drafts d where d.operation_id = ${id} limit 1),
                      case when current_setting('app.channel', true) in ('messaging', 'twin') then jsonb_build_object('channel', current_setting('app.channel', true)) end), '{}'::jsonb))
                  returning id
                )
                insert into webhook_deliveries (company_id, endpoint_id, event_id, object_key)
                select ${companyId}, w.id, ev.id, ${'operation:' + id} from ev, webhook_endpoints w
                where w.company_id = ${companyId} and w.enabled and w.deleted_at is null and w.event_types && array['*', 'operation.*', 'operation.approved']::text[]`
      })
    }

    await drive(await seedOps(WARMUP), approve)
    await drive(await seedOps(WARMUP), viaSql)
    http.errors = 0
    const httpPhase = phase()
    const sqlPhase = phase()
    await alternating(ROUNDS, ['http', 'sql'], async (mode) => {
      const ids = await seedOps(OPS_PER_ROUND)
      if (mode === 'http') await drive(ids, approve, httpPhase)
      else await drive(ids, viaSql, sqlPhase)
    })

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a
      where a.company_id = ${companyId}
        and a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    console.log(`approve benchmark: ${CONCURRENCY} concurrent clients, ${SHARED_ACCOUNTS} shared accounts, two legs per operation, ${ROUNDS} alternating rounds`)
    console.log(`  HTTP (POST /api/operations/{id}/approve): ${rate(httpPhase).toFixed(0)} approvals/s (${httpPhase.done} approvals, ${http.errors} non-200)`)
    console.log(`  direct SQL (postgres.js, same transaction): ${rate(sqlPhase).toFixed(0)} approvals/s (${sqlPhase.done} approvals)`)
    console.log(`  ratio HTTP / direct: ${(rate(httpPhase) / rate(sqlPhase)).toFixed(2)} (goal ≥ 0.60)`)
    console.log(`  accounts whose balance differs from the sum of completed amounts: ${bad}`)
    if (bad !== 0 || http.errors !== 0) throw new Error('the ledger broke under load')
    printFigures([figure(`approvals/s over HTTP, ${CONCURRENCY} clients (ceiling: same SQL via postgres.js)`, rate(httpPhase), rate(sqlPhase), 'approvals/s', 'ratio >= 0.6')])
  } finally {
    await server?.stop()
    await direct.end({ timeout: 5 })
    await db.drop()
  }
}

if (process.argv[2] === '--serve') await serveApp(process.argv[3], { poolMax: CONCURRENCY, company: 'Bench' })
else {
  await main()
  process.exit(0)
}
