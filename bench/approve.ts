/**
 * Approvals per second: through the HTTP API (the app listening on a port in its own process, 32 concurrent
 * clients here) against the same SQL transaction issued directly by postgres.js at the same concurrency, the
 * ceiling the API can approach. Rounds alternate between the two so a change in machine load hits both alike.
 * Runs on a throwaway database it creates and drops; bounded by operation count and a time limit per round.
 *
 *   bun bench/approve.ts     (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS)
 */
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../server/config'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { createStore } from '../server/infra/storage'
import { issueKey } from '../server/access/keys'
import { figure, printFigures } from './lib/common'
import { DomainEvents } from '../server/lib/events'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const OPS_PER_ROUND = Number(process.env.BENCH_OPS ?? 1000)
const SECONDS_PER_ROUND = Number(process.env.BENCH_SECONDS ?? 15)
const ACCOUNTS = 256
const WARMUP = 200

/** The server side: the app as `bun run start` builds it (minus request logging), on a free port. */
async function serve(url: string) {
  const database = await openDatabase({ url, poolMax: CONCURRENCY })
  const config = {
    ...loadConfig({ DATA_DIR: `/tmp/fos-bench-${process.pid}`, SIGNING_SECRET: 'bench-signing-secret-0123456789' }),
    databaseUrl: url,
    rateLimit: { perKey: 0, perIp: 0 },
  }
  const ctx: AppContext = { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log: () => {}, events: new DomainEvents() }
  const [{ id: companyId }] = await database.rows<{ id: number }>(sql`insert into companies (name) values ('Bench') returning id`)
  const key = await database.db.transaction((tx) => issueKey(tx, companyId, null, 'bench'))
  const listening = createApp(ctx).listen({ port: 0, idleTimeout: 0 })
  console.log(JSON.stringify({ port: listening.server!.port, key: key.key, companyId }))
  // The parent holds our stdin; when it goes away, so do we.
  for await (const _ of Bun.stdin.stream());
  await listening.stop(true)
  await database.close()
  process.exit(0)
}

interface Phase {
  done: number
  seconds: number
  cpuMs: number
}

/** Runs `fn` over the ids with `CONCURRENCY` workers until the ids or the time run out. */
async function drive(ids: number[], fn: (id: number) => Promise<void>, into: Phase) {
  const cpu = process.cpuUsage()
  const started = performance.now()
  const deadline = started + SECONDS_PER_ROUND * 1000
  let next = 0
  const worker = async () => {
    while (next < ids.length && performance.now() < deadline) {
      await fn(ids[next++])
      into.done++
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  into.seconds += (performance.now() - started) / 1000
  const used = process.cpuUsage(cpu)
  into.cpuMs += (used.user + used.system) / 1000
}

async function main() {
  const dbName = `fos_bench_${process.pid}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const dbUrl = new URL(ADMIN_URL)
  dbUrl.pathname = `/${dbName}`
  await admin.unsafe(`create database ${dbName}`)
  const server = Bun.spawn([process.execPath, import.meta.path, '--serve', dbUrl.toString()], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  // Idle connections close between rounds, so the two pools never hold 2 × CONCURRENCY sessions for long.
  const direct = postgres(dbUrl.toString(), { max: CONCURRENCY, idle_timeout: 1, onnotice: () => {} })
  try {
    const reader = server.stdout.getReader()
    let text = ''
    while (!text.includes('\n')) {
      const { value, done } = await reader.read()
      if (done) throw new Error('server exited before listening')
      text += new TextDecoder().decode(value)
    }
    const { port, key, companyId } = JSON.parse(text.split('\n')[0]) as { port: number; key: string; companyId: number }
    const base = `http://127.0.0.1:${port}`

    const [{ id: typeId }] = await direct`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
    const [{ id: clientId }] = await direct`insert into clients (company_id, name, type) values (${companyId}, 'Caja', 0) returning id`
    await direct`insert into accounts (company_id, client_id, name, currency_name)
      select ${companyId}, ${clientId}, 'A' || g, 'ARS' from generate_series(1, ${ACCOUNTS}) g`
    const [{ low }] = await direct`select min(id)::int as low from accounts where company_id = ${companyId}`

    /** Pending two-leg operations over randomly paired shared accounts, inserted in bulk. */
    const seedOps = async (count: number): Promise<number[]> => {
      const rows = await direct`insert into operations (company_id, operation_type_id, status)
        select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${count}) returning id`
      const ids = rows.map((r) => r.id as number)
      await direct`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
        select ${companyId}, o.id, ${low} + floor(random() * ${ACCOUNTS})::int, 'ARS', s * 12.345678, 'pending'
        from unnest(${ids}::int[]) o(id), (values (1), (-1)) v(s)`
      return ids
    }

    let httpErrors = 0
    const viaHttp = async (id: number) => {
      const res = await fetch(`${base}/api/operations/${id}/approve`, { method: 'POST', headers: { 'x-api-key': key } })
      await res.arrayBuffer()
      if (res.status !== 200) httpErrors++
    }

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

    const scratch: Phase = { done: 0, seconds: 0, cpuMs: 0 }
    await drive(await seedOps(WARMUP), viaHttp, scratch)
    await drive(await seedOps(WARMUP), viaSql, scratch)
    httpErrors = 0
    const http: Phase = { done: 0, seconds: 0, cpuMs: 0 }
    const sqlPhase: Phase = { done: 0, seconds: 0, cpuMs: 0 }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['http', 'sql'] as const) : (['sql', 'http'] as const)
      for (const mode of order) {
        const ids = await seedOps(OPS_PER_ROUND)
        if (mode === 'http') await drive(ids, viaHttp, http)
        else await drive(ids, viaSql, sqlPhase)
      }
    }

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a
      where a.company_id = ${companyId}
        and a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    const rate = (p: Phase) => p.done / p.seconds
    console.log(`approve benchmark: ${CONCURRENCY} concurrent clients, ${ACCOUNTS} shared accounts, two legs per operation, ${ROUNDS} alternating rounds`)
    console.log(`  HTTP (POST /api/operations/{id}/approve): ${rate(http).toFixed(0)} approvals/s (${http.done} approvals, ${httpErrors} non-200)`)
    console.log(`  direct SQL (postgres.js, same transaction): ${rate(sqlPhase).toFixed(0)} approvals/s (${sqlPhase.done} approvals)`)
    console.log(`  ratio HTTP / direct: ${(rate(http) / rate(sqlPhase)).toFixed(2)} (goal ≥ 0.60)`)
    console.log(`  accounts whose balance differs from the sum of completed amounts: ${bad}`)
    if (bad !== 0 || httpErrors !== 0) throw new Error('the ledger broke under load')
    printFigures([figure(`approvals/s over HTTP, ${CONCURRENCY} clients (ceiling: same SQL via postgres.js)`, rate(http), rate(sqlPhase), 'approvals/s', 'ratio >= 0.6')])
  } finally {
    server.stdin.end()
    await Promise.race([server.exited, Bun.sleep(10_000)])
    if (server.exitCode === null) server.kill()
    await direct.end({ timeout: 5 })
    await admin.unsafe(`drop database if exists ${dbName} with (force)`)
    await admin.end({ timeout: 5 })
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3])
else {
  await main()
  process.exit(0)
}
