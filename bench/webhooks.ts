/**
 * Events and webhooks, three figures:
 *  1. approvals/s over HTTP with the outbox recording every event and one endpoint subscribed (the delivery
 *     worker sending to a local receiver meanwhile), against the same app with no outbox listener at all;
 *     two server processes on one throwaway database, rounds alternating so machine load hits both alike;
 *  2. commit → first delivery p99 with approvals offered at 200/s (each sent at its own time, whatever the ones
 *     before it are doing), from the moment each approval's 200 arrives (the commit is a moment before it; a
 *     delivery that beats the answer counts 0); the same from the moment the approval was sent (an upper bound:
 *     the write itself included) and the rate reached are printed too;
 *  3. deliveries/s to a local receiver: a queue of 5,000 deliveries of distinct objects committed at once (then a
 *     NOTIFY wakes the worker, as another process would), from that commit to the last delivery's arrival, against
 *     the same receiver driven by a plain fetch loop at the worker's per-endpoint concurrency.
 *
 *   bun bench/webhooks.ts     (env: BENCH_ADMIN_URL, BENCH_CONCURRENCY, BENCH_ROUNDS, BENCH_OPS, BENCH_SECONDS)
 */
import postgres from 'postgres'
import { DomainEvents, type Listener } from '../server/lib/events'
import { deliveryWorker } from '../server/modules/webhooks'
import { alternating, driveIds, figure, percentile, phase, printFigures, rate } from './lib/common'
import { createBenchDatabase } from './lib/database'
import { serveApp, spawnApp, type ServedApp } from './lib/app'
import { CONCURRENCY, httpApprove, OPS_PER_ROUND, ROUNDS, SECONDS_PER_ROUND, SHARED_ACCOUNTS, sharedAccounts, twoLegOps, WARMUP } from './lib/approvals'

const PACED_RATE = 200
const PACED_SECONDS = 10
const DRAIN = 5000
/** WEBHOOK_CONCURRENCY_PER_ENDPOINT's default: the worker's concurrency towards the one receiver. */
const PER_ENDPOINT = 32

/** The app without the outbox: every listener but the catch-all one is kept (the blotter's still runs). */
class WithoutOutbox extends DomainEvents {
  override on(pattern: string, fn: Listener): this {
    return pattern === '*' ? this : super.on(pattern, fn)
  }
}

function serve(url: string, mode: 'events' | 'plain') {
  return serveApp(url, {
    poolMax: CONCURRENCY,
    company: `Bench ${mode}`,
    env: { WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true' },
    events: mode === 'events' ? new DomainEvents() : new WithoutOutbox(),
    log: (e) => (e.level === 'error' ? console.error(JSON.stringify(e)) : undefined),
    companion: mode === 'events' ? (ctx) => deliveryWorker(ctx).start() : undefined,
  })
}

async function main() {
  const db = await createBenchDatabase('fos_bench_wh')
  const direct = postgres(db.url, { max: 4, idle_timeout: 1, onnotice: () => {} })

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
  const servers: ServedApp[] = []
  try {
    const withEvents = await spawnApp(import.meta.path, [db.url, 'events'])
    servers.push(withEvents)
    const plain = await spawnApp(import.meta.path, [db.url, 'plain'])
    servers.push(plain)

    const endpoint = await fetch(`${withEvents.base}/api/webhook-endpoints`, {
      method: 'POST',
      headers: { 'x-api-key': withEvents.key, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiver.port}/hook`, event_types: ['operation.approved'] }),
    })
    if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${await endpoint.text()}`)
    const { id: endpointId } = (await endpoint.json()) as { id: number }

    const setup = async (companyId: number) => {
      const accounts = await sharedAccounts(direct, companyId, SHARED_ACCOUNTS)
      return (count: number) => twoLegOps(direct, accounts, SHARED_ACCOUNTS, count)
    }
    const seedEvents = await setup(withEvents.companyId)
    const seedPlain = await setup(plain.companyId)

    const http = { errors: 0 }
    const approveEvents = httpApprove(withEvents.base, withEvents.key, http)
    const approvePlain = httpApprove(plain.base, plain.key, http)
    const drive = (ids: number[], fn: (id: number) => Promise<void>, into = phase()) => driveIds(ids, fn, into, CONCURRENCY, SECONDS_PER_ROUND)

    await drive(await seedEvents(WARMUP), approveEvents)
    await drive(await seedPlain(WARMUP), approvePlain)
    http.errors = 0
    const eventsPhase = phase()
    const plainPhase = phase()
    await alternating(ROUNDS, ['events', 'plain'], async (mode) => {
      if (mode === 'events') await drive(await seedEvents(OPS_PER_ROUND), approveEvents, eventsPhase)
      else await drive(await seedPlain(OPS_PER_ROUND), approvePlain, plainPhase)
    })

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
    const answeredAt = new Map<number, number>()
    const started = performance.now()
    await Promise.all(
      paced.map(async (id, i) => {
        const at = started + (i * 1000) / PACED_RATE
        const wait = at - performance.now()
        if (wait > 0) await Bun.sleep(wait)
        sentAt.set(id, performance.now())
        await approveEvents(id)
        answeredAt.set(id, performance.now())
      }),
    )
    const pacedSeconds = (performance.now() - started) / 1000
    await settle()
    const approvedEvents = await direct`select id, object_id from events where id > ${first} and type = 'operation.approved' and company_id = ${withEvents.companyId}`
    const since = (from: Map<number, number>) =>
      approvedEvents
        .map((e) => Math.max(0, (firstArrival.get(`evt_${e.id}`) ?? NaN) - from.get(e.object_id as number)!))
        .filter(Number.isFinite)
        .sort((a, b) => a - b)
    const latencies = since(answeredAt)
    const fromSent = since(sentAt)
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
    await direct`select pg_notify('fos_webhooks', 'bench')`
    while (received - before < DRAIN) {
      if (performance.now() - drainStart > 120_000) throw new Error('drain did not finish')
      await Bun.sleep(5)
    }
    const drainRate = DRAIN / ((performance.now() - drainStart) / 1000)

    const body = JSON.stringify({ id: 'evt_0', type: 'webhook.test', created_at: new Date().toISOString(), data: { object: { n: 0, pad: 'x'.repeat(600) } } })
    let sent = 0
    const plainStart = performance.now()
    await Promise.all(
      Array.from({ length: PER_ENDPOINT }, async () => {
        while (sent < DRAIN) {
          sent++
          const res = await fetch(`http://127.0.0.1:${receiver.port}/hook`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'evt_0' }, body })
          await res.arrayBuffer()
        }
      }),
    )
    const fetchRate = DRAIN / ((performance.now() - plainStart) / 1000)

    console.log(`webhooks benchmark: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds; one endpoint subscribed to operation.approved`)
    console.log(`  approve with outbox and delivery: ${rate(eventsPhase).toFixed(0)} approvals/s (${eventsPhase.done}); without: ${rate(plainPhase).toFixed(0)} approvals/s (${plainPhase.done}); ${http.errors} non-200`)
    console.log(`  paced run: ${paced.length} approvals in ${pacedSeconds.toFixed(1)} s (${(paced.length / pacedSeconds).toFixed(0)}/s of ${PACED_RATE}/s asked)`)
    console.log(`  commit → first delivery at ${PACED_RATE} approvals/s: p50 ${percentile(latencies, 50).toFixed(0)} ms, p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${latencies.at(-1)!.toFixed(0)} ms`)
    console.log(`  the same from the moment each approval was sent: p50 ${percentile(fromSent, 50).toFixed(0)} ms, p99 ${percentile(fromSent, 99).toFixed(0)} ms`)
    console.log(`  drain of ${DRAIN} deliveries: ${drainRate.toFixed(0)} deliveries/s; plain fetch loop (${PER_ENDPOINT} concurrent): ${fetchRate.toFixed(0)} requests/s`)
    if (http.errors) throw new Error('approvals failed under load')
    printFigures([
      figure(`approvals/s over HTTP with events + 1 endpoint (ceiling: same app without the outbox)`, rate(eventsPhase), rate(plainPhase), 'approvals/s', 'ratio >= 0.9'),
      figure(`commit → first delivery p99 at ${PACED_RATE} writes/s asked (from the write's 200)`, percentile(latencies, 99), null, 'ms', '<= 500'),
      figure(`deliveries/s to a local receiver (ceiling: plain fetch loop, ${PER_ENDPOINT} concurrent)`, drainRate, fetchRate, 'deliveries/s', '>= 1000'),
    ])
  } finally {
    for (const s of servers) await s.stop(20_000)
    receiver.stop(true)
    await direct.end({ timeout: 5 })
    await db.drop()
  }
}

if (process.argv[2] === '--serve') await serve(process.argv[3], process.argv[4] as 'events' | 'plain')
else {
  await main()
  process.exit(0)
}
