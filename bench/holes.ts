/**
 * The repros of the request-level holes, against the real server. Two sets:
 *
 * - `bun bench/holes.ts` (the default): the holes of issue 46, behind the balancer as scripts/cluster.sh deploys it
 *   (HAProxy with forwarded addresses and health checks, PgBouncer, one server process, TRUST_PROXY=true), every client
 *   on a loopback address of its own (127.0.0.x). Each repro's answer, and a bystander company's `GET /api/tags` sent at
 *   40 requests/s meanwhile (p50/p99, answers other than 200), measured for two checkouts side by side in one run:
 *   BENCH_BEFORE_ROOT (an earlier checkout with its own node_modules, e.g. `git worktree add /tmp/abuse-before
 *   0521891 && (cd /tmp/abuse-before && npm ci)`), then this one. Without BENCH_BEFORE_ROOT, this checkout alone.
 *   The repros: 260 slow anonymous sign-in bodies; one company's 60 kiosk streams; 26 sign-in failures naming
 *   companies that do not exist, then an employee at that address; a 729 KB body of 120,000 elements (server CPU per
 *   request, anonymous and authenticated, and the bystander while 2 anonymous / 4 authenticated senders loop it);
 *   1,500 requests with a fresh junk x-api-key each, and 1,500 with none, from one address each; an owner minting 500
 *   keys, and the key list; a body declared ISO-8859-1; two senders uploading 2 MiB files (with
 *   STORAGE_QUOTA_BYTES_PER_COMPANY at 64 MiB on both sides); a messaging tool's legs; a client-scoped employee
 *   replaying another caller's Idempotency-Key.
 * - `BENCH_HOLES=earlier bun bench/holes.ts`: the earlier repros (`multipart/xxjson`, a PgBouncer export, sign-in
 *   lockout by e-mail, …), against one server of BENCH_SERVER_ROOT (default this checkout).
 *
 *   env: BENCH_ADMIN_URL, BENCH_SECONDS (length of each measured phase, default 8), BENCH_BEFORE_ROOT,
 *   BENCH_AFTER_FIRST=1 (this checkout first), BENCH_SERVER_ROOT
 */
import { Agent, request as httpRequest } from 'node:http'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { cpuMs, distinctPorts, envNumber, figure, freePort, percentile, printFigures, ROOT, sleep, waitHealthy, type Figure } from './lib/common'
import postgres from 'postgres'
import { createBenchDatabase } from './lib/database'
import { slowSignIn } from './lib/slow'

const SECONDS = envNumber('BENCH_SECONDS', 10)
/** The server under test: this checkout, or another one (an earlier commit) for a before/after. */
const SERVER_ROOT = process.env.BENCH_SERVER_ROOT ?? ROOT
const JWT_SECRET = 'bench-superadmin-secret-0123456789'
const OPERATOR = 'root@bench.test'
const PASSWORD = 'correct horse battery'
const LIGHT_RATE = 20

/** The start command of that checkout's package scripts: with the listener's header bound when they pass it. */
const listenerFlags = () => (/--max-http-header-size=\d+/.exec(readFileSync(join(SERVER_ROOT, 'package.json'), 'utf8'))?.[0] ? ['--max-http-header-size=65536'] : [])

async function startServer(databaseUrl: string) {
  const port = freePort()
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-bench-holes-'))
  const proc = Bun.spawn([process.execPath, ...listenerFlags(), 'server/main.ts'], {
    cwd: SERVER_ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      SIGNING_SECRET: 'bench-signing-secret-0123456789',
      SUPERADMIN_JWT_SECRET: JWT_SECRET,
      SUPERADMIN_EMAILS: OPERATOR,
    },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const base = `http://127.0.0.1:${port}`
  await waitHealthy(`${base}/health`, performance.now(), 120_000, () => proc.exitCode === null)
  return {
    proc,
    base,
    async stop() {
      proc.kill('SIGTERM')
      await Promise.race([proc.exited, sleep(10_000)])
      if (proc.exitCode === null) proc.kill('SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

const operatorToken = () =>
  new SignJWT({ email: OPERATOR }).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime('30m').sign(new TextEncoder().encode(JWT_SECRET))

async function call(base: string, method: string, path: string, opts: { key?: string; bearer?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {}
  if (opts.key) headers['x-api-key'] = opts.key
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  } catch {
    // The server went away (or cut the connection): counted as an answer of status 0.
    return { status: 0, body: null as any, headers: new Headers(), bytes: 0 }
  }
  const text = await res.text()
  let body: any = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: res.status, body, headers: res.headers, bytes: text.length }
}

/** A company with a key, a client with an account, and an employee with a password. */
async function company(base: string, name: string) {
  const bearer = await operatorToken()
  const made = await call(base, 'POST', '/api/superadmin/companies', { bearer, body: { name } })
  const key = (await call(base, 'POST', `/api/superadmin/companies/${made.body.id}/api-keys`, { bearer, body: { name: 'main' } })).body.key as string
  const email = `cajero.${made.body.id}@bench.test`
  const employee = await call(base, 'POST', '/api/employees', { key, body: { email, name: 'Cajero', permissions: [], password: PASSWORD } })
  if (employee.status !== 201) throw new Error(`employee: ${employee.status} ${JSON.stringify(employee.body)}`)
  const client = await call(base, 'POST', '/api/clients', { key, body: { name: 'Externo', type: 1, accounts: [{ currency_name: 'ARS' }] } })
  await call(base, 'POST', '/api/tags', { key, body: { name: 'vip', color: '#336699' } })
  return { id: made.body.id as number, key, email, clientId: client.body.id as number }
}

/** `fn` sent at a fixed rate for `seconds`, as a tenant's ordinary traffic is: the latencies, sorted. */
async function paced(seconds: number, perSecond: number, fn: () => Promise<unknown>) {
  const latencies: number[] = []
  const pending: Promise<void>[] = []
  const started = performance.now()
  for (let i = 0; performance.now() - started < seconds * 1000; i++) {
    const due = started + (i * 1000) / perSecond
    if (due > performance.now()) await sleep(due - performance.now())
    pending.push(
      (async () => {
        const t0 = performance.now()
        await fn()
        latencies.push(performance.now() - t0)
      })(),
    )
  }
  await Promise.all(pending)
  return latencies.sort((a, b) => a - b)
}

/** Server CPU spent while `fn` runs, in ms, and what `fn` returned. */
async function cpuOf<T>(pid: number, fn: () => Promise<T>): Promise<{ cpu: number; wall: number; value: T }> {
  // A process that is gone has no CPU to read: NaN then.
  const cpu = () => {
    try {
      return cpuMs(pid)
    } catch {
      return NaN
    }
  }
  const c0 = cpu()
  const t0 = performance.now()
  const value = await fn()
  return { cpu: cpu() - c0, wall: performance.now() - t0, value }
}

const DEEP = new TextEncoder().encode('['.repeat(10_000_000) + ']'.repeat(10_000_000))
const reproOne = (base: string) =>
  fetch(`${base}/api/sessions`, { method: 'POST', headers: { 'content-type': 'multipart/xxjson' }, body: DEEP }).then(
    async (res) => ({ status: res.status, body: await res.text() }),
    (e) => ({ status: 0, body: String(e) }),
  )

/** A sign-in sent from a loopback address of its own (127.0.0.x), over a fresh connection. */
function signInFrom(base: string, localAddress: string, body: unknown): Promise<number> {
  const url = new URL(`${base}/api/sessions`)
  const payload = JSON.stringify(body)
  return new Promise((done) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } },
      (res) => {
        res.resume()
        res.on('end', () => done(res.statusCode ?? 0))
      },
    )
    req.on('error', () => done(0))
    req.end(payload)
  })
}

const counts = (statuses: number[]) => statuses.reduce<Record<string, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {})

async function singleServer(figures: Figure[], notes: string[]) {
  const database = await createBenchDatabase('fos_bench_holes')
  const server = await startServer(database.url)
  try {
    const victim = await company(server.base, 'Victima')
    const light = await company(server.base, 'Liviana')
    const pid = server.proc.pid

    // Repro 1, alone: answer, time and CPU per request.
    const ones: { status: number; cpu: number; wall: number }[] = []
    for (let i = 0; i < 3; i++) {
      const r = await cpuOf(pid, () => reproOne(server.base))
      ones.push({ status: r.value.status, cpu: r.cpu, wall: r.wall })
    }
    const first = await reproOne(server.base)
    notes.push(`repro 1 answers: ${ones.map((o) => o.status).join(', ')}; body ${JSON.stringify(first.body.slice(0, 160))}`)
    figures.push(figure('repro 1: server CPU per request', ones.reduce((n, o) => n + o.cpu, 0) / ones.length, null, 'ms'))
    figures.push(figure('repro 1: wall time per request', ones.reduce((n, o) => n + o.wall, 0) / ones.length, null, 'ms'))

    // Another tenant's light route, idle and while two senders repeat repro 1.
    const failed: number[] = []
    const tags = async () => {
      const r = await call(server.base, 'GET', '/api/tags', { key: light.key })
      if (r.status !== 200) failed.push(r.status)
    }
    const idle = await paced(SECONDS, LIGHT_RATE, tags)
    let sending = true
    let sent = 0
    const sender = async () => {
      while (sending) {
        await reproOne(server.base)
        sent++
      }
    }
    const senders = [sender(), sender()]
    const loaded = await cpuOf(pid, () => paced(SECONDS, LIGHT_RATE, tags))
    sending = false
    await Promise.all(senders)
    figures.push(figure('tags p50 idle', percentile(idle, 50), null, 'ms'))
    figures.push(figure('tags p99 idle', percentile(idle, 99), null, 'ms'))
    figures.push(figure('tags p50 while 2 senders repeat repro 1', percentile(loaded.value, 50), null, 'ms'))
    figures.push(figure('tags p99 while 2 senders repeat repro 1', percentile(loaded.value, 99), null, 'ms'))
    figures.push(figure('server cores busy meanwhile', loaded.cpu / loaded.wall, null, 'cores'))
    notes.push(`tags: ${idle.length + loaded.value.length} requests, ${failed.length} not 200 ${JSON.stringify(counts(failed))}${server.proc.exitCode !== null || server.proc.signalCode ? `; the server exited (${server.proc.exitCode ?? server.proc.signalCode})` : ''}`)
    notes.push(`repro 1 under load: ${sent} bodies sent by the two senders in ${SECONDS} s`)

    // Repro 3: eleven wrong tries naming another company, the victim's e-mail in capitals; then the victim.
    const wrong: number[] = []
    const three = await cpuOf(pid, async () => {
      for (let i = 0; i < 11; i++)
        wrong.push((await call(server.base, 'POST', '/api/sessions', { body: { company_id: 999_999, email: victim.email.toUpperCase(), password: `guess ${i}` } })).status)
    })
    const own = await call(server.base, 'POST', '/api/sessions', { body: { company_id: victim.id, email: victim.email, password: PASSWORD } })
    notes.push(`repro 3: the eleven tries ${wrong.join(' ')}; then the victim's own sign-in ${own.status}${own.headers.get('retry-after') ? ` Retry-After ${own.headers.get('retry-after')} s` : ''}`)
    figures.push(figure('repro 3: server CPU per wrong try', three.cpu / 11, null, 'ms'))

    // Webhook URLs of IPv6 forms carrying 127.0.0.1.
    const hooks = []
    for (const host of ['[::127.0.0.1]', '[::ffff:0:127.0.0.1]', '[2002:7f00:1::]'])
      hooks.push(`${host} ${(await call(server.base, 'POST', '/api/webhook-endpoints', { key: victim.key, body: { url: `https://${host}/hook` } })).status}`)
    notes.push(`webhook create: ${hooks.join(', ')}`)

    // A 20 KB URL.
    const long = await call(server.base, 'GET', `/api/tags?q=${'a'.repeat(20_000)}`, { key: light.key })
    notes.push(`20 KB URL: ${long.status}, ${long.bytes} bytes of body ${JSON.stringify(String(long.bytes ? JSON.stringify(long.body) : '').slice(0, 100))}`)

    // Four unauthenticated senders, each from its own loopback address, signing in as fast as answers come.
    const statuses: number[] = []
    let flooding = true
    const flooder = async (n: number) => {
      let i = 0
      while (flooding) statuses.push(await signInFrom(server.base, `127.0.0.${10 + n}`, { company_id: victim.id, email: `nobody${n}.${i++}@bench.test`, password: 'Password123!' }))
    }
    const flood = await cpuOf(pid, async () => {
      const running = [0, 1, 2, 3].map(flooder)
      await sleep(SECONDS * 1000)
      flooding = false
      await Promise.all(running)
    })
    figures.push(figure('4 sign-in senders: server cores busy', flood.cpu / flood.wall, null, 'cores'))
    notes.push(`4 sign-in senders for ${SECONDS} s: answers ${JSON.stringify(counts(statuses))}`)
    // Meanwhile-free: the victim can still sign in.
    notes.push(`victim's sign-in right after the flood: ${(await call(server.base, 'POST', '/api/sessions', { body: { company_id: victim.id, email: victim.email, password: PASSWORD } })).status}`)
  } finally {
    await server.stop()
    await database.drop()
  }
}

/** Repro 2: an export through PgBouncer in transaction pooling, as scripts/cluster.sh deploys it. */
async function throughPgBouncer(figures: Figure[], notes: string[]) {
  const { startCluster } = (await import(join(SERVER_ROOT, 'scripts', 'cluster.ts'))) as typeof import('../scripts/cluster')
  const database = await createBenchDatabase('fos_bench_holes_pgb')
  const dir = mkdtempSync(join(tmpdir(), 'fos-bench-holes-cluster-'))
  const cluster = await startCluster({
    databaseUrl: database.url,
    dir,
    ports: distinctPorts(3),
    env: { CLUSTER_POOL_SIZE: '8', DB_POOL_MAX: '4', SUPERADMIN_JWT_SECRET: JWT_SECRET, SUPERADMIN_EMAILS: OPERATOR, S3_BUCKET: '' },
  })
  try {
    const c = await company(cluster.base, 'Exporta')
    await call(cluster.base, 'POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const grant = await call(cluster.base, 'POST', `/api/clients/${c.clientId}/external-grants`, { key: c.key, body: {} })
    const t0 = performance.now()
    const json = await call(cluster.base, 'GET', `/api/external/clients/${c.clientId}/statement`, { bearer: grant.body.token })
    const ms = performance.now() - t0
    const csv = await call(cluster.base, 'GET', `/api/external/clients/${c.clientId}/statement?format=csv`, { bearer: grant.body.token })
    notes.push(`repro 2 (export through PgBouncer): JSON ${json.status} ${JSON.stringify(json.body).slice(0, 100)}; CSV ${csv.status}`)
    figures.push(figure('repro 2: export answer time', ms, null, 'ms'))
  } finally {
    await cluster.stop()
    rmSync(dir, { recursive: true, force: true })
    await database.drop()
  }
}



// ---------------------------------------------------------------------------------------------------------------
// Issue 46: behind the balancer, side by side.

/** The bystander's rate, as the probe sent it. */
const BYSTANDER_RATE = 40
/** Big bodies a paced sender of repro 3 sends a second. */
const BIG_PER_SECOND = 5
/** Big bodies sent one after the other to measure the server's CPU for one. */
const BIG_SAMPLES = 20
const PHASE_S = envNumber('BENCH_SECONDS', 8)
/** Every actor's own loopback address: the balancer forwards it, and the server counts by it. */
const AT = {
  bystander: '127.0.0.9',
  setup: '127.0.0.20',
  slow: '127.0.0.2',
  screensA: '127.0.0.4',
  screensB: '127.0.0.5',
  throttle: '127.0.0.6',
  bigAnonymous: '127.0.0.11',
  bigKeyed: '127.0.0.12',
  junk: '127.0.0.8',
  bare: '127.0.0.10',
  uploads: '127.0.0.13',
}

interface Reply {
  status: number
  text: string
  headers: Record<string, string | string[] | undefined>
}

const agents = new Map<string, Agent>()
const agentAt = (address: string) => {
  let a = agents.get(address)
  if (!a) agents.set(address, (a = new Agent({ keepAlive: true, localAddress: address, maxSockets: 64 })))
  return a
}

/** One request from `address`, through the balancer. */
function send(
  base: string,
  address: string,
  method: string,
  path: string,
  opts: { key?: string; bearer?: string; body?: unknown; raw?: Buffer; contentType?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const url = new URL(path, base)
  const headers: Record<string, string | number> = { ...opts.headers }
  if (opts.key) headers['x-api-key'] = opts.key
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`
  const payload = opts.raw ?? (opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body)))
  if (payload) {
    headers['content-type'] = opts.contentType ?? 'application/json'
    headers['content-length'] = payload.length
  }
  return new Promise((done) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, agent: agentAt(address), headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }))
      res.on('error', () => done({ status: 0, text: '', headers: {} }))
    })
    req.on('error', () => done({ status: 0, text: '', headers: {} }))
    req.end(payload)
  })
}

const json = (r: Reply) => {
  try {
    return JSON.parse(r.text)
  } catch {
    return {}
  }
}

const tally = (statuses: number[]) =>
  Object.entries(statuses.reduce<Record<number, number>>((m, s) => ((m[s] = (m[s] ?? 0) + 1), m), {}))
    .map(([s, n]) => `${n} × ${s === '0' ? 'cut' : s}`)
    .join(', ')

interface Bystander {
  p50: number
  p99: number
  sent: number
  other: string
}

/** The bystander's `GET /api/tags` at 40 requests/s for `seconds`, while `load` runs. */
async function bystander(base: string, key: string, seconds: number, load?: (running: () => boolean) => Promise<unknown>): Promise<Bystander> {
  const latencies: number[] = []
  const others: number[] = []
  const pending: Promise<void>[] = []
  let running = true
  const loading = load?.(() => running)
  const started = performance.now()
  for (let i = 0; performance.now() - started < seconds * 1000; i++) {
    const due = started + (i * 1000) / BYSTANDER_RATE
    await sleep(Math.max(0, due - performance.now()))
    pending.push(
      (async () => {
        const t0 = performance.now()
        const r = await send(base, AT.bystander, 'GET', '/api/tags', { key })
        latencies.push(performance.now() - t0)
        if (r.status !== 200) others.push(r.status)
      })(),
    )
  }
  await Promise.all(pending)
  running = false
  await loading
  latencies.sort((a, b) => a - b)
  return { p50: percentile(latencies, 50), p99: percentile(latencies, 99), sent: latencies.length, other: others.length ? tally(others) : 'none' }
}

const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(2)} s` : `${n.toFixed(1)} ms`)
const byst = (b: Bystander) => `p50 ${ms(b.p50)} / p99 ${ms(b.p99)}; not 200: ${b.other}`

/** Server CPU spent while `fn` runs (ms), read from /proc. */
async function cpuWhile<T>(pid: number, fn: () => Promise<T>) {
  const c0 = cpuMs(pid)
  const t0 = performance.now()
  const value = await fn()
  return { cpu: cpuMs(pid) - c0, wall: performance.now() - t0, value }
}

interface World {
  base: string
  jwt: string
  bystanderKey: string
}

async function newCompany(w: World, name: string, ventanilla = false) {
  const made = json(await send(w.base, AT.setup, 'POST', '/api/superadmin/companies', { bearer: w.jwt, body: { name } }))
  if (ventanilla) await send(w.base, AT.setup, 'PATCH', `/api/superadmin/companies/${made.id}`, { bearer: w.jwt, body: { modules: { ventanilla: true } } })
  const key = json(await send(w.base, AT.setup, 'POST', `/api/superadmin/companies/${made.id}/api-keys`, { bearer: w.jwt, body: { name: 'main' } })).key as string
  return { id: made.id as number, key }
}

async function post(w: World, key: string, path: string, body: unknown) {
  const r = await send(w.base, AT.setup, 'POST', path, { key, body })
  if (r.status !== 201) throw new Error(`${path}: ${r.status} ${r.text.slice(0, 200)}`)
  return json(r)
}

/** Waits (up to 45 s) until the bystander is served again: a repro that took the process out of rotation ends first. */
async function servedAgain(w: World) {
  for (const deadline = Date.now() + 45_000; Date.now() < deadline; await sleep(500))
    if ((await send(w.base, AT.bystander, 'GET', '/api/tags', { key: w.bystanderKey })).status === 200) return
}

/** An event stream from `address`: its status once the head arrives, and a way to close it. */
function openStream(base: string, path: string, address: string, headers: Record<string, string> = {}) {
  const url = new URL(path, base)
  let close = () => {}
  const status = new Promise<number>((done) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, localAddress: address, agent: false, headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      res.on('data', () => {})
      res.on('error', () => {})
      done(res.statusCode ?? 0)
    })
    req.on('error', () => done(0))
    close = () => req.destroy()
    req.end()
  })
  return { status, close: () => close() }
}

/** The probe's body: 120,000 short strings in an array beside a sign-in's fields, 729 KB. */
const BIG = Buffer.from(
  JSON.stringify({ company_id: 1, email: 'a@b.c', password: 'xxxxxxxxxxxx', name: 'Muchos', type: 1, pad: Array.from({ length: 120_000 }, (_, i) => String(i % 1000)) }),
)

type Results = Map<string, string>

async function side(label: string, root: string, results: Results, figures: Figure[]) {
  const { startCluster } = (await import(join(root, 'scripts', 'cluster.ts'))) as typeof import('../scripts/cluster')
  const database = await createBenchDatabase(`fos_bench_holes_${label}`)
  const dir = mkdtempSync(join(tmpdir(), `fos-bench-holes-${label}-`))
  const cluster = await startCluster({
    databaseUrl: database.url,
    dir,
    ports: distinctPorts(3),
    env: {
      CLUSTER_POOL_SIZE: '10',
      SUPERADMIN_JWT_SECRET: JWT_SECRET,
      SUPERADMIN_EMAILS: OPERATOR,
      S3_BUCKET: '',
      STORAGE_QUOTA_BYTES_PER_COMPANY: String(64 * 1024 * 1024),
      // The bench's own setup (companies, keys, tools) comes from one address: generous enough for it alone.
      RATE_LIMIT_IP_PER_MINUTE: '600',
    },
  })
  const sql = postgres(database.url, { max: 1, onnotice: () => {} })
  const put = (k: string, v: string) => {
    results.set(`${k}\u0000${label}`, v)
    console.log(`[${label}] ${k}: ${v}`)
  }
  try {
    const pid = Number(readFileSync(join(dir, 'server-1.pid'), 'utf8'))
    const haproxyLog = () => readFileSync(join(dir, 'haproxy.log'), 'utf8')
    const w: World = { base: cluster.base, jwt: await operatorToken(), bystanderKey: '' }
    const bystanderCompany = await newCompany(w, 'Bystander')
    w.bystanderKey = bystanderCompany.key
    await post(w, w.bystanderKey, '/api/tags', { name: 'vip', color: '#336699' })
    const figureOf = (name: string, b: Bystander) => {
      put(`bystander p50 / p99 ${name}`, byst(b))
      figures.push(figure(`[${label}] bystander p99 ${name}`, b.p99, null, 'ms'))
    }

    figureOf('idle', await bystander(w.base, w.bystanderKey, PHASE_S))

    // 1a. 260 slow anonymous sign-in bodies from one address.
    {
      const seen = haproxyLog().length
      const port = Number(new URL(w.base).port)
      const slow = Array.from({ length: 260 }, () => slowSignIn(port, AT.slow))
      const b = await bystander(w.base, w.bystanderKey, PHASE_S)
      const answered = slow.map((s) => Number(/^HTTP\/1\.1 (\d{3})/.exec(s.text())?.[1] ?? 0))
      slow.forEach((s) => s.stop())
      const down = haproxyLog().slice(seen).includes('is DOWN')
      put('1a. 260 slow anonymous sign-ins: their answers', tally(answered).replace('× cut', '× still arriving'))
      put('1a. HAProxy took the process out of rotation', down ? 'yes' : 'no')
      figureOf('while 260 slow sign-ins are held', b)
      await servedAgain(w)
    }

    // 1b. One company's 60 screens (3 tokens) from one address; another company's kiosk and console streams.
    {
      const a = await newCompany(w, 'Pantallas A', true)
      const b = await newCompany(w, 'Pantallas B', true)
      const tokens: string[] = []
      for (let i = 0; i < 3; i++) tokens.push((await post(w, a.key, '/api/ventanilla/tokens', { name: `TV ${i}` })).token)
      const bToken = (await post(w, b.key, '/api/ventanilla/tokens', { name: 'TV' })).token
      const many = tokens.flatMap((token) => Array.from({ length: 20 }, () => openStream(w.base, `/api/public/ventanilla/${token}/events`, AT.screensA)))
      const manyStatuses = await Promise.all(many.map((s) => s.status))
      const others = [
        openStream(w.base, `/api/public/ventanilla/${bToken}/events`, AT.screensB),
        openStream(w.base, '/api/ventanilla/events', AT.screensB, { 'x-api-key': b.key }),
      ]
      const otherStatuses = await Promise.all(others.map((s) => s.status))
      ;[...many, ...others].forEach((s) => s.close())
      put('1b. one company\'s 60 streams', tally(manyStatuses))
      put('1b. another company\'s kiosk and console stream', otherStatuses.join(', '))
    }

    // 2. 26 sign-in failures naming companies that do not exist, then an employee at that address.
    {
      const c = await newCompany(w, 'Sucursal')
      const email = `cajero.${c.id}@bench.test`
      await post(w, c.key, '/api/employees', { email, name: 'Cajero', permissions: [], password: PASSWORD })
      const tries: number[] = []
      for (let i = 0; i < 26; i++)
        tries.push((await send(w.base, AT.throttle, 'POST', '/api/sessions', { body: { company_id: 900_000 + i, email: `x${i}@bench.test`, password: `guess ${i}` } })).status)
      const own = await send(w.base, AT.throttle, 'POST', '/api/sessions', { body: { company_id: c.id, email, password: PASSWORD } })
      put('2. 26 failures naming companies that do not exist', tally(tries))
      put('2. then an employee at that address signs in', `${own.status}${own.headers['retry-after'] ? `, Retry-After ${own.headers['retry-after']} s` : ''}`)
    }

    // 3. The 729 KB body of 120,000 elements: server CPU per request, then the bystander while it is looped.
    {
      const heavy = await newCompany(w, 'Pesada')
      const keys = [heavy.key]
      for (let i = 0; i < 3; i++) keys.push(json(await send(w.base, AT.setup, 'POST', `/api/superadmin/companies/${heavy.id}/api-keys`, { bearer: w.jwt, body: { name: `k${i}` } })).key)
      const one = (address: string, key?: string) =>
        key ? send(w.base, address, 'POST', '/api/clients', { key, raw: BIG }) : send(w.base, address, 'POST', '/api/sessions', { raw: BIG })
      for (const [name, key] of [['anonymous POST /api/sessions', undefined], ['authenticated POST /api/clients', heavy.key]] as const) {
        // The kernel counts CPU in 10 ms ticks: enough requests for a figure below that.
        const statuses: number[] = []
        const r = await cpuWhile(pid, async () => {
          for (let i = 0; i < BIG_SAMPLES; i++) statuses.push((await one(key ? AT.bigKeyed : AT.bigAnonymous, key)).status)
        })
        put(`3. ${(BIG.length / 1000).toFixed(0)} KB / 120,000 elements, ${name}`, `${tally(statuses)}; server CPU ${(r.cpu / BIG_SAMPLES).toFixed(1)} ms per request`)
        figures.push(figure(`[${label}] big body server CPU per request, ${name}`, r.cpu / BIG_SAMPLES, null, 'ms'))
      }
      // The senders run in processes of their own, so their work never delays the bystander's own measurements. Paced
      // (BIG_PER_SECOND each, at most one in flight), both sides get the same offered load and the figure is the
      // server's; looping as fast as answers come, the earlier code is slowed by its own cost while the later one is
      // sent hundreds of bodies a second, and the figure is the machine's (the bytes through HAProxy on 2 cores).
      const loop = (senders: number, perSecond: number, key?: (i: number) => string) => async () => {
        const children = Array.from({ length: senders }, (_, i) =>
          Bun.spawn(
            [process.execPath, import.meta.path, '--send-big', w.base, key ? AT.bigKeyed : AT.bigAnonymous, key?.(i) ?? '-', String(PHASE_S), String(perSecond)],
            { stdout: 'pipe', stderr: 'inherit' },
          ),
        )
        const sent = await Promise.all(children.map(async (c) => Number(/SENT (\d+)/.exec(await new Response(c.stdout).text())?.[1] ?? 0)))
        const how = perSecond > 0 ? `at ${perSecond}/s each` : 'looping'
        put(`3. bodies sent by ${senders} ${key ? 'authenticated' : 'anonymous'} senders ${how} in ${PHASE_S} s`, String(sent.reduce((a, b) => a + b, 0)))
      }
      figureOf(`while 2 anonymous senders send it to sign-in, ${BIG_PER_SECOND}/s each`, await bystander(w.base, w.bystanderKey, PHASE_S, loop(2, BIG_PER_SECOND)))
      figureOf(`while 4 authenticated senders send it, ${BIG_PER_SECOND}/s each`, await bystander(w.base, w.bystanderKey, PHASE_S, loop(4, BIG_PER_SECOND, (i) => keys[i])))
      figureOf('while 2 anonymous senders loop it on sign-in', await bystander(w.base, w.bystanderKey, PHASE_S, loop(2, 0)))
      figureOf('while 4 authenticated senders loop it', await bystander(w.base, w.bystanderKey, PHASE_S, loop(4, 0, (i) => keys[i])))
    }

    // 4. Junk credentials, 1,500 requests each with a fresh x-api-key, beside 1,500 with none; an owner minting keys.
    {
      const c = await newCompany(w, 'Kiosco', true)
      const token = (await post(w, c.key, '/api/ventanilla/tokens', { name: 'TV' })).token
      const rows = async () => Number((await sql`select count(*)::int as n from rate_limit_buckets`)[0].n)
      const flood = async (address: string, junk: boolean) => {
        const before = await rows()
        const statuses: number[] = []
        for (let i = 0; i < 1500; i += 25)
          statuses.push(
            ...(await Promise.all(
              Array.from({ length: 25 }, (_, j) =>
                send(w.base, address, 'GET', `/api/public/ventanilla/${token}`, junk ? { headers: { 'x-api-key': `fos_${String(i + j).padStart(12, '0')}_${'j'.repeat(32)}` } } : {}).then((r) => r.status),
              ),
            )),
          )
        return `${tally(statuses)}; ${(await rows()) - before} new rate-limit rows`
      }
      put('4. 1,500 requests, each with a fresh junk x-api-key', await flood(AT.junk, true))
      put('4. 1,500 requests without a credential', await flood(AT.bare, false))
      const owner = await newCompany(w, 'Llaves')
      const minted: number[] = []
      const t0 = performance.now()
      for (let i = 0; i < 500; i += 25)
        minted.push(...(await Promise.all(Array.from({ length: 25 }, (_, j) => send(w.base, AT.setup, 'POST', '/api/api-keys', { key: owner.key, body: { name: `k${i + j}` } }).then((r) => r.status)))))
      put('4. an owner minting 500 keys', `${tally(minted)} in ${ms(performance.now() - t0)}`)
      const list = await send(w.base, AT.setup, 'GET', '/api/api-keys', { key: owner.key })
      put('4. GET /api/api-keys', `${json(list).data?.length} keys, ${(list.text.length / 1000).toFixed(1)} KB${json(list).pagination ? ` (page 1 of ${json(list).pagination.totalPages}, ${json(list).pagination.total} in all)` : ''}`)
    }

    // 5. A body declared ISO-8859-1.
    {
      const c = await newCompany(w, 'Latin')
      const name = 'Peña Ñandú'
      const r = await send(w.base, AT.setup, 'POST', '/api/clients', {
        key: c.key,
        raw: Buffer.from(JSON.stringify({ name, type: 1 }), 'latin1'),
        contentType: 'application/json; charset=ISO-8859-1',
      })
      put('5. "Peña Ñandú" sent as ISO-8859-1', `${r.status}, stored as ${JSON.stringify(json(r).name ?? json(r).code)}`)
    }

    // 6. Two senders uploading 2 MiB files; the quota is 64 MiB on both sides (the earlier code has none).
    {
      const c = await newCompany(w, 'Archivos')
      const type = await post(w, c.key, '/api/operation-types', { name: 'Gastos', kind: 'other' })
      const caja = await post(w, c.key, '/api/clients', { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] })
      const op = await post(w, c.key, '/api/operations', { operation_type_id: type.id, transactions: [{ account_id: caja.accounts[0].id, amount: '-1' }] })
      const file = Buffer.alloc(2 * 1024 * 1024, 7)
      const boundary = 'benchboundary'
      const body = Buffer.concat([
        Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="r.pdf"\r\nContent-Type: application/pdf\r\n\r\n`),
        file,
        Buffer.from(`\r\n--${boundary}--\r\n`),
      ])
      const statuses: number[] = []
      const started = performance.now()
      await Promise.all(
        [0, 1].map(async () => {
          while (performance.now() - started < PHASE_S * 1000)
            statuses.push((await send(w.base, AT.uploads, 'POST', `/api/operations/${op.id}/attachments`, { key: c.key, raw: body, contentType: `multipart/form-data; boundary=${boundary}` })).status)
        }),
      )
      const [{ bytes }] = await sql`select coalesce(sum(size_bytes), 0)::bigint as bytes from operation_attachments where company_id = ${c.id} and deleted_at is null`
      put(`6. two senders uploading 2 MiB files for ${PHASE_S} s`, `${tally(statuses)}; ${(Number(bytes) / 1024 ** 2).toFixed(0)} MiB kept`)
    }

    // 7. A messaging tool run: the legs of 0.0000006 USD at 1,000,000 and of 2.5000004 at 1234.5.
    {
      const c = await newCompany(w, 'Mensajes')
      const type = await post(w, c.key, '/api/operation-types', { name: 'Cambio', kind: 'exchange' })
      const caja = await post(w, c.key, '/api/clients', { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] })
      const acc = Object.fromEntries(caja.accounts.map((a: { currency_name: string; id: number }) => [a.currency_name, a.id]))
      const tool = await post(w, c.key, '/api/messaging/tools', {
        name: 'Cambio',
        fixed_config: { toolKind: 'exchange', operationTypeId: type.id, localAccountId: acc.ARS, quoteAccountId: acc.USD },
        parameter_schema: { parameters: [{ key: 'quoteAmount', label: 'USD', type: 'amount' }, { key: 'fx', label: 'TC', type: 'number' }] },
      })
      for (const [quoteAmount, fx] of [['0.0000006', 1_000_000], ['2.5000004', '1234.5']]) {
        const r = await send(w.base, AT.setup, 'POST', `/api/messaging/tools/${tool.id}/run`, {
          key: c.key,
          body: { requested_by: { contact_id: 1, phone: '+5491100000000' }, parameters: { quoteAmount, fx } },
        })
        const legs = (json(r).operation?.transactions ?? []).map((t: { currency: string; amount: number }) => `${t.currency} ${t.amount}`)
        put(`7. tool run ${quoteAmount} USD at ${fx}`, `${r.status}: ${legs.join(' / ') || json(r).code}`)
      }
    }

    // 8. A client-scoped employee sending the Idempotency-Key another caller used.
    {
      const c = await newCompany(w, 'Alcance')
      const type = await post(w, c.key, '/api/operation-types', { name: 'Mov', kind: 'other' })
      const mine = await post(w, c.key, '/api/clients', { name: 'Propio', type: 1, accounts: [{ currency_name: 'ARS' }] })
      const theirs = await post(w, c.key, '/api/clients', { name: 'Ajeno', type: 1, accounts: [{ currency_name: 'ARS' }] })
      const employee = await post(w, c.key, '/api/employees', { email: `scoped.${c.id}@bench.test`, name: 'Acotado', permissions: ['operations.create', 'operations.view'], client_ids: [mine.id] })
      const scopedKey = (await post(w, c.key, `/api/employees/${employee.id}/api-keys`, { name: 'k' })).key
      const body = { operation_type_id: type.id, client_id: theirs.id, transactions: [{ account_id: theirs.accounts[0].id, amount: '10' }] }
      const first = await send(w.base, AT.setup, 'POST', '/api/operations', { key: c.key, body, headers: { 'idempotency-key': 'K-1' } })
      const replay = await send(w.base, AT.setup, 'POST', '/api/operations', { key: scopedKey, body, headers: { 'idempotency-key': 'K-1' } })
      const unknown = await send(w.base, AT.setup, 'POST', '/api/operations', { key: scopedKey, body, headers: { 'idempotency-key': 'K-2' } })
      const leaked = json(replay).id !== undefined && json(replay).id === json(first).id
      put(
        '8. a scoped employee replays another caller\'s key',
        `${replay.status}${leaked ? ' with the other caller\'s operation' : ` ${json(replay).code ?? ''}`} (with a key nobody used: ${unknown.status} ${json(unknown).code ?? ''})`,
      )
    }
  } finally {
    await sql.end({ timeout: 1 })
    await cluster.stop()
    rmSync(dir, { recursive: true, force: true })
    await database.drop()
  }
}

async function sideBySide() {
  const before = process.env.BENCH_BEFORE_ROOT
  const sides: [string, string][] = before ? [['before', before], ['after', ROOT]] : [['after', ROOT]]
  // On a shared machine the minutes differ: a second run in the other order tells drift from difference.
  if (process.env.BENCH_AFTER_FIRST === '1') sides.reverse()
  const results: Results = new Map()
  const figures: Figure[] = []
  for (const [label, root] of sides) {
    if (!existsSync(join(root, 'scripts', 'cluster.ts'))) throw new Error(`${root} has no scripts/cluster.ts`)
    await side(label, root, results, figures)
  }
  for (const a of agents.values()) a.destroy()
  const rows = [...new Set([...results.keys()].map((k) => k.split('\u0000')[0]))]
  console.log(`\n| repro | ${sides.map(([label]) => label).join(' | ')} |\n|---|${sides.map(() => '---|').join('')}`)
  for (const row of rows) console.log(`| ${row} | ${sides.map(([label]) => results.get(`${row}\u0000${label}`) ?? '–').join(' | ')} |`)
  printFigures(figures)
}

async function earlierHoles() {
  const figures: Figure[] = []
  const notes: string[] = []
  await singleServer(figures, notes)
  await throughPgBouncer(figures, notes)
  console.log(`server: ${SERVER_ROOT}`)
  for (const note of notes) console.log(note)
  for (const f of figures) console.log(`${f.figure}: ${f.ours} ${f.unit}`)
  printFigures(figures)
}

/**
 * A sender of repro 3 in its own process: the big body, again and again, for the seconds given, `perSecond` a second
 * at most (0: as fast as answers come), one at a time; prints how many it sent.
 */
async function sendBig(base: string, address: string, key: string, seconds: number, perSecond: number) {
  const started = performance.now()
  let sent = 0
  while (performance.now() - started < seconds * 1000) {
    if (perSecond > 0) await sleep(Math.max(0, started + (sent * 1000) / perSecond - performance.now()))
    await (key === '-' ? send(base, address, 'POST', '/api/sessions', { raw: BIG }) : send(base, address, 'POST', '/api/clients', { key, raw: BIG }))
    sent++
  }
  for (const a of agents.values()) a.destroy()
  console.log(`SENT ${sent}`)
}

if (process.argv[2] === '--send-big') await sendBig(process.argv[3], process.argv[4], process.argv[5], Number(process.argv[6]), Number(process.argv[7]))
else if (process.env.BENCH_HOLES === 'earlier') await earlierHoles()
else await sideBySide()
