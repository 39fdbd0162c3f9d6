/**
 * What the metrics cost: approvals per second over HTTP against the same app three times on one throwaway database,
 * each with its own company and accounts, in alternating rounds: metrics off (the ceiling); metrics on
 * (METRICS_TOKEN) and scraped every BENCH_SCRAPE_MS (default 15 s, a usual Prometheus interval); and metrics on
 * scraped every BENCH_STRESS_SCRAPE_MS (default 1 s), for what a far too eager scraper costs. Besides the rates, the
 * server processes' CPU per approval, which other work on a shared machine moves less than the rate. Every app runs
 * the audit sealer, as deployed, so the scrape's statement reads the backlog a running service has.
 *
 * Many short rounds rather than a few long ones: on a machine shared with other work the rate swings by half
 * between minutes, and sides that take turns every few seconds meet the same swings. Each side keeps its own
 * scrape clock across its rounds.
 *
 *   bun bench/metrics.ts     (env: BENCH_CONCURRENCY, BENCH_METRICS_ROUNDS, BENCH_METRICS_OPS, BENCH_METRICS_SECONDS,
 *                             BENCH_SCRAPE_MS, BENCH_STRESS_SCRAPE_MS)
 */
import postgres from 'postgres'
import { alternating, cpuMs, driveIds, envNumber, figure, phase, printFigures, rate, type Phase } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { serveApp, spawnApp, type ServedApp } from './lib/app'
import { CONCURRENCY, httpApprove, SHARED_ACCOUNTS, sharedAccounts, twoLegOps, WARMUP } from './lib/approvals'
import { startAuditChain } from '../server/modules/audit/worker'

const ROUNDS = envNumber('BENCH_METRICS_ROUNDS', 24)
const OPS_PER_ROUND = envNumber('BENCH_METRICS_OPS', 1500)
const SECONDS_PER_ROUND = envNumber('BENCH_METRICS_SECONDS', 3)
const TOKEN = 'bench-metrics-token-0123456789'
const MODES = ['on', 'stress', 'off'] as const
type Mode = (typeof MODES)[number]
/** How often each side is scraped; 0: never. */
const INTERVAL: Record<Mode, number> = { on: envNumber('BENCH_SCRAPE_MS', 15_000), stress: envNumber('BENCH_STRESS_SCRAPE_MS', 1_000), off: 0 }

interface Side {
  mode: Mode
  server: ServedApp
  seed(n: number): Promise<number[]>
  approve(id: number): Promise<void>
  phase: Phase
  cpuMs: number
  perRound: number[]
  scrapes: number
  scrapeMs: number
  /** When this side is next scraped (performance.now()), kept across its rounds. */
  nextScrape: number
}

/** Scrapes `side` on its own clock until `over` resolves. */
async function scrapeWhile(side: Side, over: Promise<void>, driving: () => boolean) {
  const interval = INTERVAL[side.mode]
  while (interval > 0 && driving()) {
    const wait = side.nextScrape - performance.now()
    if (wait > 0) {
      await Promise.race([Bun.sleep(wait), over])
      continue
    }
    side.nextScrape = performance.now() + interval
    const t0 = performance.now()
    const res = await fetch(`${side.server.base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    const text = await res.text()
    if (res.status !== 200 || !text.includes('fos_database_figures_up 1')) throw new Error(`scrape failed: ${res.status} ${text.slice(0, 200)}`)
    side.scrapes++
    side.scrapeMs += performance.now() - t0
  }
}

async function main() {
  const db = await createBenchDatabase('fos_bench_metrics')
  const servers: ServedApp[] = []
  const direct = postgres(db.url, { max: 4, onnotice: () => {} })
  try {
    const http = { errors: 0 }
    // One side after the other: the legs are drawn from a company's accounts as one run of ids from its lowest, which
    // two inserts made at once would interleave.
    const sides: Side[] = []
    for (const mode of MODES) {
      const server = await spawnApp(import.meta.path, [db.url, mode])
      servers.push(server)
      const accounts = await sharedAccounts(direct, server.companyId, SHARED_ACCOUNTS)
      sides.push({
        mode,
        server,
        seed: (n) => twoLegOps(direct, accounts, SHARED_ACCOUNTS, n),
        approve: httpApprove(server.base, server.key, http),
        phase: phase(),
        cpuMs: 0,
        perRound: [],
        scrapes: 0,
        scrapeMs: 0,
        nextScrape: 0,
      })
    }
    const drive = (ids: number[], fn: (id: number) => Promise<void>, into = phase()) => driveIds(ids, fn, into, CONCURRENCY, SECONDS_PER_ROUND)
    for (const side of sides) await drive(await side.seed(WARMUP), side.approve)
    http.errors = 0

    await alternating(ROUNDS, MODES, async (mode) => {
      const side = sides.find((s) => s.mode === mode)!
      const ids = await side.seed(OPS_PER_ROUND)
      let driving = true
      let finished!: () => void
      const over = new Promise<void>((done) => (finished = done))
      const scraper = scrapeWhile(side, over, () => driving)
      const round = phase()
      const cpuBefore = cpuMs(side.server.proc.pid)
      await drive(ids, side.approve, round)
      driving = false
      finished()
      await scraper
      side.cpuMs += cpuMs(side.server.proc.pid) - cpuBefore
      side.phase.done += round.done
      side.phase.seconds += round.seconds
      side.perRound.push(Math.round(rate(round)))
    })

    const [{ bad }] = await direct`select count(*)::int as bad from accounts a
      where a.balance <> coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)`
    const [on, stress, off] = sides
    const cpuPer = (s: Side) => s.cpuMs / s.phase.done
    console.log(`metrics benchmark: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds per side of up to ${OPS_PER_ROUND} approvals or ${SECONDS_PER_ROUND} s`)
    for (const s of sides)
      console.log(
        `  ${s.mode === 'off' ? 'metrics off' : `metrics on, scraped every ${INTERVAL[s.mode]} ms`}: ${rate(s.phase).toFixed(0)} approvals/s (${s.phase.done}), ` +
          `server CPU ${cpuPer(s).toFixed(3)} ms per approval; ${s.scrapes} scrapes${s.scrapes ? `, ${(s.scrapeMs / s.scrapes).toFixed(1)} ms each` : ''}; per round: ${s.perRound.join(', ')}`,
      )
    console.log(`  ratios to metrics off: on ${(rate(on.phase) / rate(off.phase)).toFixed(3)} (goal ≥ 0.95), stress ${(rate(stress.phase) / rate(off.phase)).toFixed(3)}`)
    if (bad !== 0 || http.errors !== 0) throw new Error(`the ledger broke under load (${bad} accounts off, ${http.errors} non-200)`)
    printFigures([
      figure(`approvals/s over HTTP with metrics on, scraped every ${INTERVAL.on / 1000} s (ceiling: metrics off)`, rate(on.phase), rate(off.phase), 'approvals/s', 'ratio >= 0.95'),
      figure(`approvals/s over HTTP with metrics on, scraped every ${INTERVAL.stress / 1000} s (ceiling: metrics off)`, rate(stress.phase), rate(off.phase), 'approvals/s'),
      figure(`server CPU ms per approval, metrics on, ${INTERVAL.on / 1000} s scrapes (ceiling: metrics off)`, cpuPer(on), cpuPer(off), 'ms'),
      figure(`server CPU ms per approval, metrics on, ${INTERVAL.stress / 1000} s scrapes (ceiling: metrics off)`, cpuPer(stress), cpuPer(off), 'ms'),
    ])
  } finally {
    for (const s of servers) await s.stop()
    await direct.end({ timeout: 5 })
    await db.drop()
  }
}

if (process.argv[2] === '--serve') {
  const on = process.argv[4] !== 'off'
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
