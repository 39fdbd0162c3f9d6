/**
 * Waiting-room fan-out: N concurrent SSE clients on one listening server process (loopback only).
 * For each phase (1,000 and 5,000 clients by default) it spawns `bun server/main.ts` on a throwaway
 * database, opens N raw HTTP/1.1 event streams, makes calls through the API one at a time and measures,
 * for every client, the time from the call's HTTP response to the arrival of the snapshot carrying it
 * (p50/p99/max), the number of (client, call) deliveries that never arrived, and the server's resident
 * memory per connection (VmRSS from /proc/<pid>/status, before and after connecting).
 * Bounded: a deadline per wait and per phase; the server is killed and the database dropped at the end.
 *
 *   bun bench/sse.ts        (BENCH_ADMIN_URL, BENCH_CLIENTS="1000,5000", BENCH_CALLS, BENCH_CALL_GAP_MS override)
 */
import { SignJWT } from 'jose'
import { cpus, loadavg } from 'node:os'
import { spawnSync } from 'node:child_process'
import { cpuMs, envNumber, envNumbers, figure, percentile, printFigures, rssMiB, SIGNING_SECRET, sleep, type Figure } from './lib/common'
import { createBenchDatabase, type BenchDatabase } from './lib/database'
import { startMainServer } from './lib/server'

const PHASES = envNumbers('BENCH_CLIENTS', '1000,5000')
const CALLS = envNumber('BENCH_CALLS', 20)
/** Calls are spaced wider than the hub's rebuild gap, so every call is its own snapshot and none may be coalesced away. */
const CALL_GAP_MS = envNumber('BENCH_CALL_GAP_MS', 300)
const DELIVERY_TIMEOUT_MS = 5_000
const CONNECT_BATCH = 250
const PHASE_DEADLINE_MS = 120_000
const SECRET = 'bench-superadmin-secret-0123456789'
const EMAIL = 'bench@fos.test'

// Every client holds a socket in this process and its peer in the server: make sure the descriptor limit allows it.
const wanted = Math.max(...PHASES) * 2 + 1024
const limit = Number(spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout.trim())
if (Number.isFinite(limit) && limit < wanted && !process.env.BENCH_RAISED) {
  // A child shell may raise the soft limit up to the hard one for a fresh copy of this script.
  const r = spawnSync('sh', ['-c', `ulimit -n ${wanted} 2>/dev/null || ulimit -n $(ulimit -Hn); exec "$0" "$@"`, process.execPath, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, BENCH_RAISED: '1' },
  })
  process.exit(r.status ?? 1)
}

const rssKiB = (pid: number) => rssMiB(pid) * 1024

// The rate limits are off: thousands of screens from one loopback address would otherwise trip the per-address one.
function startServer(databaseUrl: string) {
  return startMainServer({
    databaseUrl,
    name: 'sse',
    env: {
      SUPERADMIN_JWT_SECRET: SECRET,
      SUPERADMIN_EMAILS: EMAIL,
      SIGNING_SECRET,
      // All clients share one token here; the fan-out cost is the same as for one token per screen.
      SSE_MAX_STREAMS_PER_TOKEN: '100000',
    },
    stdout: process.env.BENCH_SERVER_LOG ? Bun.file(process.env.BENCH_SERVER_LOG) : 'ignore',
    healthTimeoutMs: 30_000,
  })
}

async function api(base: string, method: string, path: string, auth: Record<string, string>, body?: unknown) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...auth, ...(body !== undefined && { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = await res.json()
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
  return json as any
}

async function setupCompany(base: string, calls: number) {
  const jwt = await new SignJWT({ email: EMAIL }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('10m').sign(new TextEncoder().encode(SECRET))
  const bearer = { authorization: `Bearer ${jwt}` }
  const company = await api(base, 'POST', '/api/superadmin/companies', bearer, { name: 'Bench' })
  await api(base, 'PATCH', `/api/superadmin/companies/${company.id}`, bearer, { modules: { ventanilla: true } })
  const { key } = await api(base, 'POST', `/api/superadmin/companies/${company.id}/api-keys`, bearer, { name: 'bench' })
  const auth = { 'x-api-key': key }
  await api(base, 'PUT', '/api/ventanilla/rates', auth, { rates: [{ currency: 'USD', buy: 1000, sell: 1040 }, { currency: 'EUR', buy: 1100, sell: 1150 }] })
  const service = await api(base, 'POST', '/api/ventanilla/services', auth, { name: 'Cambio', prefix: 'A' })
  for (let i = 0; i < calls; i++) await api(base, 'POST', '/api/ventanilla/tickets', auth, { service_id: service.id, customer_name: `Cliente ${i} Apellido` })
  const { token } = await api(base, 'POST', '/api/ventanilla/tokens', auth, { name: 'bench' })
  return { auth, token: token as string }
}

const CURRENT = /"currentCall":(?:null|\{"ticket":"A-(\d+)")/g

/** One event-stream client on a raw socket: cheap enough to hold thousands in this process. */
class Client {
  buf = ''
  primed = false
  closed = false
  /** Arrival time of the snapshot whose current call is ticket k (index k−1). */
  seen: Float64Array
  socket: Awaited<ReturnType<typeof Bun.connect>> | null = null

  constructor(calls: number) {
    this.seen = new Float64Array(calls).fill(NaN)
  }

  onData(text: string) {
    const at = performance.now()
    this.buf += text
    CURRENT.lastIndex = 0
    let m: RegExpExecArray | null
    let consumed = 0
    while ((m = CURRENT.exec(this.buf))) {
      this.primed = true
      consumed = CURRENT.lastIndex
      if (m[1]) {
        const k = Number(m[1]) - 1
        if (k < this.seen.length && Number.isNaN(this.seen[k])) this.seen[k] = at
      }
    }
    // Keep only what may hold the start of a match split across reads.
    this.buf = this.buf.slice(Math.max(consumed, this.buf.length - 64))
  }
}

async function connect(port: number, path: string, client: Client) {
  client.socket = await Bun.connect({
    hostname: '127.0.0.1',
    port,
    socket: {
      open(s) {
        s.setNoDelay(true)
        s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`)
      },
      data(_s, data) {
        // Only ASCII ticket numbers are looked for, so a byte-per-character decode is enough and cheapest.
        client.onData(data.toString('latin1'))
      },
      close() {
        client.closed = true
      },
      error() {
        client.closed = true
      },
    },
  })
}

async function until(check: () => boolean, ms: number) {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) return false
    await sleep(10)
  }
  return true
}

async function phase(n: number, db: BenchDatabase) {
  const server = await startServer(db.url)
  const { proc, base, port } = server
  const clients: Client[] = []
  try {
    const { auth, token } = await setupCompany(base, CALLS)
    const path = `/api/public/ventanilla/${token}/events`
    await sleep(500)
    const rssBefore = rssKiB(proc.pid)
    const connectStart = performance.now()
    for (let i = 0; i < n; i += CONNECT_BATCH) {
      const batch = Array.from({ length: Math.min(CONNECT_BATCH, n - i) }, () => new Client(CALLS))
      clients.push(...batch)
      await Promise.all(batch.map((c) => connect(port, path, c)))
    }
    const allPrimed = await until(() => clients.every((c) => c.primed), 60_000)
    const connectMs = performance.now() - connectStart
    await sleep(500)
    const rssAfter = rssKiB(proc.pid)
    if (!allPrimed) console.log(`  warning: ${clients.filter((c) => !c.primed).length} clients never got their first snapshot`)

    const calledAt: number[] = []
    const serverCpuBefore = cpuMs(proc.pid)
    const benchCpuBefore = process.cpuUsage()
    for (let k = 0; k < CALLS; k++) {
      await api(base, 'POST', '/api/ventanilla/calls', auth, { desk: `Caja ${(k % 4) + 1}` })
      calledAt.push(performance.now())
      await until(() => clients.every((c) => !Number.isNaN(c.seen[k])), CALL_GAP_MS)
      await sleep(Math.max(0, CALL_GAP_MS - (performance.now() - calledAt[k])))
    }
    await until(() => clients.every((c) => c.seen.every((t) => !Number.isNaN(t))), DELIVERY_TIMEOUT_MS)
    const serverCpuPerCall = (cpuMs(proc.pid) - serverCpuBefore) / CALLS
    const benchCpu = process.cpuUsage(benchCpuBefore)
    const clientsCpuPerCall = (benchCpu.user + benchCpu.system) / 1000 / CALLS

    // Earliest receipt per call: notification, rebuild and the first write, before fan-out to the rest.
    const firsts = calledAt
      .map((at, k) => Math.min(...clients.map((c) => c.seen[k]).filter((t) => !Number.isNaN(t))) - at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b)
    const latencies: number[] = []
    let lost = 0
    for (const c of clients)
      for (let k = 0; k < CALLS; k++) {
        if (Number.isNaN(c.seen[k])) lost++
        else latencies.push(Math.max(0, c.seen[k] - calledAt[k]))
      }
    latencies.sort((a, b) => a - b)
    const rssGrowth = rssAfter - rssBefore
    return {
      clients: n,
      connected: clients.filter((c) => !c.closed).length,
      connectSeconds: +(connectMs / 1000).toFixed(2),
      calls: CALLS,
      deliveries: latencies.length,
      lost,
      p50ms: +percentile(latencies, 50).toFixed(1),
      p99ms: +percentile(latencies, 99).toFixed(1),
      maxMs: +(latencies[latencies.length - 1] ?? NaN).toFixed(1),
      firstClientP50ms: +percentile(firsts, 50).toFixed(1),
      // CPU spent per call (rebuild + writing to every stream; reading them all on the client side): what the
      // latency would approach on otherwise idle cores.
      serverCpuMsPerCall: +serverCpuPerCall.toFixed(1),
      clientsCpuMsPerCall: +clientsCpuPerCall.toFixed(1),
      serverRssMiB: { before: +(rssBefore / 1024).toFixed(1), after: +(rssAfter / 1024).toFixed(1) },
      rssPerConnectionKiB: +(rssGrowth / n).toFixed(1),
    }
  } finally {
    for (const c of clients) c.socket?.end()
    await server.stop()
  }
}

async function main() {
  const db = await createBenchDatabase('fos_bench_sse')
  const hardStop = setTimeout(() => {
    console.error('bench: phase deadline passed, stopping')
    process.exit(1)
  }, PHASE_DEADLINE_MS * PHASES.length + 60_000)
  try {
    console.log(`SSE fan-out: ${CALLS} calls, ${CALL_GAP_MS} ms apart; clients per phase: ${PHASES.join(', ')}`)
    // Server, clients and Postgres share this machine: the figures only mean something next to its size and load.
    console.log(`machine: ${cpus().length} CPUs, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
    const figures: Figure[] = []
    for (const n of PHASES) {
      const result = await phase(n, db)
      console.log(JSON.stringify(result))
      // For bun run bench: every client's delivery against the first client's (notify, rebuild, first write).
      figures.push(
        figure(`SSE fan-out p99 delivery, ${n} clients (ceiling: first client p50)`, result.p99ms, result.firstClientP50ms, 'ms', n >= 5000 ? '<= 100' : '<= 2000'),
        figure(`SSE fan-out lost deliveries, ${n} clients`, result.lost, null, 'count', '<= 0'),
        figure(`SSE server RSS per connection, ${n} clients`, result.rssPerConnectionKiB, null, 'KiB'),
      )
    }
    printFigures(figures)
  } finally {
    clearTimeout(hardStop)
    await db.drop()
  }
}

await main()
process.exit(0)
