/**
 * The audit chain's cost and capacity, on a throwaway database it creates and drops:
 *
 * 1. Approvals per second over HTTP (the app listening in its own process, as approve.ts drives it) with the chain
 *    sealer running in that process against the same with it stopped; rounds alternate so machine load hits both.
 * 2. Sealing capacity: the audit rows an off round left behind are sealed at once, timed, and set against the
 *    approve rate of the same run (the sealer must outrun what approvals produce, by far).
 * 3. A chain of BENCH_CHAIN_ROWS rows (default 1,000,000) generated directly in SQL, sealed in bulk, then
 *    `GET /api/audit-logs/verify` over all of it. Rows per second against one statement that builds every row's
 *    canonical JSON and nothing else (the ceiling: what reading and serialising the rows costs, with no hashing, no
 *    links checked and nothing sent); the process's memory growth over the whole chain against its growth over the
 *    first tenth (one statement that answers one row, the two should be alike).
 *
 *   bun bench/audit-chain.ts   (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS, BENCH_CHAIN_ROWS)
 */
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { createApp } from '../server/app'
import { openDatabase } from '../db/client'
import { sealCompany } from '../server/modules/audit/chain'
import { startAuditChain, type AuditChainWorker } from '../server/modules/audit/worker'
import { alternating, driveIds, envNumber, figure, phase, printFigures, rate, rssMiB } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { benchContext, serveApp, spawnApp, type ServedApp } from './lib/app'
import { CONCURRENCY, httpApprove, OPS_PER_ROUND, ROUNDS, SECONDS_PER_ROUND, SHARED_ACCOUNTS, sharedAccounts, twoLegOps, WARMUP } from './lib/approvals'
import { newCompany } from './lib/tenants'

const CHAIN_ROWS = envNumber('BENCH_CHAIN_ROWS', 1_000_000)

/** The server side: the app as `bun run start` builds it, whose chain sealer the parent turns on and off by stdin. */
function serve(url: string) {
  return serveApp(url, {
    poolMax: CONCURRENCY,
    company: 'Bench',
    companion: (ctx) => {
      let worker: AuditChainWorker | undefined
      return {
        async line(line) {
          if (line === 'on' && !worker) worker = startAuditChain(ctx)
          if (line === 'off' && worker) {
            await worker.stop()
            worker = undefined
          }
        },
        stop: async () => worker?.stop(),
      }
    },
  })
}

async function main() {
  const db = await createBenchDatabase('fos_bench_chain')
  const { url } = db
  let server: ServedApp | undefined
  const direct = postgres(url, { max: 4, idle_timeout: 1, onnotice: () => {} })
  const database = await openDatabase({ url, poolMax: 4 })
  try {
    const served = (server = await spawnApp(import.meta.path, [url]))
    const { companyId } = served
    const accounts = await sharedAccounts(direct, companyId, SHARED_ACCOUNTS)
    const seedOps = (count: number) => twoLegOps(direct, accounts, SHARED_ACCOUNTS, count)
    const http = { errors: 0 }
    const approve = httpApprove(served.base, served.key, http)
    const drive = (ids: number[], into = phase()) => driveIds(ids, approve, into, CONCURRENCY, SECONDS_PER_ROUND)
    const unsealed = async () => (await direct`select count(*)::int as n from audit_pending where company_id = ${companyId}`)[0].n as number
    const auditRows = async () => (await direct`select count(*)::int as n from audit_logs where company_id = ${companyId}`)[0].n as number

    await drive(await seedOps(WARMUP))
    await sealCompany(database.db, companyId)
    http.errors = 0

    const on = phase()
    const off = phase()
    let backlogRows = 0
    let backlogSeconds = 0
    let rowsPerApproval = 0
    let lagAtEnd = 0
    await alternating(ROUNDS, ['on', 'off'], async (mode) => {
      const ids = await seedOps(OPS_PER_ROUND)
      // The seeding itself writes audit rows: sealed before the round, so each round starts with no backlog.
      await sealCompany(database.db, companyId)
      const rowsBefore = await auditRows()
      await served.command(mode)
      const into = mode === 'on' ? on : off
      const before = into.done
      await drive(ids, into)
      await served.command('off')
      const made = (await auditRows()) - rowsBefore
      rowsPerApproval = made / (into.done - before)
      if (mode === 'on') lagAtEnd = Math.max(lagAtEnd, await unsealed())
      else {
        const t0 = performance.now()
        backlogRows += await sealCompany(database.db, companyId)
        backlogSeconds += (performance.now() - t0) / 1000
      }
    })
    const sealRate = backlogRows / backlogSeconds
    console.log(`approve with the chain sealer on vs off: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds of up to ${OPS_PER_ROUND} approvals or ${SECONDS_PER_ROUND} s`)
    console.log(`  sealer on:  ${rate(on).toFixed(0)} approvals/s (${on.done}); at most ${lagAtEnd} rows still unsealed when a round ended`)
    console.log(`  sealer off: ${rate(off).toFixed(0)} approvals/s (${off.done}); ${http.errors} non-200 in all`)
    console.log(`  audit rows per approval: ${rowsPerApproval.toFixed(1)}`)
    console.log(`  sealing the off rounds' backlog: ${backlogRows} rows in ${backlogSeconds.toFixed(2)} s = ${sealRate.toFixed(0)} rows/s`)
    console.log(`  = ${(sealRate / rate(off)).toFixed(1)}× the approve rate in rows/s, ${(sealRate / rowsPerApproval / rate(off)).toFixed(1)}× in approvals' worth of rows`)
    if (http.errors !== 0) throw new Error('approvals failed under load')

    // The long chain: a company of its own, its rows generated in SQL as approvals would write them.
    const { companyId: chainCompany, key: chainKey } = await newCompany(database, 'Chain')
    const g0 = performance.now()
    const STEP = 100_000
    for (let from = 1; from <= CHAIN_ROWS; from += STEP) {
      const to = Math.min(CHAIN_ROWS, from + STEP - 1)
      await direct`insert into audit_logs (company_id, entity, entity_id, action, raw_action, actor_email, before, after, changes, created_at)
        select ${chainCompany}, 'transactions', g, 'update', 'UPDATE', 'cajero@bench.test', b, b || jsonb_build_object('status', 'completed', 'completed_at', t),
               jsonb_build_array(jsonb_build_object('field', 'status', 'before', 'pending', 'after', 'completed'),
                                 jsonb_build_object('field', 'completed_at', 'before', null, 'after', t)), ts
          from generate_series(${from}::int, ${to}::int) g,
               lateral (select now() - (${CHAIN_ROWS}::int - g) * interval '10 ms' as ts) c,
               lateral (select to_char(c.ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"') as t) s,
               lateral (select jsonb_build_object('id', g, 'company_id', ${chainCompany}::int, 'operation_id', g / 2, 'account_id', g % 256,
                        'currency', 'ARS', 'amount', round((random() * 200000 - 100000)::numeric, 6), 'status', 'pending',
                        'created_at', t, 'updated_at', t, 'completed_at', null) as b) j`
    }
    const generated = (performance.now() - g0) / 1000
    console.log(`chain: ${CHAIN_ROWS} audit rows generated in SQL in ${generated.toFixed(1)} s`)
    const s0 = performance.now()
    const bulkSealed = await sealCompany(database.db, chainCompany)
    const bulkSeconds = (performance.now() - s0) / 1000
    console.log(`  sealed in bulk: ${bulkSealed} rows in ${bulkSeconds.toFixed(1)} s = ${(bulkSealed / bulkSeconds).toFixed(0)} rows/s`)
    await direct.unsafe('vacuum (analyze) audit_logs, audit_seals, audit_pending')

    // The verify route in this process, through the route policy (tenant role, one snapshot), memory sampled as it
    // runs: first over the first tenth of the chain, then over all of it. Only the answer row travels, so the growth
    // should be the same.
    const app = createApp(benchContext(url, database))
    const verifyOver = async (query: string) => {
      const started = performance.now()
      const res = await app.handle(new Request(`http://bench/api/audit-logs/verify${query}`, { headers: { 'x-api-key': chainKey } }))
      const body = (await res.json()) as { verified: boolean; rows: number }
      if (!body.verified) throw new Error(`verify answered ${JSON.stringify(body)}`)
      return { rows: body.rows, seconds: (performance.now() - started) / 1000 }
    }
    const baseline = rssMiB(process.pid)
    let peak = baseline
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(process.pid))), 20)
    const tenth = await verifyOver(`?to_seq=${Math.ceil(CHAIN_ROWS / 10)}`)
    const peakTenth = peak
    const whole = await verifyOver('')
    clearInterval(sampler)
    const result = { rows: whole.rows }
    const verifySeconds = whole.seconds
    if (result.rows < CHAIN_ROWS) throw new Error(`verify covered ${result.rows} rows`)

    // Ceiling: Postgres building the canonical JSON of every row of the chain in one statement, nothing hashed or sent.
    const r0 = performance.now()
    const [{ read }] = await database.rows<{ read: number }>(
      sql`select count(*)::int as read, sum(length(audit_canonical(a))) from audit_logs a where a.company_id = ${chainCompany}`,
    )
    const readSeconds = (performance.now() - r0) / 1000
    const verifyRate = result.rows / verifySeconds
    console.log(`  GET /api/audit-logs/verify over ${tenth.rows} rows: ${tenth.seconds.toFixed(1)} s; RSS ${baseline.toFixed(0)} → peak ${peakTenth.toFixed(0)} MiB`)
    console.log(`  GET /api/audit-logs/verify over ${result.rows} rows: ${verifySeconds.toFixed(1)} s = ${verifyRate.toFixed(0)} rows/s; RSS peak ${peak.toFixed(0)} MiB`)
    console.log(`  canonical JSON of every row built in one statement, nothing hashed: ${read} rows in ${readSeconds.toFixed(1)} s = ${(read / readSeconds).toFixed(0)} rows/s`)

    printFigures([
      figure(`approvals/s over HTTP, chain sealer on (ceiling: sealer off, same run)`, rate(on), rate(off), 'approvals/s', 'ratio >= 0.95'),
      figure(`audit rows sealed/s (ceiling: approvals/s of the same run; ${rowsPerApproval.toFixed(1)} rows per approval)`, sealRate, rate(off), 'rows/s', 'ratio >= 5'),
      figure(`verify over a ${result.rows}-row chain (ceiling: canonical JSON of every row built in one statement)`, verifyRate, read / readSeconds, 'rows/s', '>= 200000'),
      figure(`verify: peak RSS growth over ${result.rows} rows (ceiling: over the first ${tenth.rows})`, peak - baseline, peakTenth - baseline, 'MiB', 'ratio <= 1.5'),
    ])
  } finally {
    await server?.stop()
    await database.close()
    await direct.end({ timeout: 5 })
    await db.drop()
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3])
else {
  await main()
  process.exit(0)
}
