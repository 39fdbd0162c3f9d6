/**
 * What the metrics cost: approvals per second over HTTP against one app with metrics on (METRICS_TOKEN), scraped
 * every BENCH_SCRAPE_MS (default 1 s, fifteen times Prometheus's default interval) while it is driven, against the
 * same app with metrics off, in alternating rounds; and the server process's CPU per approval on each side, which
 * other work on a shared machine moves less than the rate. Both run the audit sealer, as deployed, so the scrape's
 * statement reads the backlog a running service has. Each app has its own company and accounts on one throwaway
 * database.
 *
 *   bun bench/metrics.ts     (env: BENCH_CONCURRENCY, BENCH_METRICS_ROUNDS, BENCH_METRICS_OPS, BENCH_SECONDS, BENCH_SCRAPE_MS)
 */
import postgres from 'postgres'
import { alternating, cpuMs, driveIds, envNumber, figure, phase, printFigures, rate } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { serveApp, spawnApp, type ServedApp } from './lib/app'
import { CONCURRENCY, httpApprove, SECONDS_PER_ROUND, SHARED_ACCOUNTS, sharedAccounts, twoLegOps, WARMUP } from './lib/approvals'
import { startAuditChain } from '../server/modules/audit/worker'

const ROUNDS = envNumber('BENCH_METRICS_ROUNDS', 6)
const OPS_PER_ROUND = envNumber('BENCH_METRICS_OPS', 3000)
const SCRAPE_MS = envNumber('BENCH_SCRAPE_MS', 1000)
const TOKEN = 'bench-metrics-token-0123456789'
const MODES = ['on', 'off'] as const
type Mode = (typeof MODES)[number]

async function main() {
  const db = await createBenchDatabase('fos_bench_metrics')
  const servers: Partial<Record<Mode, ServedApp>> = {}
  const direct = postgres(db.url, { max: 4, onnotice: () => {} })
  try {
    for (const mode of MODES) servers[mode] = await spawnApp(import.meta.path, [db.url, mode])
    const http = { errors: 0 }
    const sides = await Promise.all(
      MODES.map(async (mode) => {
        const server = servers[mode]!
        const accounts = await sharedAccounts(direct, server.companyId, SHARED_ACCOUNTS)
        return { mode, server, seed: (n: number) => twoLegOps(direct, accounts, SHARED_ACCOUNTS, n), approve: httpApprove(server.base, server.key, http) }
      }),
    )
    const drive = (ids: number[], fn: (id: number) => Promise<void>, into = phase()) => driveIds(ids, fn, into, CONCURRENCY, SECONDS_PER_ROUND)
    for (const side of sides) await drive(await side.seed(WARMUP), side.approve)
    http.errors = 0

    const phases = { on: phase(), off: phase() }
    const cpu = { on: 0, off: 0 }
    const perRound: Record<Mode, number[]> = { on: [], off: [] }
    let scrapes = 0
    let scrapeMs = 0
    let scrapeBytes = 0
    await alternating(ROUNDS, MODES, async (mode) => {
      const side = sides.find((s) => s.mode === mode)!
      const ids = await side.seed(OPS_PER_ROUND)
      let driving = true
      // Prometheus's side of it, while the approvals run.
      const scraper = (async () => {
        while (driving && mode === 'on') {
          const t0 = performance.now()
          const res = await fetch(`${side.server.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
          const text = await res.text()
          if (res.status !== 200 || !text.includes('fos_database_figures_up 1')) throw new Error(`scrape failed: ${res.status} ${text.slice(0, 200)}`)
          scrapes++
          scrapeMs += performance.now() - t0
          scrapeBytes = text.length
          await Bun.sleep(SCRAPE_MS)
        }
      })()
      const round = phase()
      const cpuBefore = cpuMs(side.server.proc.pid)
      await drive(ids, side.approve, round)
      driving = false
      await scraper
      cpu[mode] += cpuMs(side.server.proc.pid) - cpuBefore
      phases[mode].done += round.done
      phases[mode].seconds += round.seconds
      perRound[mode].push(Math.round(rate(round)))
    })

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a
      where a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    console.log(`metrics benchmark: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds of up to ${OPS_PER_ROUND} approvals or ${SECONDS_PER_ROUND} s`)
    console.log(`  metrics on, scraped every ${SCRAPE_MS} ms: ${rate(phases.on).toFixed(0)} approvals/s (${phases.on.done})`)
    console.log(`  metrics off: ${rate(phases.off).toFixed(0)} approvals/s (${phases.off.done})`)
    console.log(`  ratio on / off: ${(rate(phases.on) / rate(phases.off)).toFixed(3)} (goal ≥ 0.95)`)
    console.log(`  per round, on: ${perRound.on.join(', ')}; off: ${perRound.off.join(', ')} approvals/s`)
    const cpuPer = (mode: Mode) => cpu[mode] / phases[mode].done
    console.log(`  server CPU per approval: on ${cpuPer('on').toFixed(3)} ms, off ${cpuPer('off').toFixed(3)} ms (scrapes included)`)
    console.log(`  ${scrapes} scrapes under load, ${(scrapeMs / Math.max(1, scrapes)).toFixed(1)} ms each on average, ${scrapeBytes} bytes`)
    if (bad !== 0 || http.errors !== 0) throw new Error(`the ledger broke under load (${bad} accounts off, ${http.errors} non-200)`)
    printFigures([
      figure(`approvals/s over HTTP with metrics on, scraped every ${SCRAPE_MS} ms (ceiling: metrics off)`, rate(phases.on), rate(phases.off), 'approvals/s', 'ratio >= 0.95'),
      figure(`server CPU ms per approval with metrics on, scrapes included (ceiling: metrics off)`, cpuPer('on'), cpuPer('off'), 'ms', 'ratio <= 1.05'),
    ])
  } finally {
    for (const s of Object.values(servers)) await s?.stop()
    await direct.end({ timeout: 5 })
    await db.drop()
  }
}

if (process.argv[2] === '--serve') {
  const on = process.argv[4] === 'on'
  await serveApp(process.argv[3], {
    poolMax: CONCURRENCY,
    company: `Bench metrics ${process.argv[4]}`,
    env: on ? { METRICS_TOKEN: TOKEN } : {},
    companion: (ctx) => startAuditChain(ctx),
  })
} else {
  await main()
  process.exit(0)
}
