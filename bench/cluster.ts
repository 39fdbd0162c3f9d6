/**
 * What running past one process costs: approvals/s and reads/s through scripts/cluster.sh (three processes behind
 * HAProxy, PgBouncer in transaction pooling) against one process reaching Postgres directly, both at the same
 * concurrency and the same number of Postgres server connections. On a small machine the point is the overhead,
 * not a speed-up. Two more single processes on the same database price the parts apart: one in
 * DATABASE_POOL_MODE=transaction without a pooler (unnamed statements instead of prepared ones), one with the
 * shared rate limit on (a budget no run reaches, so only its cost shows).
 *
 * A throwaway database with a small read data set made here in seconds (not bench/generate.ts's large one):
 * 2,000 clients with two accounts each and 20,000 two-leg operations. Rounds alternate the order of the targets
 * (A B C D D C B A) so drifting machine load hits each alike. Every process it starts stops at the end.
 *
 *   bun bench/cluster.ts   (env: BENCH_ADMIN_URL, BENCH_SECONDS=8, BENCH_CONCURRENCY=32)
 */
import postgres from 'postgres'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { sql } from 'drizzle-orm'
import { openDatabase } from '../db/client'
import { issueKey } from '../server/access/keys'
import { figure, type Figure, freePort, load, printFigures, ROOT, waitHealthy } from './lib/common'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
/** Postgres server connections on either side: the single process's pool, PgBouncer's pool for the three. */
const SERVER_CONNECTIONS = 20
const ACCOUNTS = 256
const BUN = process.execPath

interface Target {
  name: string
  base: string
  stop: () => Promise<void>
}

const children: Subprocess[] = []

function distinctPorts(n: number): number[] {
  const ports = new Set<number>()
  while (ports.size < n) ports.add(freePort())
  return [...ports]
}

async function single(name: string, dbUrl: string, env: Record<string, string>): Promise<Target> {
  const port = freePort()
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-bench-cluster-'))
  const proc = Bun.spawn([BUN, 'server/main.ts'], {
    cwd: ROOT,
    stdout: 'ignore',
    stderr: 'inherit',
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, DATABASE_URL: dbUrl, DB_POOL_MAX: String(SERVER_CONNECTIONS), RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_IP_PER_MINUTE: '0', SIGNING_SECRET: 'bench-signing-secret-0123456789', ...env },
  })
  children.push(proc)
  const base = `http://127.0.0.1:${port}`
  await waitHealthy(`${base}/health`, performance.now(), 120_000, () => proc.exitCode === null)
  return {
    name,
    base,
    stop: async () => {
      proc.kill('SIGTERM')
      await proc.exited
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

async function cluster(dbUrl: string): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'fos-bench-cluster-'))
  const [front, pgbouncer, ...servers] = distinctPorts(5)
  const proc = Bun.spawn(['bash', 'scripts/cluster.sh'], {
    cwd: ROOT,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
    env: {
      ...process.env,
      PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}`,
      DATABASE_URL: dbUrl,
      CLUSTER_DIR: dir,
      CLUSTER_PORT: String(front),
      CLUSTER_PGBOUNCER_PORT: String(pgbouncer),
      CLUSTER_SERVER_PORTS: servers.join(' '),
      CLUSTER_POOL_SIZE: String(SERVER_CONNECTIONS),
      CLUSTER_STOP_ON_EOF: '1',
      DB_POOL_MAX: String(Math.ceil(SERVER_CONNECTIONS / 2)),
      RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_IP_PER_MINUTE: '0',
    },
  })
  children.push(proc)
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
  let out = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`cluster did not start: ${out}`)
    out += new TextDecoder().decode(value)
    const ready = /cluster ready (\S+)/.exec(out)
    if (ready) {
      reader.releaseLock()
      return {
        name: 'cluster',
        base: ready[1],
        stop: async () => {
          proc.kill('SIGTERM')
          await proc.exited
          rmSync(dir, { recursive: true, force: true })
        },
      }
    }
  }
}

async function main() {
  for (const bin of ['haproxy', 'pgbouncer'])
    if (!['/usr/sbin', '/usr/bin'].some((d) => existsSync(join(d, bin)))) {
      console.log(`${bin} is not installed (Debian: apt-get install ${bin}); nothing to measure`)
      printFigures([])
      return
    }
  const dbName = `fos_bench_cluster_${process.pid}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  await admin.unsafe(`create database ${dbName}`)
  const url = new URL(ADMIN_URL)
  url.pathname = `/${dbName}`
  const dbUrl = url.toString()
  const targets: Target[] = []
  try {
    // Migrations, a company, its key and the data set, before any server starts.
    const database = await openDatabase({ url: dbUrl, poolMax: 2 })
    const [{ id: companyId }] = await database.rows<{ id: number }>(sql`insert into companies (name) values ('Bench') returning id`)
    const { key } = await database.db.transaction((tx) => issueKey(tx, companyId, null, 'bench'))
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
    const seedOps = async (count: number, status: 'pending' | 'completed', span: number) => {
      const rows = await direct`insert into operations (company_id, operation_type_id, status)
        select ${companyId}, ${typeId}, ${status} from generate_series(1, ${count}) returning id`
      const ids = rows.map((r) => r.id as number)
      await direct`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
        select ${companyId}, o.id, ${low} + floor(random() * ${span})::int, 'ARS', s * 12.345678, ${status}
        from unnest(${ids}::int[]) o(id), (values (1), (-1)) v(s)`
      return ids
    }
    await seedOps(20_000, 'completed', high - low + 1)
    await direct`update accounts a set balance = coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)
      where a.company_id = ${companyId}`
    await direct`analyze`
    console.log(`read data set: 2,000 clients, 4,000 accounts, 20,000 operations in ${((performance.now() - seeding) / 1000).toFixed(1)} s`)

    const one = await single('1 process, direct', dbUrl, {})
    targets.push(one)
    const three = await cluster(dbUrl)
    targets.push(three)
    const unprepared = await single('1 process, direct, pool mode transaction', dbUrl, { DATABASE_POOL_MODE: 'transaction' })
    targets.push(unprepared)
    const limited = await single('1 process, direct, shared rate limit on', dbUrl, { RATE_LIMIT_PER_MINUTE: '1000000' })
    targets.push(limited)

    const approvals = async (t: Target) => {
      const ids = await seedOps(6000, 'pending', ACCOUNTS)
      let next = 0
      let done = 0
      let failed = 0
      let firstFailure = ''
      const started = performance.now()
      const deadline = started + SECONDS * 1000
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < ids.length && performance.now() < deadline) {
            const res = await fetch(`${t.base}/api/operations/${ids[next++]}/approve`, { method: 'POST', headers: { 'x-api-key': key } })
            const body = await res.text()
            if (res.status === 200) done++
            else if (failed++ === 0) firstFailure = `${res.status} ${body.slice(0, 300)}`
          }
        }),
      )
      if (failed) throw new Error(`${t.name}: ${failed} approvals failed, the first with ${firstFailure}`)
      return done / ((performance.now() - started) / 1000)
    }
    const reads = async (t: Target) => {
      const requests = Array.from({ length: 20 }, (_, i) => [
        { path: `/api/clients?page=${i + 1}&pageSize=50`, headers: { 'x-api-key': key } },
        { path: `/api/operations?page=${i + 1}&pageSize=50`, headers: { 'x-api-key': key } },
      ]).flat()
      const r = await load({ url: t.base, connections: CONCURRENCY, duration: SECONDS, requests })
      if (r.non2xx || r.errors) throw new Error(`${t.name}: ${r.non2xx} non-2xx, ${r.errors} errors`)
      return r.rps
    }

    const rates = new Map<string, number[]>()
    const measure = async (what: string, t: Target, fn: (t: Target) => Promise<number>) => {
      const rate = await fn(t)
      console.log(`  ${what} ${t.name}: ${rate.toFixed(0)}/s`)
      rates.set(`${what} ${t.name}`, [...(rates.get(`${what} ${t.name}`) ?? []), rate])
    }
    const mean = (k: string) => rates.get(k)!.reduce((a, b) => a + b, 0) / rates.get(k)!.length
    // Warm-up: every process prepares and plans its statements once.
    for (const t of targets) {
      await approvals(t)
      await reads(t)
    }
    rates.clear()
    for (const [what, fn] of [['approve', approvals], ['read', reads]] as const) {
      for (const t of [one, three, unprepared, limited, limited, unprepared, three, one]) await measure(what, t, fn)
    }

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a where a.company_id = ${companyId}
      and a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    await direct.end({ timeout: 5 })
    if (bad !== 0) throw new Error(`${bad} balances differ from their completed amounts`)

    const c = `${CONCURRENCY} clients, ${SERVER_CONNECTIONS} Postgres connections`
    const figures: Figure[] = [
      figure(`approvals/s, 3 processes via HAProxy + PgBouncer (ceiling: 1 process direct), ${c}`, mean('approve cluster'), mean(`approve ${one.name}`), 'approvals/s', 'ratio >= 0.8'),
      figure(`reads/s (client and operation pages), 3 processes via HAProxy + PgBouncer (ceiling: 1 process direct), ${c}`, mean('read cluster'), mean(`read ${one.name}`), 'req/s', 'ratio >= 0.8'),
      figure('approvals/s, 1 process, unnamed statements (DATABASE_POOL_MODE=transaction; ceiling: prepared)', mean(`approve ${unprepared.name}`), mean(`approve ${one.name}`), 'approvals/s', null),
      figure('reads/s, 1 process, unnamed statements (DATABASE_POOL_MODE=transaction; ceiling: prepared)', mean(`read ${unprepared.name}`), mean(`read ${one.name}`), 'req/s', null),
      figure('reads/s, 1 process, shared rate limit on (ceiling: off)', mean(`read ${limited.name}`), mean(`read ${one.name}`), 'req/s', 'ratio >= 0.9'),
    ]
    printFigures(figures)
  } finally {
    for (const t of targets.reverse()) await t.stop().catch(() => {})
    for (const p of children) if (p.exitCode === null) p.kill('SIGKILL')
    await admin.unsafe(`drop database if exists ${dbName} with (force)`)
    await admin.end({ timeout: 5 })
  }
}

await main()
process.exit(0)
