/**
 * The read path at scale, on the database bench/generate.ts fills (made or reused first):
 *
 * - `GET /api/clients` (page of 50 with accounts and tags, description filter) at 64 connections against
 *   `bun server/main.ts` listening on loopback, versus two ceilings measured in the same run:
 *   a bare Elysia route answering a captured page of the same size (the framework and JSON on this machine),
 *   and the very statements the route sends (captured at the driver from one real request, transaction and
 *   all) replayed prepared through postgres.js at the same concurrency and pool size (the database).
 * - `GET /api/audit-logs` with table + action + date-range filters (exact `pagination.total`) at 1 connection
 *   (the query's own latency) and at 8 (under load), versus its own statements replayed directly.
 * - Server memory (VmRSS) idle and at peak under the list load, against the bare Elysia process.
 * - Cold start to a healthy /health: embedded PGlite on a fresh DATA_DIR, and Postgres (the migrated scale
 *   database), against a bare Elysia process.
 *
 * Rounds alternate the order of ours / bare / direct so drifting machine load hits each alike. The load
 * generator (autocannon) runs in its own Node process. Bounded by BENCH_SECONDS per run; every child stops.
 *
 *   bun bench/read.ts   (env: BENCH_PARTS=clients,audit,start, BENCH_SECONDS=10, BENCH_ROUNDS=2, BENCH_POOL=16, BENCH_CONNECTIONS=64, BENCH_AUDIT_CONNECTIONS=8)
 */
import postgres from 'postgres'
import { Elysia } from 'elysia'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureScaleDatabase } from './generate'
import { captureRoute, replay, replayClient, type Statement } from './lib/capture'
import { alternating, envNumber, figure, type Figure, freePort, load, percentile, printFigures, ROOT, rssMiB, round, SIGNING_SECRET, sleep, timed, waitHealthy, type LoadResult, type LoadSpec } from './lib/common'
import { startMainServer } from './lib/server'

const SECONDS = envNumber('BENCH_SECONDS', 10)
const ROUNDS = envNumber('BENCH_ROUNDS', 2)
const POOL = envNumber('BENCH_POOL', 16)
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 64)
const AUDIT_CONNECTIONS = envNumber('BENCH_AUDIT_CONNECTIONS', 8)
const COMPANIES = 10
/** clients (with server memory), audit, start (cold starts); BENCH_PARTS=audit runs one. */
const PARTS = new Set((process.env.BENCH_PARTS ?? 'clients,audit,start').split(','))
const DEADLINE_MS = 15 * 60 * 1000

interface Variant {
  path: string
  key: string
  statements: Statement[]
}
interface DirectSpec {
  url: string
  pool: number
  connections: number
  seconds: number
  variants: Statement[][]
}

// ------------------------------------------------------------------------------------------- child modes

/** The framework ceiling: Elysia answering a ready page object (serialised per request, as ours is). */
async function bare(port: number, payloadFile: string) {
  const payload = JSON.parse(readFileSync(payloadFile, 'utf8'))
  const server = new Elysia()
    .get('/health', () => ({ status: 'ok' }))
    .get('/api/clients', () => payload)
    .get('/api/audit-logs', () => payload)
    .listen({ port, hostname: '127.0.0.1' })
  for await (const _ of Bun.stdin.stream());
  await server.stop(true)
  process.exit(0)
}

/** The database ceiling: each variant's statements in order, like one request, from `connections` workers. */
async function direct(specFile: string) {
  const spec = JSON.parse(readFileSync(specFile, 'utf8')) as DirectSpec
  const sql = replayClient(spec.url, spec.pool)
  let next = 0
  const run = (statements: Statement[]) => replay(sql, statements)
  for (const v of spec.variants) await run(v)
  const { latencies, seconds } = await timed(spec.connections, spec.seconds, () => run(spec.variants[next++ % spec.variants.length]))
  await sql.end({ timeout: 5 })
  const out: Omit<LoadResult, 'bytesPerResponse'> = {
    requests: latencies.length,
    seconds,
    rps: latencies.length / seconds,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    max: percentile(latencies, 100),
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    latencies: latencies.map((ms) => Math.round(ms * 100) / 100),
  }
  console.log(JSON.stringify(out))
  process.exit(0)
}

// ------------------------------------------------------------------------------------------------ helpers

async function runDirect(url: string, variants: Variant[], connections: number): Promise<LoadResult> {
  const dir = mkdtempSync(join(tmpdir(), 'fos-bench-direct-'))
  const file = join(dir, 'spec.json')
  const spec: DirectSpec = { url, pool: POOL, connections, seconds: SECONDS, variants: variants.map((v) => v.statements) }
  writeFileSync(file, JSON.stringify(spec))
  try {
    const proc = Bun.spawn([process.execPath, import.meta.path, '--direct', file], { cwd: ROOT, stdout: 'pipe', stderr: 'inherit' })
    const killer = setTimeout(() => proc.kill(), (SECONDS + 60) * 1000)
    const out = await new Response(proc.stdout).text()
    clearTimeout(killer)
    await proc.exited
    if (proc.exitCode !== 0) throw new Error(`direct SQL driver failed (exit ${proc.exitCode})`)
    return { bytesPerResponse: 0, ...JSON.parse(out.trim().split('\n').pop()!) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Several runs as one: total requests over total time, percentiles over every latency. */
function merge(runs: LoadResult[]) {
  const all = Float64Array.from(runs.flatMap((r) => r.latencies)).sort()
  const requests = runs.reduce((n, r) => n + r.requests, 0)
  const seconds = runs.reduce((n, r) => n + r.seconds, 0)
  const failed = runs.reduce((n, r) => n + r.non2xx + r.errors + r.timeouts, 0)
  return { requests, rps: requests / seconds, p50: percentile(all, 50), p95: percentile(all, 95), p99: percentile(all, 99), failed }
}

const spec = (base: string, variants: Variant[], connections: number, seconds = SECONDS): LoadSpec => ({
  url: base,
  connections,
  duration: seconds,
  requests: variants.map((v) => ({ path: v.path, headers: { 'x-api-key': v.key } })),
})

/** `bun server/main.ts` on the given database (the embedded one when unset); its `coldMs` is the start to /health. */
const startServer = (databaseUrl?: string) => startMainServer({ databaseUrl, name: 'read', env: { SIGNING_SECRET, DB_POOL_MAX: String(POOL) } })

const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10)

// --------------------------------------------------------------------------------------------------- main

/** The clients list mix: ten companies, three description words, mostly first pages. */
export const clientMix = (keys: { key: string }[]) =>
  ['mayorista', 'textil', 'Rosario'].flatMap((description, i) =>
    keys.map((k, j) => ({ key: k.key, query: { description, pageSize: 50, page: (i + j) % 5 === 4 ? 2 : 1 } })),
  )

/** The audit mix: four table + action + date-range filters (30 days to a whole year) for each company. */
export const auditMix = (keys: { key: string }[]) =>
  [
    { table: 'transactions', action: 'update', from: day(-30), to: day(0) },
    { table: 'operations', action: 'create', from: day(-90), to: day(0) },
    { table: 'transactions', action: 'create', from: day(-365), to: day(0) },
    { table: 'operations', action: 'cancel', from: day(-180), to: day(-90) },
  ].flatMap((filter) => keys.map((k) => ({ key: k.key, query: filter })))

/** Runs `mode` while sampling the resident memory of `pid`; returns the result and the peak. */
async function sampled<T>(pid: number | undefined, run: () => Promise<T>): Promise<[T, number]> {
  let peak = 0
  const sampler = pid ? setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 200) : undefined
  try {
    return [await run(), peak]
  } finally {
    clearInterval(sampler)
  }
}

async function main() {
  const hardStop = setTimeout(() => {
    console.error('read bench: deadline passed, stopping')
    process.exit(1)
  }, DEADLINE_MS)
  const { url } = await ensureScaleDatabase((line) => console.log(line))
  const meta = postgres(url, { max: 1, onnotice: () => {} })
  const keys = (await meta`select company_id, key from bench_scale_keys order by company_id limit ${COMPANIES}`) as unknown as { company_id: number; key: string }[]
  await meta.end()

  const clientQueries = clientMix(keys)
  const auditQueries = auditMix(keys)

  const variants = async (route: string, mix: { key: string; query: Record<string, string | number> }[]) => {
    const out: Variant[] = []
    for (const { key, query } of mix) {
      const path = `${route}?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`
      out.push({ key, path, statements: await captureRoute(url, path, key) })
    }
    return out
  }
  const clientVariants = PARTS.has('clients') ? await variants('/api/clients', clientQueries) : []
  const auditVariants = PARTS.has('audit') ? await variants('/api/audit-logs', auditQueries) : []
  if (clientVariants[0]) console.log(`read: GET /api/clients sends ${clientVariants[0].statements.length} statements: ${clientVariants[0].statements.map(([t]) => t.slice(0, 40).replace(/\s+/g, ' ')).join(' | ')}`)
  if (auditVariants[0]) console.log(`read: GET /api/audit-logs sends ${auditVariants[0].statements.length} statements`)

  const figures: Figure[] = []
  const server = await startServer(url)
  const payloadDir = mkdtempSync(join(tmpdir(), 'fos-bench-payload-'))
  const payloadFile = join(payloadDir, 'page.json')
  let bareProc: ReturnType<typeof Bun.spawn> | undefined
  try {
    // A real page from our server: the bare route answers the same bytes, so both pay the same JSON work.
    const first = clientVariants[0] ?? { path: `/api/clients?pageSize=50`, key: keys[0].key }
    const sample = await fetch(`${server.base}${first.path}`, { headers: { 'x-api-key': first.key } })
    const page = (await sample.json()) as { data: unknown[]; count: number }
    if (sample.status !== 200 || page.data.length === 0) throw new Error(`unexpected clients page: ${sample.status} ${JSON.stringify(page).slice(0, 200)}`)
    writeFileSync(payloadFile, JSON.stringify(page))
    console.log(`read: a clients page is ${JSON.stringify(page).length} bytes (${page.count} matches for ${first.path})`)

    const barePort = freePort()
    const t0 = performance.now()
    bareProc = Bun.spawn([process.execPath, import.meta.path, '--bare', String(barePort), payloadFile], { cwd: ROOT, stdin: 'pipe', stdout: 'ignore', stderr: 'inherit' })
    const bareColdMs = await waitHealthy(`http://127.0.0.1:${barePort}/health`, t0, 30_000)
    const bareBase = `http://127.0.0.1:${barePort}`
    await sleep(1000)
    const rssIdle = rssMiB(server.proc.pid)
    const barePid = bareProc.pid
    const bareRssIdle = rssMiB(barePid)

    if (PARTS.has('clients')) {
      // Warm-up: JIT, prepared statements, caches.
      await load(spec(server.base, clientVariants, CONNECTIONS, 3))
      await load(spec(bareBase, clientVariants, CONNECTIONS, 3))
      const runs: Record<'ours' | 'bare' | 'direct', LoadResult[]> = { ours: [], bare: [], direct: [] }
      let rssPeak = 0
      let bareRssPeak = 0
      await alternating(ROUNDS, ['ours', 'bare', 'direct'], async (mode, r) => {
        if (mode === 'direct') runs.direct.push(await runDirect(url, clientVariants, CONNECTIONS))
        else {
          const pid = mode === 'ours' ? server.proc.pid : barePid
          const [res, peak] = await sampled(pid, () => load(spec(mode === 'ours' ? server.base : bareBase, clientVariants, CONNECTIONS)))
          runs[mode].push(res)
          if (mode === 'ours') rssPeak = Math.max(rssPeak, peak)
          else bareRssPeak = Math.max(bareRssPeak, peak)
        }
        const res = runs[mode].at(-1)!
        console.log(`read: clients round ${r + 1} ${mode}: ${round(res.rps, 0)} req/s, p99 ${round(res.p99)} ms`)
      })
      const o = merge(runs.ours)
      const b = merge(runs.bare)
      const d = merge(runs.direct)
      if (o.failed + b.failed > 0) throw new Error(`clients: ${o.failed} of ours and ${b.failed} of bare failed (non-2xx, errors or timeouts)`)
      console.log(
        `read: clients ours ${round(o.rps, 0)} req/s p50 ${round(o.p50)} p95 ${round(o.p95)} p99 ${round(o.p99)} ms | bare ${round(b.rps, 0)} req/s p99 ${round(b.p99)} ms | direct ${round(d.rps, 0)} req/s p99 ${round(d.p99)} ms`,
      )
      console.log(`read: server RSS idle ${round(rssIdle)} MiB, peak under load ${round(rssPeak)} MiB, after ${round(rssMiB(server.proc.pid))} MiB`)
      figures.push(
        figure(`GET /api/clients req/s (${CONNECTIONS} conn) vs bare Elysia`, o.rps, b.rps, 'req/s', 'ratio >= 0.5'),
        figure(`GET /api/clients req/s (${CONNECTIONS} conn) vs direct SQL`, o.rps, d.rps, 'req/s', 'ratio >= 0.7'),
        figure(`GET /api/clients p99 (${CONNECTIONS} conn) vs direct SQL`, o.p99, d.p99, 'ms', '<= 25'),
        figure('server RSS idle vs bare Elysia', rssIdle, bareRssIdle, 'MiB', null),
        figure('server RSS peak under clients load vs bare Elysia', rssPeak, bareRssPeak, 'MiB', null),
      )
    }

    if (PARTS.has('audit')) {
      const auditSample = await fetch(`${server.base}${auditVariants[0].path}`, { headers: { 'x-api-key': auditVariants[0].key } })
      const auditPage = (await auditSample.json()) as { data: unknown[]; pagination: { total: number } }
      if (auditSample.status !== 200 || auditPage.data.length === 0) throw new Error(`unexpected audit page: ${auditSample.status}`)
      console.log(`read: audit total ${auditPage.pagination.total} for ${auditVariants[0].path}`)
      await load(spec(server.base, auditVariants, AUDIT_CONNECTIONS, 2))
      // One connection: the latency of the query itself; AUDIT_CONNECTIONS: the same under load, queueing included.
      for (const connections of [1, AUDIT_CONNECTIONS]) {
        const ours: LoadResult[] = []
        const directRuns: LoadResult[] = []
        await alternating(ROUNDS, ['ours', 'direct'], async (mode) => {
          if (mode === 'ours') ours.push(await load(spec(server.base, auditVariants, connections)))
          else directRuns.push(await runDirect(url, auditVariants, connections))
        })
        const o = merge(ours)
        const d = merge(directRuns)
        if (o.failed > 0) throw new Error(`audit: ${o.failed} requests failed (non-2xx, errors or timeouts)`)
        console.log(`read: audit at ${connections} conn: ours ${round(o.rps, 0)} req/s p50 ${round(o.p50)} p95 ${round(o.p95)} ms | direct ${round(d.rps, 0)} req/s p95 ${round(d.p95)} ms`)
        figures.push(
          figure(`GET /api/audit-logs p95 (${connections} conn) vs direct SQL`, o.p95, d.p95, 'ms', '<= 30'),
          figure(`GET /api/audit-logs req/s (${connections} conn) vs direct SQL`, o.rps, d.rps, 'req/s', null),
        )
      }
    }

    await server.stop()
    if (PARTS.has('start')) {
      // Embedded default: a fresh DATA_DIR, so the start includes creating the PGlite database and migrating it.
      const embedded = await startServer()
      await embedded.stop()
      console.log(`read: cold start ${round(server.coldMs, 0)} ms on Postgres, ${round(embedded.coldMs, 0)} ms on PGlite, bare Elysia ${round(bareColdMs, 0)} ms`)
      figures.push(
        figure('cold start to /health, Postgres (migrated) vs bare Elysia', server.coldMs, bareColdMs, 'ms', null),
        figure('cold start to /health, PGlite fresh DATA_DIR vs bare Elysia', embedded.coldMs, bareColdMs, 'ms', null),
      )
    }
    printFigures(figures)
  } finally {
    if (server.proc.exitCode === null) await server.stop()
    if (bareProc) {
      ;(bareProc.stdin as import('bun').FileSink).end()
      await Promise.race([bareProc.exited, sleep(5000)])
      if (bareProc.exitCode === null) bareProc.kill('SIGKILL')
    }
    rmSync(payloadDir, { recursive: true, force: true })
    clearTimeout(hardStop)
  }
}

if (import.meta.main) {
  if (process.argv[2] === '--bare') await bare(Number(process.argv[3]), process.argv[4])
  else if (process.argv[2] === '--direct') await direct(process.argv[3])
  else {
    await main()
    process.exit(0)
  }
}
