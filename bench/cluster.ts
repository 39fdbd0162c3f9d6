/**
 * What running past one process costs: approvals/s and reads/s through scripts/cluster.sh (three processes behind
 * HAProxy, PgBouncer in transaction pooling) against one process reaching Postgres directly, both at the same
 * concurrency and the same number of Postgres server connections. On a small machine the point is the overhead,
 * not a speed-up. The parts are priced apart: the same three processes called directly (PgBouncer without
 * HAProxy), and two more single processes on the same database, one in DATABASE_POOL_MODE=transaction without a
 * pooler (no prepared statements: parameters written in as literals), one with the shared rate limit on (a budget
 * no run reaches, so only its cost shows). Last, one approve's own statements replayed a transaction at a time on one
 * connection, prepared vs with the parameters as literals vs plain unnamed, show what is left without HTTP, pooler
 * and concurrency: round trips and the database's parse and plan.
 *
 * A throwaway database with a small read data set made here in seconds (not bench/generate.ts's large one):
 * 2,000 clients with two accounts each and 20,000 two-leg operations. Rounds alternate the order of the targets
 * (A B C D E, then E D C B A, and again) so drifting machine load hits each alike. Every process it starts stops at the end.
 *
 *   bun bench/cluster.ts   (env: BENCH_ADMIN_URL, BENCH_SECONDS=4, BENCH_ROUNDS=4, BENCH_CONCURRENCY=32)
 */
import postgres from 'postgres'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { openDatabase } from '../db/client'
import { alternating, distinctPorts, envNumber, figure, type Figure, load, printFigures, rate, SIGNING_SECRET, timed } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { startMainServer } from './lib/server'
import { newCompany } from './lib/tenants'
import { twoLegOps } from './lib/approvals'
import { aboutOperation, captureRoute, replay } from './lib/capture'
import { startCluster } from '../scripts/cluster'

const SECONDS = envNumber('BENCH_SECONDS', 4)
/** Short rounds, many of them: on a shared machine the load drifts within seconds, and alternation spreads it evenly. */
const ROUNDS = envNumber('BENCH_ROUNDS', 4)
const CONCURRENCY = envNumber('BENCH_CONCURRENCY', 32)
/**
 * Postgres server connections on either side: the single process's pool, PgBouncer's pool for the three. Four
 * times the cores of a 2-core machine, and small enough that the five layouts alive at once (about 50 connections)
 * fit beside other work under a stock max_connections of 100.
 */
const SERVER_CONNECTIONS = 8
const ACCOUNTS = 256
/** Approve transactions replayed per mode, over the rounds. */
const REPLAYS = envNumber('BENCH_REPLAYS', 200)

interface Target {
  name: string
  /** Where the load goes: one address, or the processes' own addresses shared out among the clients. */
  bases: string[]
  stop: () => Promise<void>
}

const children: Subprocess[] = []

async function single(name: string, dbUrl: string, env: Record<string, string>): Promise<Target> {
  const server = await startMainServer({ databaseUrl: dbUrl, name: 'cluster', env: { DB_POOL_MAX: String(SERVER_CONNECTIONS), SIGNING_SECRET, ...env } })
  children.push(server.proc)
  return { name, bases: [server.base], stop: server.stop }
}

/** The cluster through HAProxy, and the same three processes called directly (PgBouncer's cost without HAProxy's). */
async function cluster(dbUrl: string): Promise<[Target, Target]> {
  const dir = mkdtempSync(join(tmpdir(), 'fos-bench-cluster-'))
  const running = await startCluster({
    databaseUrl: dbUrl,
    dir,
    ports: distinctPorts(5),
    env: {
      CLUSTER_POOL_SIZE: String(SERVER_CONNECTIONS),
      DB_POOL_MAX: String(Math.ceil(SERVER_CONNECTIONS / 2)),
      RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_IP_PER_MINUTE: '0',
    },
  })
  children.push(running.proc)
  const stop = async () => {
    await running.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  return [
    { name: 'cluster', bases: [running.base], stop },
    { name: '3 processes via PgBouncer, no HAProxy', bases: running.serverBases, stop: async () => {} },
  ]
}

async function main() {
  for (const bin of ['haproxy', 'pgbouncer'])
    if (!['/usr/sbin', '/usr/bin'].some((d) => existsSync(join(d, bin)))) {
      console.log(`${bin} is not installed (Debian: apt-get install ${bin}); nothing to measure`)
      printFigures([])
      return
    }
  const db = await createBenchDatabase('fos_bench_cluster')
  const dbUrl = db.url
  const targets: Target[] = []
  try {
    // Migrations, a company, its key and the data set, before any server starts.
    const database = await openDatabase({ url: dbUrl, poolMax: 2 })
    const { companyId, key } = await newCompany(database, 'Bench')
    await database.close()
    // One session, with triggers off while seeding: the audit trail of bulk test data is not what is measured.
    const direct = postgres(dbUrl, { max: 1, onnotice: () => {} })
    await direct`set session_replication_role = replica`
    const seeding = performance.now()
    const [{ id: typeId }] = await direct`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
    await direct`insert into clients (company_id, name, type, description)
      select ${companyId}, 'Cliente ' || g, 1, case when g % 10 = 0 then 'mayorista' else '' end from generate_series(1, 2000) g`
    await direct`insert into accounts (company_id, client_id, name, currency_name)
      select ${companyId}, c.id, cur, cur from clients c, (values ('ARS'), ('USD')) v(cur) where c.company_id = ${companyId}`
    const [{ low, high }] = await direct`select min(id)::int as low, max(id)::int as high from accounts where company_id = ${companyId}`
    const legs = { companyId, typeId: typeId as number, low: low as number }
    const seedOps = (count: number, status: 'pending' | 'completed', span: number) => twoLegOps(direct, legs, span, count, status)
    await seedOps(20_000, 'completed', high - low + 1)
    await direct`update accounts a set balance = coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)
      where a.company_id = ${companyId}`
    await direct`analyze`
    console.log(`read data set: 2,000 clients, 4,000 accounts, 20,000 operations in ${((performance.now() - seeding) / 1000).toFixed(1)} s`)

    const one = await single('1 process, direct', dbUrl, {})
    targets.push(one)
    const [three, pooled] = await cluster(dbUrl)
    targets.push(three, pooled)
    const unprepared = await single('1 process, direct, pool mode transaction', dbUrl, { DATABASE_POOL_MODE: 'transaction' })
    targets.push(unprepared)
    const limited = await single('1 process, direct, shared rate limit on', dbUrl, { RATE_LIMIT_PER_MINUTE: '1000000' })
    targets.push(limited)

    const approvals = async (t: Target, seconds = SECONDS) => {
      const ids = await seedOps(6000, 'pending', ACCOUNTS)
      let next = 0
      let failed = 0
      let firstFailure = ''
      const run = await timed(CONCURRENCY, seconds, async () => {
        if (next >= ids.length) return false
        const n = next++
        const res = await fetch(`${t.bases[n % t.bases.length]}/api/operations/${ids[n]}/approve`, { method: 'POST', headers: { 'x-api-key': key } })
        const body = await res.text()
        if (res.status !== 200 && failed++ === 0) firstFailure = `${res.status} ${body.slice(0, 300)}`
      })
      if (failed) throw new Error(`${t.name}: ${failed} approvals failed, the first with ${firstFailure}`)
      return rate(run)
    }
    const reads = async (t: Target, seconds = SECONDS) => {
      const requests = Array.from({ length: 20 }, (_, i) => [
        { path: `/api/clients?page=${i + 1}&pageSize=50`, headers: { 'x-api-key': key } },
        { path: `/api/operations?page=${i + 1}&pageSize=50`, headers: { 'x-api-key': key } },
      ]).flat()
      // One load generator per address, the clients shared out among them.
      const runs = await Promise.all(
        t.bases.map((url, i) => load({ url, connections: Math.floor((CONCURRENCY + i) / t.bases.length), duration: seconds, requests })),
      )
      const failed = runs.reduce((n, r) => n + r.non2xx + r.errors, 0)
      if (failed) throw new Error(`${t.name}: ${failed} non-2xx or errors`)
      return runs.reduce((sum, r) => sum + r.rps, 0)
    }

    const rates = new Map<string, number[]>()
    const measure = async (what: string, t: Target, fn: (t: Target) => Promise<number>) => {
      const perSecond = await fn(t)
      console.log(`  ${what} ${t.name}: ${perSecond.toFixed(0)}/s`)
      rates.set(`${what} ${t.name}`, [...(rates.get(`${what} ${t.name}`) ?? []), perSecond])
    }
    const mean = (k: string) => rates.get(k)!.reduce((a, b) => a + b, 0) / rates.get(k)!.length
    // Warm-up: every process compiles its hot paths and (where it may) prepares its statements.
    for (const t of targets) {
      await approvals(t, 3)
      await reads(t, 3)
    }
    rates.clear()
    for (const [what, fn] of [['approve', approvals], ['read', reads]] as const) {
      const order = [one, three, pooled, unprepared, limited]
      await alternating(ROUNDS, order.map((t) => t.name), (name) => measure(what, order.find((t) => t.name === name)!, fn))
    }

    // Where transaction pooling's cost lies: one approve's own statements (captured from the route) replayed one
    // transaction at a time on one connection, each on a fresh pending operation, with prepared statements and as plain
    // unnamed statements (what DATABASE_POOL_MODE=transaction sends).
    // No HTTP, no pooler, no concurrency: what is left is round trips and the database's parse and plan.
    const [captureId] = await seedOps(1, 'pending', ACCOUNTS)
    const approve = await captureRoute(dbUrl, `/api/operations/${captureId}/approve`, key, { method: 'POST' })
    const withId = (id: number) => aboutOperation(approve, captureId, id)
    const replayers = {
      prepared: postgres(dbUrl, { max: 1, onnotice: () => {} }),
      unnamed: postgres(dbUrl, { max: 1, prepare: false, onnotice: () => {} }),
    }
    const replayIds = await seedOps(REPLAYS * 2 * 2, 'pending', ACCOUNTS)
    const replayMs: Record<string, number[]> = { prepared: [], unnamed: [] }
    await alternating(2 * ROUNDS, ['prepared', 'unnamed'] as const, async (mode, round) => {
      const started = performance.now()
      for (let i = 0; i < REPLAYS / ROUNDS; i++) await replay(replayers[mode], withId(replayIds.pop()!))
      // The first round of each mode warms its connection (catalog caches, prepared statements).
      if (round > 0) replayMs[mode].push((performance.now() - started) / (REPLAYS / ROUNDS))
    })
    await Promise.all(Object.values(replayers).map((c) => c.end({ timeout: 5 })))
    const replayMean = (mode: string) => replayMs[mode].reduce((a, b) => a + b, 0) / replayMs[mode].length
    for (const mode of Object.keys(replayMs)) console.log(`  approve replayed, ${mode}: ${replayMean(mode).toFixed(2)} ms`)

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a where a.company_id = ${companyId}
      and a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    await direct.end({ timeout: 5 })
    if (bad !== 0) throw new Error(`${bad} balances differ from their completed amounts`)

    const c = `${CONCURRENCY} clients, ${SERVER_CONNECTIONS} Postgres connections`
    const figures: Figure[] = [
      figure(`approvals/s, 3 processes via HAProxy + PgBouncer (ceiling: 1 process direct), ${c}`, mean('approve cluster'), mean(`approve ${one.name}`), 'approvals/s', 'ratio >= 0.8'),
      figure(`reads/s (client and operation pages), 3 processes via HAProxy + PgBouncer (ceiling: 1 process direct), ${c}`, mean('read cluster'), mean(`read ${one.name}`), 'req/s', 'ratio >= 0.8'),
      figure('approvals/s, 3 processes via PgBouncer, no HAProxy (ceiling: 1 process direct)', mean(`approve ${pooled.name}`), mean(`approve ${one.name}`), 'approvals/s', null),
      figure('reads/s, 3 processes via PgBouncer, no HAProxy (ceiling: 1 process direct)', mean(`read ${pooled.name}`), mean(`read ${one.name}`), 'req/s', null),
      figure('approvals/s, 1 process direct, DATABASE_POOL_MODE=transaction (ceiling: prepared statements)', mean(`approve ${unprepared.name}`), mean(`approve ${one.name}`), 'approvals/s', null),
      figure('reads/s, 1 process direct, DATABASE_POOL_MODE=transaction (ceiling: prepared statements)', mean(`read ${unprepared.name}`), mean(`read ${one.name}`), 'req/s', null),
      figure('reads/s, 1 process, shared rate limit on (ceiling: off)', mean(`read ${limited.name}`), mean(`read ${one.name}`), 'req/s', 'ratio >= 0.9'),
    ]
    figures.push(
      figure('ms per approve transaction replayed on one connection, unnamed statements with parameters (ceiling: prepared statements)', replayMean('unnamed'), replayMean('prepared'), 'ms', null),
    )
    printFigures(figures)
  } finally {
    for (const t of targets.reverse()) await t.stop().catch(() => {})
    for (const p of children) if (p.exitCode === null) p.kill('SIGKILL')
    await db.drop()
  }
}

await main()
process.exit(0)
