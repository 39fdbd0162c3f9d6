/**
 * Events and webhooks, three figures:
 *  1. approvals/s over HTTP with the outbox recording every event and one endpoint subscribed (the delivery
 *     worker sending to a local receiver meanwhile), against the same app with no outbox listener at all;
 *     two server processes on one throwaway database, rounds alternating so machine load hits both alike;
 *  2. commit → first delivery p99 with approvals paced at 200/s, from the moment each approval's 200 arrives (the
 *     commit is a moment before it; a delivery that beats the answer counts 0); the rate reached is printed too;
 *  3. deliveries/s to a local receiver, draining a queue of 5,000 deliveries of distinct objects, against the
 *     same receiver driven by a plain fetch loop at the worker's per-endpoint concurrency.
 *
 *   bun bench/webhooks.ts     (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS)
 */
import postgres from 'postgres'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../server/config'
import { createApp } from '../server/app'
import type { AppContext } from '../server/context'
import { openDatabase } from '../db/client'
import { createStore } from '../server/infra/storage'
import { issueKey } from '../server/access/keys'
import { DomainEvents, type Listener } from '../server/lib/events'
import { deliveryWorker } from '../server/modules/webhooks'
import { figure, percentile, printFigures } from './lib/common'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4)
const OPS_PER_ROUND = Number(process.env.BENCH_OPS ?? 1000)
const SECONDS_PER_ROUND = Number(process.env.BENCH_SECONDS ?? 15)
const PACED_RATE = 200
const PACED_SECONDS = 10
const DRAIN = 5000
const ACCOUNTS = 256
const WARMUP = 200

/** The app without the outbox: every listener but the catch-all one is kept (the blotter's still runs). */
class WithoutOutbox extends DomainEvents {
  override on(pattern: string, fn: Listener): this {
    return pattern === '*' ? this : super.on(pattern, fn)
  }
}

async function serve(url: string, mode: 'events' | 'plain') {
  const database = await openDatabase({ url, poolMax: CONCURRENCY })
  const config = {
    ...loadConfig({
      DATA_DIR: `/tmp/fos-bench-${process.pid}`,
      SIGNING_SECRET: 'bench-signing-secret-0123456789',
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    }),
    databaseUrl: url,
    rateLimit: { perKey: 0, perIp: 0 },
  }
  const events = mode === 'events' ? new DomainEvents() : new WithoutOutbox()
  const log = (e: Record<string, unknown>) => (e.level === 'error' ? console.error(JSON.stringify(e)) : undefined)
  const ctx: AppContext = { config, database, db: database.db, store: createStore(config), clock: () => new Date(), log, events }
  const [{ id: companyId }] = await database.rows<{ id: number }>(sql`insert into companies (name) values (${`Bench ${mode}`}) returning id`)
  const key = await database.db.transaction((tx) => issueKey(tx, companyId, null, 'bench'))
  const listening = createApp(ctx).listen({ port: 0, idleTimeout: 0 })
  const worker = mode === 'events' ? deliveryWorker(ctx).start() : undefined
  console.log(JSON.stringify({ port: listening.server!.port, key: key.key, companyId }))
  for await (const _ of Bun.stdin.stream());
  await listening.stop(true)
  await worker?.stop()
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

async function spawnServer(url: string, mode: 'events' | 'plain') {
  const proc = Bun.spawn([process.execPath, import.meta.path, '--serve', url, mode], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let text = ''
  while (!text.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error('server exited before listening')
    text += new TextDecoder().decode(value)
  }
  const info = JSON.parse(text.split('\n')[0]) as { port: number; key: string; companyId: number }
  return { proc, ...info, base: `http://127.0.0.1:${info.port}` }
}

async function main() {
  const dbName = `fos_bench_wh_${process.pid}`
  const admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} })
  const dbUrl = new URL(ADMIN_URL)
  dbUrl.pathname = `/${dbName}`
  await admin.unsafe(`create database ${dbName}`)
  const direct = postgres(dbUrl.toString(), { max: 4, idle_timeout: 1, onnotice: () => {} })

  // The local receiver: answers 200 at once and notes when each event's first delivery arrived.
  const firstArrival = new Map<string, number>()
  let received = 0
  const receiver = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req) {
      await req.arrayBuffer()
      received++
      const id = req.headers.get('webhook-id')!
      if (!firstArrival.has(id)) firstArrival.set(id, performance.now())
      return new Response('ok')
    },
  })
  const servers: Awaited<ReturnType<typeof spawnServer>>[] = []
  try {
    const withEvents = await spawnServer(dbUrl.toString(), 'events')
    servers.push(withEvents)
    const plain = await spawnServer(dbUrl.toString(), 'plain')
    servers.push(plain)

    const endpoint = await fetch(`${withEvents.base}/api/webhook-endpoints`, {
      method: 'POST',
      headers: { 'x-api-key': withEvents.key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, event_types: ['operation.approved'] }),
    })
    if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${await endpoint.text()}`)
    const { id: endpointId } = (await endpoint.json()) as { id: number }

    const setup = async (companyId: number) => {
      const [{ id: typeId }] = await direct`insert into operation_types (company_id, name, kind) values (${companyId}, 'Cambio', 'exchange') returning id`
      const [{ id: clientId }] = await direct`insert into clients (company_id, name, type) values (${companyId}, 'Caja', 0) returning id`
      await direct`insert into accounts (company_id, client_id, name, currency_name)
        select ${companyId}, ${clientId}, 'A' || g, 'ARS' from generate_series(1, ${ACCOUNTS}) g`
      const [{ low }] = await direct`select min(id)::int as low from accounts where company_id = ${companyId}`
      return async (count: number): Promise<number[]> => {
        const rows = await direct`insert into operations (company_id, operation_type_id, status)
          select ${companyId}, ${typeId}, 'pending' from generate_series(1, ${count}) returning id`
        const ids = rows.map((r) => r.id as number)
        await direct`insert into transactions (company_id, operation_id, account_id, currency, amount, status)
          select ${companyId}, o.id, ${low} + floor(random() * ${ACCOUNTS})::int, 'ARS', s * 12.345678, 'pending'
          from unnest(${ids}::int[]) o(id), (values (1), (-1)) v(s)`
        return ids
      }
    }
    const seedEvents = await setup(withEvents.companyId)
    const seedPlain = await setup(plain.companyId)

    let httpErrors = 0
    const approve = (s: typeof withEvents) => async (id: number) => {
      const res = await fetch(`${s.base}/api/operations/${id}/approve`, { method: 'POST', headers: { 'x-api-key': s.key } })
      await res.arrayBuffer()
      if (res.status !== 200) httpErrors++
    }

    const scratch: Phase = { done: 0, seconds: 0 }
    await drive(await seedEvents(WARMUP), approve(withEvents), scratch)
    await drive(await seedPlain(WARMUP), approve(plain), scratch)
    httpErrors = 0
    const eventsPhase: Phase = { done: 0, seconds: 0 }
    const plainPhase: Phase = { done: 0, seconds: 0 }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['events', 'plain'] as const) : (['plain', 'events'] as const)
      for (const mode of order) {
        if (mode === 'events') await drive(await seedEvents(OPS_PER_ROUND), approve(withEvents), eventsPhase)
        else await drive(await seedPlain(OPS_PER_ROUND), approve(plain), plainPhase)
      }
    }
    const rate = (p: Phase) => p.done / p.seconds

    // Let the worker catch up before the latency run, so the run measures latency, not a backlog.
    const settle = async () => {
      for (let i = 0; i < 600; i++) {
        const [{ n }] = await direct`select count(*)::int as n from webhook_deliveries where status = 'pending'`
        if (n === 0) return
        await Bun.sleep(100)
      }
      const outcomes = await direct`select state, wait_event_type, wait_event, now() - xact_start as age, left(query, 100) as q from pg_stat_activity where datname = current_database() and state <> 'idle'`
      throw new Error(`deliveries did not drain: ${JSON.stringify(outcomes)}`)
    }
    await settle()

    const paced = await seedEvents(PACED_RATE * PACED_SECONDS)
    const [{ first }] = await direct`select coalesce(max(id), 0)::bigint as first from events`
    const sentAt = new Map<number, number>()
    const started = performance.now()
    await Promise.all(
      paced.map(async (id, i) => {
        const at = started + (i * 1000) / PACED_RATE
        const wait = at - performance.now()
        if (wait > 0) await Bun.sleep(wait)
        await approve(withEvents)(id)
        sentAt.set(id, performance.now())
      }),
    )
    const pacedSeconds = (performance.now() - started) / 1000
    await settle()
    const approvedEvents = await direct`select id, object_id from events where id > ${first} and type = 'operation.approved' and company_id = ${withEvents.companyId}`
    const latencies = approvedEvents
      .map((e) => Math.max(0, (firstArrival.get(`evt_${e.id}`) ?? NaN) - sentAt.get(e.object_id as number)!))
      .filter(Number.isFinite)
      .sort((a, b) => a - b)
    if (latencies.length !== paced.length) throw new Error(`paced run: ${latencies.length} of ${paced.length} deliveries seen`)

    // A queue of deliveries of distinct objects, committed at once; the worker drains it.
    const before = received
    await direct`with ev as (
        insert into events (company_id, type, object_kind, object_id, data)
        select ${withEvents.companyId}, 'webhook.test', 'bench', g, jsonb_build_object('object', jsonb_build_object('n', g, 'pad', repeat('x', 600)))
        from generate_series(1, ${DRAIN}) g returning id, object_id
      )
      insert into webhook_deliveries (company_id, endpoint_id, event_id, object_key)
      select ${withEvents.companyId}, ${endpointId}, id, 'bench:' || object_id from ev`
    const drainStart = performance.now()
    while (received - before < DRAIN) {
      if (performance.now() - drainStart > 120_000) throw new Error('drain did not finish')
      await Bun.sleep(5)
    }
    const drainRate = DRAIN / ((performance.now() - drainStart) / 1000)

    const body = JSON.stringify({ id: 'evt_0', type: 'webhook.test', created_at: new Date().toISOString(), data: { object: { n: 0, pad: 'x'.repeat(600) } } })
    let sent = 0
    const plainStart = performance.now()
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (sent < DRAIN) {
          sent++
          const res = await fetch(`http://127.0.0.1:${receiver.port}/hook`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'evt_0' }, body })
          await res.arrayBuffer()
        }
      }),
    )
    const fetchRate = DRAIN / ((performance.now() - plainStart) / 1000)

    console.log(`webhooks benchmark: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds; one endpoint subscribed to operation.approved`)
    console.log(`  approve with outbox and delivery: ${rate(eventsPhase).toFixed(0)} approvals/s (${eventsPhase.done}); without: ${rate(plainPhase).toFixed(0)} approvals/s (${plainPhase.done}); ${httpErrors} non-200`)
    console.log(`  paced run: ${paced.length} approvals in ${pacedSeconds.toFixed(1)} s (${(paced.length / pacedSeconds).toFixed(0)}/s of ${PACED_RATE}/s asked)`)
    console.log(`  commit → first delivery at ${PACED_RATE} approvals/s: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${latencies.at(-1)!.toFixed(0)} ms`)
    console.log(`  drain of ${DRAIN} deliveries: ${drainRate.toFixed(0)} deliveries/s; plain fetch loop (8 concurrent): ${fetchRate.toFixed(0)} requests/s`)
    if (httpErrors) throw new Error('approvals failed under load')
    printFigures([
      figure(`approvals/s over HTTP with events + 1 endpoint (ceiling: same app without the outbox)`, rate(eventsPhase), rate(plainPhase), 'approvals/s', 'ratio >= 0.9'),
      figure(`commit → first delivery p99 at ${PACED_RATE} writes/s asked (from the write's 200)`, percentile(latencies, 99), null, 'ms', '<= 500'),
      figure(`deliveries/s to a local receiver (ceiling: plain fetch loop, 8 concurrent)`, drainRate, fetchRate, 'deliveries/s', '>= 1000'),
    ])
  } finally {
    for (const s of servers) {
      s.proc.stdin.end()
      await Promise.race([s.proc.exited, Bun.sleep(20_000)])
      if (s.proc.exitCode === null) s.proc.kill()
    }
    receiver.stop(true)
    await direct.end({ timeout: 5 })
    await admin.unsafe(`drop database if exists ${dbName} with (force)`)
    await admin.end({ timeout: 5 })
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3], process.argv[4] as 'events' | 'plain')
else {
  await main()
  process.exit(0)
}
