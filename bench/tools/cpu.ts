/**
 * Where a request's CPU goes, per request: the server process, all of Postgres's processes, this process (the load
 * generator) and the machine as a whole (busy time, and the share left idle), read from /proc (Linux) around a timed
 * run of each case against the app in its own process, as approve.ts serves it. A diagnosis for the ratios of
 * `bun run bench`, not a figure of it: it answers which side of a gap to work on.
 *
 * Cases (arguments; all when none):
 * - `approve`: `POST /api/operations/{id}/approve` of two-leg operations over BENCH_ACCOUNTS accounts;
 * - `replay`: the same approval's statements, captured from one real request, replayed by postgres.js;
 * - `create`: `POST /api/operations` of three legs over the same accounts;
 * - `create-replay`: that create's statements, captured from one real request, replayed, each time over three random
 *   accounts as the route's requests are (the same three for every replay would queue them all on those rows' locks);
 * - `create-sql`: the plain SQL of `bench/write.ts`'s ceiling for it (tenant settings, two inserts, the outbox row);
 * - `client`: `POST /api/clients` with two accounts;
 * - `tags`: `GET /api/tags`, the route policy and one small read;
 * - `health`: `GET /health`, the HTTP server alone.
 *
 *   bun bench/tools/cpu.ts [case …]   (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY=32, BENCH_SECONDS=10, BENCH_ACCOUNTS=10000)
 */
import postgres from 'postgres'
import { readdirSync, readFileSync } from 'node:fs'
import { cpuMs, driveIds, envNumber, phase, rate } from '../lib/common'
import { createBenchDatabase } from '../lib/database'
import { spawnApp } from '../lib/app'
import { aboutOperation, captureRoute, replay, replayClient } from '../lib/capture'
import { CONCURRENCY, httpApprove, sharedAccounts, twoLegOps } from '../lib/approvals'
import { plainOperationCreate } from '../lib/plain'

const SECONDS = envNumber('BENCH_SECONDS', 10)
const ACCOUNTS = envNumber('BENCH_ACCOUNTS', 10_000)
const CASES = ['approve', 'replay', 'create', 'create-replay', 'create-sql', 'client', 'tags', 'health'] as const
type Case = (typeof CASES)[number]

/** `cpuMs` over every Postgres process (backends, WAL writer, checkpointer…). */
function postgresCpu(): number {
  let total = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/stat`, 'utf8').includes(' (postgres) ')) total += cpuMs(Number(entry))
    } catch {
      // The process ended while being read.
    }
  }
  return total
}

/** Milliseconds the machine spent, in all and idle (iowait included), over all cores. */
function machine() {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number)
  return { all: ticks.reduce((a, b) => a + b, 0) * 10, idle: (ticks[3] + ticks[4]) * 10 }
}

const wanted = (process.argv.slice(2).length ? process.argv.slice(2) : CASES) as Case[]
for (const c of wanted) if (!CASES.includes(c)) throw new Error(`unknown case ${c}; one of ${CASES.join(', ')}`)

const db = await createBenchDatabase('fos_bench_cpu')
const direct = postgres(db.url, { max: CONCURRENCY, onnotice: () => {} })
const replaying = replayClient(db.url, CONCURRENCY)
const server = await spawnApp(new URL('../approve.ts', import.meta.url).pathname, [db.url])
try {
  const accounts = await sharedAccounts(direct, server.companyId, ACCOUNTS)
  const ops = (n: number) => twoLegOps(direct, accounts, ACCOUNTS, n)
  const tally = { errors: 0 }
  const approve = httpApprove(server.base, server.key, tally)
  const account = () => accounts.low + Math.floor(Math.random() * ACCOUNTS)
  const send = async (path: string, init: RequestInit, expected: number) => {
    const res = await fetch(server.base + path, { ...init, headers: { 'x-api-key': server.key, 'content-type': 'application/json' } })
    await res.arrayBuffer()
    if (res.status !== expected) tally.errors++
  }
  const legs = () => [{ account_id: account(), amount: '100' }, { account_id: account(), amount: '-60' }, { account_id: account(), amount: '-40' }]
  const create = () =>
    send('/api/operations', {
      method: 'POST',
      body: JSON.stringify({ operation_type_id: accounts.typeId, transactions: legs() }),
    }, 201)
  // An operation whose id is not also the company's: the replay swaps the captured id for each operation's.
  const captured = (await ops(2)).find((id) => id !== server.companyId)!
  const statements = await captureRoute(db.url, `/api/operations/${captured}/approve`, server.key, { method: 'POST' })
  const replayed = (id: number) =>
    replay(replaying, aboutOperation(statements, captured, id))
  const range = async (n: number) => Array.from({ length: n }, (_, i) => i)
  // Captured over the first three accounts; each replay swaps them for three random ones, in the order of the legs.
  const captureLegs = [accounts.low, accounts.low + 1, accounts.low + 2]
  const createStatements = wanted.includes('create-replay')
    ? await captureRoute(db.url, '/api/operations', server.key, {
        method: 'POST',
        body: { operation_type_id: accounts.typeId, transactions: captureLegs.map((account_id, i) => ({ ...legs()[i], account_id })) },
      })
    : []
  const capturedLegs = `{${captureLegs.join(',')}}`
  const replayedCreate = () => {
    const picked = `{${[account(), account(), account()].join(',')}}`
    return replay(replaying, createStatements.map(([text, params]) => [text, params.map((p) => (p === capturedLegs ? picked : p))]))
  }
  /** Each case: the ids of `n` requests (operations to approve, made beforehand) and one request. */
  const cases: Record<Case, { ids: (n: number) => Promise<number[]>; most: number; fn: (id: number) => Promise<unknown> }> = {
    approve: { ids: ops, most: 20_000, fn: approve },
    replay: { ids: ops, most: 30_000, fn: replayed },
    create: { ids: range, most: 20_000, fn: create },
    'create-replay': { ids: range, most: 30_000, fn: replayedCreate },
    'create-sql': { ids: range, most: 30_000, fn: () => plainOperationCreate(direct, accounts.companyId, accounts.typeId, account) },
    client: {
      ids: range,
      most: 20_000,
      fn: () => send('/api/clients', { method: 'POST', body: JSON.stringify({ name: 'Alta', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] }) }, 201),
    },
    tags: { ids: range, most: 100_000, fn: () => send('/api/tags', {}, 200) },
    health: { ids: range, most: 300_000, fn: () => send('/health', {}, 200) },
  }

  console.log(`CPU ms per request, ${CONCURRENCY} in flight, ${SECONDS} s per case, ${ACCOUNTS} accounts`)
  console.log('| case | req/s | server | Postgres | load generator | machine busy | machine idle |')
  console.log('|---|---|---|---|---|---|---|')
  for (const name of wanted) {
    const { ids, most, fn } = cases[name]
    await driveIds(await ids(2000), (id) => fn(id).then(() => {}), phase(), CONCURRENCY, SECONDS)
    const list = await ids(most)
    tally.errors = 0
    const before = { server: cpuMs(server.proc.pid), self: cpuMs(process.pid), pg: postgresCpu(), m: machine() }
    const run = phase()
    await driveIds(list, (id) => fn(id).then(() => {}), run, CONCURRENCY, SECONDS)
    const after = { server: cpuMs(server.proc.pid), self: cpuMs(process.pid), pg: postgresCpu(), m: machine() }
    if (tally.errors) throw new Error(`${name}: ${tally.errors} unexpected answers`)
    const per = (ms: number) => (ms / run.done).toFixed(3)
    const busy = after.m.all - after.m.idle - (before.m.all - before.m.idle)
    const idle = (after.m.idle - before.m.idle) / (after.m.all - before.m.all)
    console.log(`| ${name} | ${rate(run).toFixed(0)} | ${per(after.server - before.server)} | ${per(after.pg - before.pg)} | ${per(after.self - before.self)} | ${per(busy)} | ${(idle * 100).toFixed(0)}% |`)
  }
} finally {
  await server.stop()
  await direct.end({ timeout: 5 })
  await replaying.end({ timeout: 5 })
  await db.drop()
}
process.exit(0)
