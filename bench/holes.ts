/**
 * The repros of the request-level holes, each with its answer and the server's CPU, on the real server
 * (`bun server/main.ts`, default limits) over a throwaway database:
 *   1. `POST /api/sessions` with `content-type: multipart/xxjson` and 20 MB of brackets: answer, wall time and server
 *      CPU per request; then company B's `GET /api/tags` p50/p99 at a fixed rate, idle and while two senders repeat it;
 *   2. a statement export through PgBouncer in transaction pooling (scripts/cluster.sh, one process): answer and time;
 *   3. eleven wrong sign-ins naming company 999999 with the victim's e-mail in capitals, then the victim's own
 *      sign-in with the right password: answers and Retry-After;
 *   and the smaller ones: webhook URLs of IPv6 forms carrying 127.0.0.1, a 20 KB URL, and four unauthenticated
 *   senders signing in from four loopback addresses for BENCH_SECONDS (server cores busy, answers by status).
 *
 *   bun bench/holes.ts     (env: BENCH_ADMIN_URL, BENCH_SECONDS; BENCH_SERVER_ROOT: another checkout's server)
 */
import { request as httpRequest } from 'node:http'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SignJWT } from 'jose'
import { cpuMs, distinctPorts, envNumber, figure, freePort, percentile, printFigures, ROOT, sleep, waitHealthy, type Figure } from './lib/common'
import { createBenchDatabase } from './lib/database'

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

const figures: Figure[] = []
const notes: string[] = []
await singleServer(figures, notes)
await throughPgBouncer(figures, notes)
console.log(`server: ${SERVER_ROOT}`)
for (const note of notes) console.log(note)
for (const f of figures) console.log(`${f.figure}: ${f.ours} ${f.unit}`)
printFigures(figures)
