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
 *    first tenth (streamed in batches, the two should be alike).
 *
 *   bun bench/audit-chain.ts   (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS, BENCH_CHAIN_ROWS)
 */
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../server/config'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { createStore } from '../server/infra/storage'
import { issueKey } from '../server/access/keys'
import { sealCompany } from '../server/modules/audit/chain'
import { startAuditChain, type AuditChainWorker } from '../server/modules/audit/worker'
import { DomainEvents } from '../server/lib/events'
import { figure, printFigures, rssMiB } from './lib/common'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const OPS_PER_ROUND = Number(process.env.BENCH_OPS ?? 1000)
const SECONDS_PER_ROUND = Number(process.env.BENCH_SECONDS ?? 15)
const CHAIN_ROWS = Number(process.env.BENCH_CHAIN_ROWS ?? 1_000_000)
const ACCOUNTS = 256
const WARMUP = 200

function context(url: string, database: Awaited<ReturnType<typeof openDatabase>>): AppContext {
  const config = {
    ...loadConfig({ DATA_DIR: `/tmp/fos-bench-${process.pid}`, SIGNING_SECRET: 'bench-signing-secret-0123456789' }),
    databaseUrl: url,
    rateLimit: { perKey: 0, perIp: 0 },
  }
  return { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log: () => {}, events: new DomainEvents() }
}

/** The server side: the app as `bun run start` builds it, whose chain sealer the parent turns on and off by stdin. */
async function serve(url: string) {
  const database = await openDatabase({ url, poolMax: CONCURRENCY })
  const ctx = context(url, database)
  const [{ id: companyId }] = await database.rows<{ id: number }>(sql`insert into companies (name) values ('Bench') returning id`)
  const key = await database.db.transaction((tx) => issueKey(tx, companyId, null, 'bench'))
  const listening = createApp(ctx).listen({ port: 0, idleTimeout: 0 })
  console.log(JSON.stringify({ port: listening.server!.port, key: key.key, companyId }))
  let worker: AuditChainWorker | undefined
  let pending = ''
  for await (const chunk of Bun.stdin.stream()) {
    pending += new TextDecoder().decode(chunk)
    const lines = pending.split('\n')
    pending = lines.pop()!
    for (const line of lines) {
      if (line === 'on' && !worker) worker = startAuditChain(ctx)
      if (line === 'off' && worker) {
        await worker.stop()
        worker = undefined
      }
      console.log(`ok ${line}`)
    }
  }
  await worker?.stop()
  await listening.stop(true)
  await database.close()
  process.exit(0)
}

interface Phase {
  done: number
  seconds: number
}

async function drive(ids: number[], fn: (id: number) => Promise<void>, into: Phase) {
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
}

async function main() {
  const dbName = `fos_bench_chain_${process.pid}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const dbUrl = new URL(ADMIN_URL)
  dbUrl.pathname = `/${dbName}`
  const url = dbUrl.toString()
  await admin.unsafe(`create database ${dbName}`)
  const server = Bun.spawn([process.execPath, import.meta.path, '--serve', url], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const direct = postgres(url, { max: 4, idle_timeout: 1, onnotice: () => {} })
  const database = await openDatabase({ url, poolMax: 4 })
  try {
    const reader = server.stdout.getReader()
    let buffered = ''
    const nextLine = async () => {
      while (!buffered.includes('\n')) {
        const { value, done } = await reader.read()
        if (done) throw new Error('server exited')
        buffered += new TextDecoder().decode(value)
      }
      const at = buffered.indexOf('\n')
      const line = buffered.slice(0, at)
      buffered = buffered.slice(at + 1)
      return line
    }
    const command = async (line: 'on' | 'off') => {
      server.stdin.write(`${line}\n`)
      server.stdin.flush()
      if ((await nextLine()) !== `ok ${line}`) throw new Error(`server did not acknowledge ${line}`)
    }
    const { port, key, companyId } = JSON.parse(await nextLine()) as { port: number; key: string; companyId: number }
    const base = `http://127.0.0.1:${port}`

    const [{ id: typeId }] = await direct`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
    const [{ id: clientId }] = await direct`insert into clients (company_id, name, type) values (${companyId}, 'Caja', 0) returning id`
    await direct`insert into accounts (company_id, client_id, name, currency_name)
      select ${companyId}, ${clientId}, 'A' || g, 'ARS' from generate_series(1, ${ACCOUNTS}) g`
    const [{ low }] = await direct`select min(id)::int as low from accounts where company_id = ${companyId}`
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
    const approve = async (id: number) => {
      const res = await fetch(`${base}/api/operations/${id}/approve`, { method: 'POST', headers: { 'x-api-key': key } })
      await res.arrayBuffer()
      if (res.status !== 200) httpErrors++
    }
    const unsealed = async () => (await direct`select count(*)::int as n from audit_logs where company_id = ${companyId} and seq is null`)[0].n as number
    const auditRows = async () => (await direct`select count(*)::int as n from audit_logs where company_id = ${companyId}`)[0].n as number

    const scratch: Phase = { done: 0, seconds: 0 }
    await drive(await seedOps(WARMUP), approve, scratch)
    await sealCompany(database.db, companyId)
    httpErrors = 0

    const on: Phase = { done: 0, seconds: 0 }
    const off: Phase = { done: 0, seconds: 0 }
    let backlogRows = 0
    let backlogSeconds = 0
    let rowsPerApproval = 0
    let lagAtEnd = 0
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)
      for (const mode of order) {
        const ids = await seedOps(OPS_PER_ROUND)
        // The seeding itself writes audit rows: sealed before the round, so each round starts with no backlog.
        await sealCompany(database.db, companyId)
        const rowsBefore = await auditRows()
        await command(mode)
        const phase = mode === 'on' ? on : off
        const before = phase.done
        await drive(ids, approve, phase)
        await command('off')
        const made = (await auditRows()) - rowsBefore
        rowsPerApproval = made / (phase.done - before)
        if (mode === 'on') lagAtEnd = Math.max(lagAtEnd, await unsealed())
        else {
          const t0 = performance.now()
          backlogRows += await sealCompany(database.db, companyId)
          backlogSeconds += (performance.now() - t0) / 1000
        }
      }
    }
    const rate = (p: Phase) => p.done / p.seconds
    const sealRate = backlogRows / backlogSeconds
    console.log(`approve with the chain sealer on vs off: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds of up to ${OPS_PER_ROUND} approvals or ${SECONDS_PER_ROUND} s`)
    console.log(`  sealer on:  ${rate(on).toFixed(0)} approvals/s (${on.done}); at most ${lagAtEnd} rows still unsealed when a round ended`)
    console.log(`  sealer off: ${rate(off).toFixed(0)} approvals/s (${off.done}); ${httpErrors} non-200 in all`)
    console.log(`  audit rows per approval: ${rowsPerApproval.toFixed(1)}`)
    console.log(`  sealing the off rounds' backlog: ${backlogRows} rows in ${backlogSeconds.toFixed(2)} s = ${sealRate.toFixed(0)} rows/s`)
    console.log(`  = ${(sealRate / rate(off)).toFixed(1)}× the approve rate in rows/s, ${(sealRate / rowsPerApproval / rate(off)).toFixed(1)}× in approvals' worth of rows`)
    if (httpErrors !== 0) throw new Error('approvals failed under load')

    // The long chain: a company of its own, its rows generated in SQL as approvals would write them.
    const [{ id: chainCompany }] = await database.rows<{ id: number }>(sql`insert into companies (name) values ('Chain') returning id`)
    const chainKey = await database.db.transaction((tx) => issueKey(tx, chainCompany, null, 'bench'))
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
    await direct.unsafe('vacuum (analyze) audit_logs')

    // The verify route in this process, through the route policy (tenant role, one snapshot), memory sampled as it
    // runs: first over the first tenth of the chain, then over all of it. Streaming keeps the growth the same.
    const app = createApp(context(url, database))
    const verifyOver = async (query: string) => {
      const started = performance.now()
      const res = await app.handle(new Request(`http://bench/api/audit-logs/verify${query}`, { headers: { 'x-api-key': chainKey.key } }))
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
      sql`select count(*)::int as read, sum(length(audit_canonical(a))) from audit_logs a where a.company_id = ${chainCompany} and a.seq is not null`,
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
    server.stdin.end()
    await Promise.race([server.exited, Bun.sleep(10_000)])
    if (server.exitCode === null) server.kill()
    await database.close()
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
