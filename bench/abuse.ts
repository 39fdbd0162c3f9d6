/**
 * One tenant's heavy work against another tenant's light requests, on the real server (`bun server/main.ts`, default
 * limits, DB_POOL_MAX 10) over a throwaway database:
 *   1. company B's `GET /api/tags` p99 alone (the ceiling), then while company A runs 10 concurrent statement exports
 *      of a client with 100,000 transactions, over and over (goal: at most 2× the idle p99);
 *   2. the same light route while a heavy mixed load runs beside it: the exports, 100-row pages of clients and
 *      operations and operation creates from 48 more connections.
 * Company B sends its requests at a fixed rate (BENCH_LIGHT_RATE per second), as a tenant's ordinary traffic does:
 * sent as fast as answers come back, the light route alone would saturate both cores with itself and its load
 * generator, and its "idle" p99 would be a queue of its own making that any other work merely shares.
 *
 *   bun bench/abuse.ts     (env: BENCH_ADMIN_URL, BENCH_SECONDS, BENCH_EXPORT_ROWS, BENCH_LIGHT_RATE)
 */
import { sql } from 'drizzle-orm'
import { openDatabase } from '../db/client'
import { envNumber, figure, load, percentile, printFigures, type LoadResult } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { startMainServer, type MainServer } from './lib/server'
import { newCompany } from './lib/tenants'

const SECONDS = envNumber('BENCH_SECONDS', 10)
const EXPORT_ROWS = envNumber('BENCH_EXPORT_ROWS', 100_000)
const EXPORTS = 10
const LIGHT_CONNECTIONS = 4
const LIGHT_RATE = envNumber('BENCH_LIGHT_RATE', 200)

async function seed(url: string) {
  const database = await openDatabase({ url, poolMax: 2 })
  const company = async (name: string) => {
    const { companyId, key } = await newCompany(database, name)
    return { id: companyId, key }
  }
  const a = await company('Heavy')
  const b = await company('Light')
  const [{ id: typeId }] = await database.rows<{ id: number }>(sql`insert into operation_types (company_id, name, kind) values (${a.id}, 'Mov', 'other') returning id`)
  const [{ id: clientId }] = await database.rows<{ id: number }>(sql`insert into clients (company_id, name, type) values (${a.id}, 'Externo', 1) returning id`)
  const [{ id: accountId }] = await database.rows<{ id: number }>(
    sql`insert into accounts (company_id, client_id, name, currency_name) values (${a.id}, ${clientId}, 'USD', 'USD') returning id`,
  )
  await database.rows(sql`insert into tags (company_id, name, color) select ${b.id}, 'tag ' || g, '#336699' from generate_series(1, 5) g`)
  // The audit triggers are skipped for the bulk rows: the figures are about reading them.
  await database.db.transaction(async (tx) => {
    await tx.execute(sql`set local session_replication_role = replica`)
    await tx.execute(sql`with ops as (
        insert into operations (company_id, operation_type_id, client_id, status, date)
        select ${a.id}, ${typeId}, ${clientId}, 'completed', now() - (g || ' minutes')::interval from generate_series(1, ${EXPORT_ROWS}) g
        returning id, date)
      insert into transactions (company_id, operation_id, account_id, currency, amount, status, completed_at)
      select ${a.id}, id, ${accountId}, 'USD', (id % 1000) + 0.5, 'completed', date from ops`)
    await tx.execute(sql`update accounts set balance = (select sum(amount) from transactions where account_id = ${accountId}) where id = ${accountId}`)
  })
  await database.rows(sql`analyze`)
  await database.close()
  return { a, b, typeId, clientId, accountId }
}

/** `n` loops fetching the statement until `stop`; counts answers by status and the seconds each full export took. */
function exportLoops(base: string, key: string, clientId: number, n: number) {
  let stopped = false
  const statuses = new Map<number, number>()
  const seconds: number[] = []
  const loops = Array.from({ length: n }, async () => {
    while (!stopped) {
      const started = performance.now()
      try {
        const res = await fetch(`${base}/api/external/clients/${clientId}/statement`, { headers: { 'x-api-key': key } })
        await res.arrayBuffer()
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
        if (res.status === 200) seconds.push((performance.now() - started) / 1000)
        else await Bun.sleep(Number(res.headers.get('retry-after') ?? 1) * 1000)
      } catch {
        statuses.set(0, (statuses.get(0) ?? 0) + 1)
      }
    }
  })
  return {
    async stop() {
      stopped = true
      await Promise.all(loops)
      return { statuses: Object.fromEntries(statuses), seconds }
    },
  }
}

const light = (base: string, key: string) =>
  load({ url: base, connections: LIGHT_CONNECTIONS, rate: LIGHT_RATE, duration: SECONDS, requests: [{ path: '/api/tags', headers: { 'x-api-key': key } }] })

const summary = (r: LoadResult) => ({ requests: r.requests, p50: r.p50, p99: r.p99, max: r.max, non2xx: r.non2xx, errors: r.errors, timeouts: r.timeouts })

async function main() {
  const db = await createBenchDatabase('fos_bench_abuse')
  let server: MainServer | undefined
  try {
    server = await startMainServer({ databaseUrl: db.url, name: 'abuse' })
    const { base } = server
    const seeded = performance.now()
    const { a, b, typeId, accountId, clientId } = await seed(db.url)
    console.log(`seeded ${EXPORT_ROWS} transactions in ${((performance.now() - seeded) / 1000).toFixed(1)} s`)

    await light(base, b.key)
    const idle = await light(base, b.key)
    console.log('idle', JSON.stringify(summary(idle)))

    const exports = exportLoops(base, a.key, clientId, EXPORTS)
    await Bun.sleep(500)
    const during = await light(base, b.key)
    const exported = await exports.stop()
    console.log('during exports', JSON.stringify(summary(during)), 'exports', JSON.stringify(exported.statuses))
    const exportSeconds = exported.seconds.sort((x, y) => x - y)

    const heavyExports = exportLoops(base, a.key, clientId, EXPORTS)
    const create = JSON.stringify({ operation_type_id: typeId, transactions: [{ account_id: accountId, amount: '1.5' }] })
    const heavy = load({
      url: base,
      connections: 48,
      duration: SECONDS + 1,
      requests: [
        { path: '/api/clients?pageSize=100', headers: { 'x-api-key': a.key } },
        { path: '/api/operations?pageSize=100', headers: { 'x-api-key': a.key } },
        { method: 'POST', path: '/api/operations', headers: { 'x-api-key': a.key, 'content-type': 'application/json' }, body: create },
      ],
    })
    await Bun.sleep(500)
    const underHeavy = await light(base, b.key)
    const heavyResult = await heavy
    const heavyExported = await heavyExports.stop()
    console.log('under heavy mixed load', JSON.stringify(summary(underHeavy)), 'heavy', JSON.stringify(summary(heavyResult)), 'exports', JSON.stringify(heavyExported.statuses))

    printFigures([
      figure(`GET /api/tags p99 of another company while ${EXPORTS} exports of a ${EXPORT_ROWS}-transaction client run, vs idle`, during.p99, idle.p99, 'ms', 'ratio <= 2'),
      figure('one statement export of that client, median seconds (while 10 are asked for)', percentile(exportSeconds, 50), null, 's'),
      figure(
        `GET /api/tags p99 of another company under a heavy mixed load (48 connections of lists and creates + ${EXPORTS} exports), vs idle`,
        underHeavy.p99,
        idle.p99,
        'ms',
        null,
      ),
      figure('heavy mixed load: answers other than 2xx (503 overload, 429) of all', heavyResult.non2xx, heavyResult.requests, 'requests', null),
    ])
  } finally {
    await server?.stop()
    await db.drop()
  }
}

await main()
