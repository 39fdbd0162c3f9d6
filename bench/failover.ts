/**
 * Losing the primary, five times in a row (contract §17), on scripts/cluster-ha.sh's layout: a pg_auto_failover
 * monitor, a primary and a synchronous standby, two server processes on a multi-host DATABASE_URL behind HAProxy.
 * Eight writers create operations through HAProxy (approving most) while a webhook receiver takes every operation
 * event. Each round kills the primary's node (keeper and Postgres, SIGKILL), waits for writes to come back, lets the
 * load run a little longer, then restarts the killed node, which rejoins as the standby, and waits until the pair is
 * healthy again before the next kill.
 *
 * Figures: the write-unavailability window per kill (from the kill to the first acknowledged write sent after it;
 * min, median, max), how long after writes resumed every event committed before then had been delivered (per kill;
 * min, median, max), the answers by status while writes were unavailable, acknowledged writes missing from the
 * database afterwards, answers 500 over the whole run, and webhook events delivered more than once.
 *
 *   bun bench/failover.ts     (env: BENCH_FAILOVER_KILLS=5, BENCH_FAILOVER_AFTER_S=5)
 */
import { existsSync } from 'node:fs'
import postgres from 'postgres'
import { SignJWT } from 'jose'
import { envNumber, figure, printFigures, sleep } from './lib/common'
import { startHaCluster } from '../scripts/cluster-ha'

const KILLS = envNumber('BENCH_FAILOVER_KILLS', 5)
/** Load after writes are back, before the killed node is restarted. */
const AFTER_MS = envNumber('BENCH_FAILOVER_AFTER_S', 5) * 1000
const WRITERS = 8
const SECRET = 'bench-superadmin-secret-0123456789'
const EMAIL = 'bench@example.com'

const needed = ['/usr/bin/pg_autoctl', '/usr/bin/pgbackrest', '/usr/lib/postgresql/15/bin/postgres', '/usr/sbin/haproxy'].filter((f) => !existsSync(f))
if (needed.length) {
  console.log(`failover: needs ${needed.join(', ')} (Debian: apt-get install postgresql-15-auto-failover pgbackrest haproxy)`)
  process.exit(1)
}

// The receiver: every delivery by its webhook-id, to count repeats.
const deliveries = new Map<string, number>()
/** Each event's first arrival, and when it was committed. */
const delivered = new Map<string, { at: number; created: number }>()
const receiver = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(req) {
    const body = (await req.json()) as { type: string; created_at: string; data: { object: { id: number } } }
    const id = req.headers.get('webhook-id') ?? ''
    deliveries.set(id, (deliveries.get(id) ?? 0) + 1)
    const event = `${body.type} ${body.data.object.id}`
    if (!delivered.has(event)) delivered.set(event, { at: Date.now(), created: Date.parse(body.created_at) })
    return new Response('ok')
  },
})

const cluster = await startHaCluster({
  DB_POOL_MAX: '8',
  SUPERADMIN_JWT_SECRET: SECRET,
  SUPERADMIN_EMAILS: EMAIL,
  RATE_LIMIT_PER_MINUTE: '0',
  RATE_LIMIT_IP_PER_MINUTE: '0',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,2,2,2,5,5,5,5,5,10,10',
  WEBHOOK_POLL_MS: '300',
  S3_BUCKET: '',
})
const stopAll = async () => {
  receiver.stop(true)
  await cluster.stop()
}
process.on('SIGINT', () => void stopAll().then(() => process.exit(130)))

try {
  const api = async (method: string, path: string, opts: { key?: string; bearer?: string; body?: unknown } = {}) => {
    const headers: Record<string, string> = {}
    if (opts.key) headers['x-api-key'] = opts.key
    if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`
    if (opts.body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${cluster.base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
    const text = await res.text()
    let body: Record<string, any> = {}
    try {
      body = JSON.parse(text)
    } catch {
      // HAProxy's own pages are HTML.
    }
    return { status: res.status, body }
  }
  const jwt = await new SignJWT({ email: EMAIL }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
  const company = await api('POST', '/api/superadmin/companies', { bearer: jwt, body: { name: 'Bench failover' } })
  const key = (await api('POST', `/api/superadmin/companies/${company.body.id}/api-keys`, { bearer: jwt, body: { name: 'k' } })).body.key as string
  await api('POST', '/api/webhook-endpoints', { key, body: { url: `http://127.0.0.1:${receiver.port}/hook`, event_types: ['operation.*'] } })
  const type = await api('POST', '/api/operation-types', { key, body: { name: 'Cambio', kind: 'exchange' } })
  const caja = await api('POST', '/api/clients', { key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
  const cuenta = await api('POST', '/api/clients', { key, body: { name: 'Mayorista', type: 1, accounts: [{ currency_name: 'ARS' }] } })
  const accounts = [caja.body.accounts[0].id, cuenta.body.accounts[0].id]

  const acknowledged = new Map<number, 'created' | 'completed'>()
  /** Send time of every acknowledged create. */
  const ackSent: number[] = []
  /** Every answer: when it was sent and its status (0: no answer). */
  const answers: { sent: number; status: number }[] = []
  let loading = true
  const writer = async (w: number) => {
    let n = 0
    while (loading) {
      const amount = `${(w + 1) * 10 + (n++ % 89)}.50`
      const sent = Date.now()
      try {
        const op = await api('POST', '/api/operations', {
          key,
          body: { operation_type_id: type.body.id, transactions: [{ account_id: accounts[0], amount }, { account_id: accounts[1], amount: `-${amount}` }] },
        })
        answers.push({ sent, status: op.status })
        if (op.status === 201) {
          acknowledged.set(op.body.id, 'created')
          ackSent.push(sent)
          if (n % 4 !== 0) {
            const approveSent = Date.now()
            const ok = await api('POST', `/api/operations/${op.body.id}/approve`, { key })
            answers.push({ sent: approveSent, status: ok.status })
            if (ok.status === 200) acknowledged.set(op.body.id, 'completed')
          }
        }
      } catch {
        answers.push({ sent, status: 0 })
      }
      await sleep(40)
    }
  }
  const writers = Array.from({ length: WRITERS }, (_, w) => writer(w))

  const windows: number[] = []
  /** Each kill, and when the first write acknowledged after it was sent. */
  const kills: { at: number; back: number }[] = []
  const during: Record<string, number> = {}
  await sleep(3000)
  for (let round = 1; round <= KILLS; round++) {
    const primary = await cluster.control('primary')
    const killStarted = Date.now()
    await cluster.control('kill', primary)
    const killed = Date.now()
    let back: number | undefined
    while (back === undefined && Date.now() - killStarted < 60_000) {
      back = ackSent.find((t) => t > killed)
      await sleep(50)
    }
    const windowMs = (back ?? Date.now()) - killStarted
    windows.push(windowMs)
    kills.push({ at: killStarted, back: killStarted + windowMs })
    for (const a of answers) if (a.sent >= killStarted && a.sent < killStarted + windowMs) during[a.status] = (during[a.status] ?? 0) + 1
    console.log(`round ${round}: killed node ${primary}; writes back after ${(windowMs / 1000).toFixed(2)} s`)
    await sleep(AFTER_MS)
    await cluster.control('start', primary)
    await cluster.control('healthy')
    // Steady load on the healthy pair before the next kill.
    await sleep(3000)
  }
  loading = false
  await Promise.all(writers)

  const db = postgres(cluster.databaseUrl.replace('read-write', 'primary'), { max: 2, onnotice: () => {} })
  let lost = 0
  let expected: string[] = []
  try {
    const rows = await db<{ id: number; status: string }[]>`select id, status from operations where company_id = ${company.body.id}`
    const status = new Map(rows.map((r) => [Number(r.id), r.status]))
    for (const [id, what] of acknowledged) if (!status.has(id) || (what === 'completed' && status.get(id) !== 'completed')) lost++
    expected = rows.flatMap((r) => [`operation.created ${r.id}`, ...(r.status === 'completed' ? [`operation.approved ${r.id}`] : [])])
  } finally {
    await db.end({ timeout: 1 })
  }
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline && !expected.every((e) => delivered.has(e))) await sleep(200)
  const undelivered = expected.filter((e) => !delivered.has(e)).length
  const repeated = [...deliveries.values()].reduce((n, c) => n + c - 1, 0)
  const sorted = [...windows].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]
  // Per kill: from writes resuming to the delivery of the last event committed before then that had not arrived by
  // the kill.
  const caughtUp = kills
    .map(({ at, back }) => Math.max(0, ...[...delivered.values()].filter((d) => d.created < back && d.at > at).map((d) => d.at - back)))
    .sort((a, b) => a - b)
  const total500 = answers.filter((a) => a.status === 500).length
  console.log(`answers while writes were unavailable, by status: ${JSON.stringify(during)}`)
  console.log(`${acknowledged.size} acknowledged creates, ${answers.length} answers in all; ${expected.length} events expected, ${undelivered} not delivered, ${repeated} repeated deliveries`)
  printFigures([
    figure('failover: write-unavailability min', sorted[0] / 1000, null, 's'),
    figure('failover: write-unavailability median', median / 1000, null, 's', '<= 10'),
    figure('failover: write-unavailability max', sorted.at(-1)! / 1000, null, 's', '<= 15'),
    figure('failover: every earlier event delivered, after writes resumed, min', caughtUp[0] / 1000, null, 's'),
    figure('failover: every earlier event delivered, after writes resumed, median', caughtUp[Math.floor(caughtUp.length / 2)] / 1000, null, 's'),
    figure('failover: every earlier event delivered, after writes resumed, max', caughtUp.at(-1)! / 1000, null, 's', '<= 15'),
    figure('failover: answers 503 while unavailable', during[503] ?? 0, null, 'answers'),
    figure('failover: answers 500', total500, null, 'answers', '<= 0'),
    figure('failover: acknowledged writes lost', lost, null, 'writes', '<= 0'),
    figure('failover: events not delivered', undelivered, null, 'events', '<= 0'),
    figure('failover: events delivered twice or more', repeated, null, 'deliveries'),
  ])
} finally {
  await stopAll()
}
