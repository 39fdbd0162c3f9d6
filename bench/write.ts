/**
 * The write path at real tenant sizes, each figure beside its plain-SQL ceiling measured in the same run, for a tenant
 * of 5,000 and of 50,000 clients (two accounts each) in two states of statistics:
 *
 * - fresh: the tenant's rows were added after the last ANALYZE (a branch migrating its data into a new database);
 * - skewed: 99 other tenants fill the statistics and the tenant, added after the last ANALYZE, is missing from them.
 *
 * Autovacuum is off on the tables, so the state holds for the whole measurement. Figures, each per state:
 *
 * - client creates, 16 in flight: `POST /api/clients` (two accounts) vs the same rows inserted by plain SQL in a
 *   tenant transaction (role, settings and audit triggers as the app's);
 * - operation creates, 16 in flight: `POST /api/operations` (three transactions over random accounts of the tenant)
 *   vs the same rows by plain SQL;
 * - batches of 1,000 operations of three transactions: `POST /api/operations/batch` vs the same rows inserted
 *   set-based (two statements) by plain SQL; and the time of one batch;
 * - batches of 1,000 clients with two accounts: `POST /api/clients/batch` vs set-based plain SQL;
 * - approvals, 32 in flight: `POST /api/operations/{id}/approve` vs the statements the route sends (captured from one
 *   real request, authentication included) replayed prepared by postgres.js;
 * - `GET /api/clients` page of 50 with accounts and tags, 64 in flight: requests/s and p99 vs its captured statements
 *   replayed the same way.
 *
 * HTTP and SQL phases alternate within each figure. The server is the app in its own process on a free port, with a
 * pool of 16 connections; the SQL ceilings use a pool of the same size.
 *
 *   bun bench/write.ts   (env: BENCH_ADMIN_URL, BENCH_WRITE_SIZES=5000,50000, BENCH_SECONDS=5, BENCH_BATCHES=2, BENCH_OTHER_CLIENTS=2000)
 */
import postgres from 'postgres'
import { loadConfig } from '../server/config'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { createStore } from '../server/infra/storage'
import { DomainEvents } from '../server/lib/events'
import { captureRoute, replay, type Statement } from './lib/capture'
import { figure, percentile, printFigures, type Figure } from './lib/common'
import { freezeStatistics, newCompany, seedOthers, seedTenant } from './lib/tenants'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SIZES = (process.env.BENCH_WRITE_SIZES ?? '5000,50000').split(',').map(Number)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const BATCHES = Number(process.env.BENCH_BATCHES ?? 2)
const OTHER_CLIENTS = Number(process.env.BENCH_OTHER_CLIENTS ?? 2000)
const OTHER_OPERATIONS = 500
const POOL = 16
const IN_FLIGHT = 16
const APPROVERS = 32
const READERS = 64
const BATCH = 1000
/** Pending operations made for each approval phase; more than a phase gets through. */
const APPROVALS = Number(process.env.BENCH_APPROVALS ?? 6000)

async function serve(url: string) {
  const database = await openDatabase({ url, poolMax: POOL })
  const config = {
    ...loadConfig({ DATA_DIR: `/tmp/fos-bench-${process.pid}`, SIGNING_SECRET: 'bench-signing-secret-0123456789' }),
    databaseUrl: url,
    rateLimit: { perKey: 0, perIp: 0 },
  }
  const ctx: AppContext = { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log: () => {}, events: new DomainEvents() }
  const listening = createApp(ctx).listen({ port: 0, idleTimeout: 0 })
  console.log(JSON.stringify({ port: listening.server!.port }))
  for await (const _ of Bun.stdin.stream());
  await listening.stop(true)
  await database.close()
  process.exit(0)
}

interface Run {
  done: number
  seconds: number
  latencies: number[]
}

/** `workers` loops calling `fn` until `seconds` pass (or `fn` says there is no more work). */
async function timed(workers: number, seconds: number, fn: () => Promise<boolean | void>): Promise<Run> {
  const latencies: number[] = []
  const started = performance.now()
  const deadline = started + seconds * 1000
  let stop = false
  const worker = async () => {
    while (!stop && performance.now() < deadline) {
      const t0 = performance.now()
      if ((await fn()) === false) {
        stop = true
        return
      }
      latencies.push(performance.now() - t0)
    }
  }
  await Promise.all(Array.from({ length: workers }, worker))
  return { done: latencies.length, seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) }
}

const rate = (r: Run) => r.done / r.seconds

async function main() {
  const dbName = `fos_bench_write_${process.pid}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const url = new URL(ADMIN_URL)
  url.pathname = `/${dbName}`
  await admin.unsafe(`create database ${dbName}`)
  const database = await openDatabase({ url: url.toString(), poolMax: 2 })
  const server = Bun.spawn([process.execPath, import.meta.path, '--serve', url.toString()], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const owner = postgres(url.toString(), { max: 1, onnotice: () => {} })
  const direct = postgres(url.toString(), { max: POOL, onnotice: () => {} })
  const figures: Figure[] = []
  try {
    const reader = server.stdout.getReader()
    let text = ''
    while (!text.includes('\n')) {
      const { value, done } = await reader.read()
      if (done) throw new Error('server exited before listening')
      text += new TextDecoder().decode(value)
    }
    const base = `http://127.0.0.1:${(JSON.parse(text.split('\n')[0]) as { port: number }).port}`

    const measure = async (state: string, size: number) => {
      const label = `${state}, ${size.toLocaleString('en')} clients`
      const started = performance.now()
      const { companyId, key } = await newCompany(database, `${state} ${size}`)
      const t = await seedTenant(owner, companyId, size, 0)
      const { accountIds, typeId } = t
      const randomAccount = () => accountIds[Math.floor(Math.random() * accountIds.length)]
      const post = async (path: string, body?: unknown) => {
        const res = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: { 'x-api-key': key, ...(body !== undefined && { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        const answer = await res.text()
        if (res.status !== 200 && res.status !== 201) throw new Error(`${path}: ${res.status} ${answer.slice(0, 300)}`)
        return JSON.parse(answer)
      }
      /** A tenant transaction as the app opens one: actor, channel, company, role, then the work. */
      const asTenant = (fn: (tx: postgres.TransactionSql) => Promise<unknown>) =>
        direct.begin(async (tx) => {
          await tx`select set_config('app.actor_email', '', true), set_config('app.channel', '', true), set_config('app.channel_detail', '', true),
            set_config('app.company_id', ${String(companyId)}, true), set_config('transaction_read_only', 'off', true), set_config('role', 'fos_app', true)`
          await fn(tx)
        })
      const operationBody = () => ({
        operation_type_id: typeId,
        transactions: [
          { account_id: randomAccount(), amount: '100' },
          { account_id: randomAccount(), amount: '-60' },
          { account_id: randomAccount(), amount: '-40' },
        ],
      })
      const pair = async (name: string, unit: string, goal: string, http: () => Promise<Run>, sql: () => Promise<Run>) => {
        const a = await http()
        const b = await sql()
        console.log(`  ${label}: ${name}: ${rate(a).toFixed(1)} vs ${rate(b).toFixed(1)} ${unit}`)
        figures.push(figure(`${name}, ${label}`, rate(a), rate(b), unit, goal))
        return [a, b]
      }

      await pair(
        `client creates (2 accounts), ${IN_FLIGHT} in flight: HTTP vs plain SQL`,
        'clients/s',
        'ratio >= 0.6',
        () => timed(IN_FLIGHT, SECONDS, () => post('/api/clients', { name: 'Alta', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })),
        () =>
          timed(IN_FLIGHT, SECONDS, () =>
            asTenant(async (tx) => {
              const [{ id }] = await tx`insert into clients (company_id, name, description, type) values (${companyId}, 'Alta', '', 1) returning id`
              await tx`insert into accounts (company_id, client_id, name, currency_name) values (${companyId}, ${id}, 'ARS', 'ARS'), (${companyId}, ${id}, 'USD', 'USD')`
            }),
          ),
      )

      await pair(
        `operation creates (3 transactions), ${IN_FLIGHT} in flight: HTTP vs plain SQL`,
        'operations/s',
        'ratio >= 0.6',
        () => timed(IN_FLIGHT, SECONDS, () => post('/api/operations', operationBody())),
        () =>
          timed(IN_FLIGHT, SECONDS, () =>
            asTenant(async (tx) => {
              const [{ id }] = await tx`insert into operations (company_id, operation_type_id, status) values (${companyId}, ${typeId}, 'pending') returning id`
              await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
                values (${companyId}, ${id}, ${randomAccount()}, 'ARS', 100, 'pending'), (${companyId}, ${id}, ${randomAccount()}, 'ARS', -60, 'pending'),
                       (${companyId}, ${id}, ${randomAccount()}, 'ARS', -40, 'pending')`
            }),
          ),
      )

      const [httpBatch, sqlBatch] = await pair(
        `operations in batches of ${BATCH} (3 transactions each): HTTP vs set-based plain SQL`,
        'operations/s',
        'ratio >= 0.8',
        async () => {
          const runs: number[] = []
          for (let i = 0; i < BATCHES; i++) {
            const body = { operations: Array.from({ length: BATCH }, operationBody) }
            const t0 = performance.now()
            await post('/api/operations/batch', body)
            runs.push(performance.now() - t0)
          }
          return { done: BATCH * BATCHES, seconds: runs.reduce((a, b) => a + b, 0) / 1000, latencies: runs.sort((a, b) => a - b) }
        },
        async () => {
          const runs: number[] = []
          for (let i = 0; i < BATCHES; i++) {
            const legs = Array.from({ length: BATCH * 3 }, randomAccount)
            const t0 = performance.now()
            await asTenant(async (tx) => {
              const ops = await tx`insert into operations (company_id, operation_type_id, status)
                select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${BATCH}) returning id`
              const ids = ops.map((o) => o.id as number).sort((a, b) => a - b)
              await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
                select ${companyId}, u.op, u.account, 'ARS', u.amount, 'pending'
                from unnest(${ids.flatMap((id) => [id, id, id])}::int[], ${legs}::int[], ${Array.from({ length: BATCH }, () => ['100', '-60', '-40']).flat()}::numeric[]) as u(op, account, amount)`
            })
            runs.push(performance.now() - t0)
          }
          return { done: BATCH * BATCHES, seconds: runs.reduce((a, b) => a + b, 0) / 1000, latencies: runs.sort((a, b) => a - b) }
        },
      )
      figures.push(figure(`one batch of ${BATCH} operations over HTTP (median), ${label}`, percentile(httpBatch.latencies, 50), percentile(sqlBatch.latencies, 50), 'ms', '<= 1000'))

      const clientBatch = await fetch(`${base}/api/clients/batch`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' })
      await clientBatch.arrayBuffer()
      if (clientBatch.status === 404) console.log(`  ${label}: POST /api/clients/batch is not served; its figure is left out`)
      else
        await pair(
          `clients in batches of ${BATCH} (2 accounts each): HTTP vs set-based plain SQL`,
          'clients/s',
          'ratio >= 0.8',
          async () => {
            const runs: number[] = []
            for (let i = 0; i < BATCHES; i++) {
              const body = { clients: Array.from({ length: BATCH }, (_, j) => ({ name: `Lote ${j}`, type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })) }
              const t0 = performance.now()
              await post('/api/clients/batch', body)
              runs.push(performance.now() - t0)
            }
            return { done: BATCH * BATCHES, seconds: runs.reduce((a, b) => a + b, 0) / 1000, latencies: runs }
          },
          async () => {
            const runs: number[] = []
            for (let i = 0; i < BATCHES; i++) {
              const t0 = performance.now()
              await asTenant(async (tx) => {
                const rows = await tx`insert into clients (company_id, name, description, type)
                  select ${companyId}, 'Lote ' || g, '', 1 from generate_series(1, ${BATCH}) g returning id`
                await tx`insert into accounts (company_id, client_id, name, currency_name)
                  select ${companyId}, c, v.cur, v.cur from unnest(${rows.map((r) => r.id as number)}::int[]) c cross join (values ('ARS'), ('USD')) v(cur)`
              })
              runs.push(performance.now() - t0)
            }
            return { done: BATCH * BATCHES, seconds: runs.reduce((a, b) => a + b, 0) / 1000, latencies: runs }
          },
        )

      // Approvals: pending operations of three transactions, made in bulk; each phase takes its own.
      const pendingOps = (count: number) =>
        owner.begin(async (tx) => {
          await tx`set local session_replication_role = replica`
          const ops = await tx`insert into operations (company_id, operation_type_id, status) select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${count}) returning id`
          const ids = ops.map((o) => o.id as number)
          await tx`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
            select ${companyId}, o, ${accountIds[0]}::int + floor(random() * ${accountIds.length})::int, 'ARS', v.amount, 'pending'
            from unnest(${ids}::int[]) o cross join (values (100), (-60), (-40)) v(amount)`
          return ids
        })
      const [captureId, ...httpIds] = await pendingOps(1 + APPROVALS)
      const sqlIds = await pendingOps(APPROVALS)
      const approve = await captureRoute(url.toString(), `/api/operations/${captureId}/approve`, key, { method: 'POST' })
      const withId = (id: number): Statement[] => approve.map(([text, params]) => [text, params.map((p) => (p === captureId || p === String(captureId) ? (typeof p === 'number' ? id : String(id)) : p))])
      let h = 0
      let s = 0
      await pair(
        `approvals, ${APPROVERS} in flight: HTTP vs the route's statements replayed`,
        'approvals/s',
        'ratio >= 0.8',
        () => timed(APPROVERS, SECONDS, async () => (h < httpIds.length ? void (await post(`/api/operations/${httpIds[h++]}/approve`)) : false)),
        () => timed(APPROVERS, SECONDS, async () => (s < sqlIds.length ? replay(direct, withId(sqlIds[s++])) : false)),
      )

      const page = '/api/clients?page=2&pageSize=50'
      const list = await captureRoute(url.toString(), page, key)
      const [httpList, sqlList] = await pair(
        `GET /api/clients page of 50, ${READERS} in flight: HTTP vs its statements replayed`,
        'req/s',
        'ratio >= 0.8',
        () =>
          timed(READERS, SECONDS, async () => {
            const res = await fetch(`${base}${page}`, { headers: { 'x-api-key': key } })
            await res.arrayBuffer()
            if (res.status !== 200) throw new Error(`${page}: ${res.status}`)
          }),
        () => timed(READERS, SECONDS, () => replay(direct, list)),
      )
      figures.push(figure(`GET /api/clients p99, ${READERS} in flight, ${label}`, percentile(httpList.latencies, 99), percentile(sqlList.latencies, 99), 'ms', 'ratio <= 1.2'))
      console.log(`  ${label}: done in ${((performance.now() - started) / 1000).toFixed(0)} s`)
    }

    await freezeStatistics(owner)
    for (const size of SIZES) await measure('fresh statistics', size)
    await seedOthers(owner, database, 99, OTHER_CLIENTS, OTHER_OPERATIONS)
    await owner.unsafe('analyze')
    for (const size of SIZES) await measure('99 other tenants in the statistics', size)

    const [{ bad }] = await owner`select count(*)::int as bad from accounts a
      where a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    console.log(`accounts whose balance differs from the sum of their completed transactions: ${bad}`)
    if (bad !== 0) throw new Error('the ledger broke under load')
    printFigures(figures)
  } finally {
    server.stdin.end()
    await Promise.race([server.exited, Bun.sleep(10_000)])
    if (server.exitCode === null) server.kill()
    await direct.end({ timeout: 5 })
    await owner.end({ timeout: 5 })
    await database.close()
    await admin.unsafe(`drop database if exists ${dbName} with (force)`)
    await admin.end({ timeout: 5 })
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3])
else {
  await main()
  process.exit(0)
}
