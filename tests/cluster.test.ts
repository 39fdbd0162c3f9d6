/**
 * The service as deployed past one process, through scripts/cluster.sh: PgBouncer in transaction pooling in front
 * of the run's Postgres, three server processes, HAProxy in front of them. A mixed load runs through HAProxy and one
 * process is killed with SIGKILL in the middle; then nothing acknowledged is missing, balances add up, every kiosk
 * stream is back with the latest snapshot and the rate limit held across the processes. Before the load, concurrent
 * exchanges spread over the processes get gapless receipt numbers.
 */
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { SignJWT } from 'jose'
import { onPostgres, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { freePort, serverEnv } from './server'
import { startCluster, type RunningCluster } from '../scripts/cluster'
import { jsonClient, type Json } from './json-client'
import { Screen, until } from './screens'

const ROOT = join(import.meta.dir, '..')

function distinctPorts(n: number): number[] {
  const ports = new Set<number>()
  while (ports.size < n) ports.add(freePort())
  return [...ports]
}
const binary = (name: string) => ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin'].some((d) => existsSync(join(d, name)))
const missing = ['haproxy', 'pgbouncer'].filter((b) => !binary(b))
/** Per credential: small enough for the hammering client to go past it in a few seconds even on a busy machine. */
const LIMIT = 300
const LOAD_MS = 12_000
/** Short, so the test can show an export cut by it; a small statement takes a few milliseconds. */
const EXPORT_TIMEOUT_MS = 1_000
const KILL_AT_MS = 5_000

/** A server process pointed at PgBouncer: its exit code and what it printed. */
async function refusedStart(dir: string, env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, 'server/main.ts'], {
    cwd: ROOT,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...serverEnv(freePort(), { dataDir: join(dir, 'refused') }), ...env },
  })
  const killer = setTimeout(() => proc.kill('SIGKILL'), 60_000)
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  await proc.exited
  clearTimeout(killer)
  return { code: proc.exitCode, output: out + err }
}



describe('cluster', () => {
  const name = 'PgBouncer + 3 processes + HAProxy: kill -9 under mixed load loses nothing; streams, balances and the rate limit hold'
  if (!onPostgres()) test.skip(`${name} [needs Postgres]`, () => {})
  else if (missing.length) test.skip(`${name} [needs ${missing.join(' and ')}: not installed (Debian: apt-get install ${missing.join(' ')})]`, () => {})
  else
    test(
      name,
      async () => {
        const databaseUrl = process.env.TEST_DATABASE_URL!
        const dir = mkdtempSync(join(tmpdir(), 'fos-cluster-test-'))
        try {
          const cluster = await startCluster({
            databaseUrl,
            dir,
            ports: distinctPorts(5),
            env: {
              CLUSTER_POOL_SIZE: '12',
              DB_POOL_MAX: '6',
              SUPERADMIN_JWT_SECRET: SUPERADMIN_SECRET,
              SUPERADMIN_EMAILS: SUPERADMIN_EMAIL,
              RATE_LIMIT_PER_MINUTE: String(LIMIT),
              // Every key here is one company's: its total would limit the writers along with the hammering key.
              RATE_LIMIT_COMPANY_PER_MINUTE: '0',
              RATE_LIMIT_IP_PER_MINUTE: '600',
              EXPORT_STATEMENT_TIMEOUT_MS: String(EXPORT_TIMEOUT_MS),
              S3_BUCKET: '',
            },
          })
          const db = postgres(databaseUrl, { max: 2, onnotice: () => {} })
          try {
            await load(cluster, db, dir)
          } finally {
            if (cluster.proc.exitCode === null) await cluster.stop()
            await db.end({ timeout: 1 })
          }
        } finally {
          rmSync(dir, { recursive: true, force: true })
        }
      },
      240_000,
    )
})

/**
 * Statement exports read from a pool of their own, through PgBouncer like everything else: they answer, and their
 * statement timeout (set in each transaction, since PgBouncer refuses it as a startup parameter) cuts a slow one.
 */
async function exportsThroughPgBouncer(api: ReturnType<typeof jsonClient>, db: ReturnType<typeof postgres>, key: string, clientId: number) {
  const granted = await api('POST', `/api/clients/${clientId}/external-grants`, { key, body: {} })
  expect(granted.status).toBe(201)
  const path = `/api/external/clients/${clientId}/statement`
  for (let i = 0; i < 3; i++) {
    const json = await api('GET', path, { bearer: granted.body.token })
    expect([json.status, json.body.client?.id]).toEqual([200, clientId])
  }
  expect((await api('GET', `${path}?format=csv`, { bearer: granted.body.token })).status).toBe(200)
  // Another session holds the client table: the export's statements wait for it until their timeout cuts them.
  const holding = db.begin(async (tx) => {
    await tx`lock table clients in access exclusive mode`
    await Bun.sleep(EXPORT_TIMEOUT_MS + 4_000)
  })
  await Bun.sleep(300)
  const started = performance.now()
  const cut = await api('GET', path, { bearer: granted.body.token })
  const ms = performance.now() - started
  console.log(`[cluster] export through PgBouncer held by a lock: ${cut.status} ${cut.body.code} after ${ms.toFixed(0)} ms (timeout ${EXPORT_TIMEOUT_MS} ms)`)
  expect([cut.status, cut.body.code]).toEqual([503, 'SERVICE_UNAVAILABLE'])
  expect(ms).toBeGreaterThanOrEqual(EXPORT_TIMEOUT_MS - 50)
  expect(ms).toBeLessThan(EXPORT_TIMEOUT_MS + 3_500)
  await holding
  expect((await api('GET', path, { bearer: granted.body.token })).status).toBe(200)
}

/**
 * Exchanges sent at once through HAProxy to the three processes, over PgBouncer in transaction pooling: their receipt
 * numbers are 1…N for the company with no gap and no duplicate, whichever process and server connection made each.
 */
async function exchangesThroughCluster(api: ReturnType<typeof jsonClient>, db: ReturnType<typeof postgres>, keys: string[], companyId: number, cajaId: number) {
  const [admin] = keys
  for (const [name, kind] of [['Compra de divisas', 'exchange'], ['Venta de divisas', 'exchange']])
    expect((await api('POST', '/api/operation-types', { key: admin, body: { name, kind } })).status).toBe(201)
  expect((await api('PUT', '/api/ventanilla/rates', { key: admin, body: { rates: [{ currency: 'USD', buy: '1165.5', sell: '1185.5' }] } })).status).toBe(200)
  const N = 36
  const replies = await Promise.all(
    Array.from({ length: N }, (_, i) =>
      api('POST', '/api/exchanges', {
        key: keys[i % keys.length],
        body: { side: i % 2 ? 'sell' : 'buy', currency: 'USD', amount: `${i + 1}.5`, caja_id: cajaId, customer: { name: `Cliente ${i % 5}`, document: { type: 'DNI', number: String(20_000_000 + (i % 5)) } } },
      }),
    ),
  )
  expect(replies.map((r) => r.status)).toEqual(Array(N).fill(201))
  const expected = Array.from({ length: N }, (_, i) => `00001-${String(i + 1).padStart(8, '0')}`)
  expect(replies.map((r) => r.body.receipt.number).sort()).toEqual(expected)
  const stored = await db<{ seq: number }[]>`select seq from receipts where company_id = ${companyId} and point = 1 order by seq`
  expect(stored.map((r) => r.seq)).toEqual(expected.map((_, i) => i + 1))
  // Five documents, five customers, however the exchanges naming them interleaved across the processes.
  const [{ customers }] = await db<{ customers: number }[]>`select count(*)::int as customers from clients where company_id = ${companyId} and document_number is not null`
  expect(customers).toBe(5)
  console.log(`[cluster] ${N} concurrent exchanges through HAProxy and PgBouncer: receipts ${expected[0]} … ${expected[N - 1]}, no gap, no duplicate`)
}

async function load(cluster: RunningCluster, db: ReturnType<typeof postgres>, dir: string) {
  // Behind transaction pooling without the setting, a process refuses to start and says why.
  const unset = await refusedStart(dir, { DATABASE_URL: cluster.pooledUrl })
  expect(unset.code).toBe(2)
  expect(unset.output).toContain('DATABASE_POOL_MODE=transaction')
  const noDirect = await refusedStart(dir, { DATABASE_URL: cluster.pooledUrl, DATABASE_POOL_MODE: 'transaction' })
  expect(noDirect.code).toBe(2)
  expect(noDirect.output).toContain('DATABASE_DIRECT_URL')

  const api = jsonClient(cluster.base)

  // Set-up through the balancer, like an operator.
  const jwt = await new SignJWT({ email: SUPERADMIN_EMAIL })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  const company = await api('POST', '/api/superadmin/companies', { bearer: jwt, body: { name: `Cluster ${process.pid}` } })
  expect(company.status).toBe(201)
  const companyId = company.body.id as number
  expect((await api('PATCH', `/api/superadmin/companies/${companyId}`, { bearer: jwt, body: { modules: { ventanilla: true } } })).status).toBe(200)
  const keys: string[] = []
  for (let i = 0; i < 8; i++) {
    const issued = await api('POST', `/api/superadmin/companies/${companyId}/api-keys`, { bearer: jwt, body: { name: `k${i}` } })
    expect(issued.status).toBe(201)
    keys.push(issued.body.key)
  }
  const [admin, hammerKey, ...writerKeys] = keys
  const type = await api('POST', '/api/operation-types', { key: admin, body: { name: 'Cambio', kind: 'exchange' } })
  expect(type.status).toBe(201)
  const caja = await api('POST', '/api/clients', { key: admin, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] } })
  const cuenta = await api('POST', '/api/clients', { key: admin, body: { name: 'Mayorista', type: 1, accounts: [{ currency_name: 'ARS' }] } })
  expect([caja.status, cuenta.status]).toEqual([201, 201])
  const accountIds: number[] = [...caja.body.accounts, ...cuenta.body.accounts].map((a: Json) => a.id)
  const settings = { logoUrl: 'https://cdn.example/logo.png', showLogo: false, timezone: 'America/Argentina/Buenos_Aires', tickerText: 'start', announceSound: false, announceTts: false, privacyMode: 'ticket' }
  expect((await api('PUT', '/api/ventanilla/settings', { key: admin, body: settings })).status).toBe(200)
  const token = await api('POST', '/api/ventanilla/tokens', { key: admin, body: { name: 'TV' } })
  expect(token.status).toBe(201)

  await exportsThroughPgBouncer(api, db, admin, cuenta.body.id)
  await exchangesThroughCluster(api, db, [admin, ...writerKeys], companyId, caja.body.id)

  const screens = Array.from({ length: 6 }, () => new Screen(`${cluster.base}/api/public/ventanilla/${token.body.token}/events`))
  expect(await until(() => screens.every((s) => s.last !== null), 20_000)).toBe(true)

  const started = Date.now()
  const running = () => Date.now() - started < LOAD_MS
  const created = new Map<number, string>()
  const approved = new Set<number>()
  const statuses: Record<string, number> = {}
  const count = (k: string) => (statuses[k] = (statuses[k] ?? 0) + 1)
  let lastTicker = 'start'

  const writer = async (key: string, w: number) => {
    let n = 0
    while (running()) {
      const amount = `${(w + 1) * 100 + (n++ % 97)}.25`
      try {
        const op = await api('POST', '/api/operations', {
          key,
          body: { operation_type_id: type.body.id, transactions: [{ account_id: accountIds[0], amount }, { account_id: accountIds[2], amount: `-${amount}` }] },
        })
        count(`create ${op.status}`)
        if (op.status !== 201) continue
        created.set(op.body.id, amount)
        if (n % 3 === 0) continue
        const ok = await api('POST', `/api/operations/${op.body.id}/approve`, { key })
        count(`approve ${ok.status}`)
        if (ok.status === 200) approved.add(op.body.id)
      } catch {
        count('network')
      }
      // Paced to stay inside each writer's own budget: only the hammering credential is meant to hit the limit.
      await Bun.sleep(40)
    }
  }
  const reader = async (key: string) => {
    while (running()) {
      try {
        count(`read ${(await api('GET', `/api/clients/${caja.body.id}`, { key })).status}`)
        count(`read ${(await api('GET', '/api/operations?page=1&pageSize=20', { key })).status}`)
      } catch {
        count('network')
      }
      await Bun.sleep(60)
    }
  }
  const ticker = async () => {
    let n = 0
    while (running()) {
      const text = `tick ${++n}`
      try {
        const put = await api('PUT', '/api/ventanilla/settings', { key: admin, body: { ...settings, tickerText: text } })
        if (put.status === 200) lastTicker = text
      } catch {
        // Unacknowledged: the screens may or may not show it.
      }
      await Bun.sleep(200)
    }
  }
  // One credential hammering every process at once: the shared budget is what limits it.
  let accepted = 0
  let refused = 0
  // It goes on after the load until it has been refused a few times, however slow the machine.
  const hammer = async () => {
    while (running() || (refused < 20 && Date.now() - started < LOAD_MS + 40_000)) {
      try {
        const r = await api('GET', '/api/operation-types', { key: hammerKey })
        if (r.status === 429) refused++
        else if (r.status === 200) accepted++
      } catch {
        // A request cut by the kill was neither accepted nor refused by a limiter we can see.
      }
    }
  }

  // The process to kill holds at least one screen.
  const victim = screens.find((s) => s.server && s.server !== '?')!.server!
  const victimPid = Number(readFileSync(join(dir, `${victim.replace(/^s/, 'server-')}.pid`), 'utf8'))
  const onVictim = screens.filter((s) => s.server === victim)
  const connectionsBefore = new Map(screens.map((s) => [s, s.connections]))
  const killer = (async () => {
    await Bun.sleep(KILL_AT_MS)
    process.kill(victimPid, 'SIGKILL')
  })()

  await Promise.all([
    ...writerKeys.slice(0, 4).map((k, i) => writer(k, i)),
    ...writerKeys.slice(4).map((k) => reader(k)),
    ticker(),
    hammer(),
    hammer(),
    killer,
  ])
  const elapsedMinutes = (Date.now() - started) / 60_000

  // Every screen of the killed process came back through HAProxy; all of them show the last acknowledged change.
  expect(onVictim.length).toBeGreaterThan(0)
  const settled = await until(
    () => onVictim.every((s) => s.connections > connectionsBefore.get(s)! && s.server !== victim) && screens.every((s) => s.last?.tickerText === lastTicker),
    20_000,
  )
  const screenState = screens.map((s) => ({ connections: s.connections, servers: s.servers, ticker: s.last?.tickerText }))
  await Promise.all(screens.map((s) => s.stop()))
  await cluster.stop()
  console.log(`[cluster] killed ${victim}; ${JSON.stringify(statuses)}; rate limit: ${accepted} accepted, ${refused} refused in ${(elapsedMinutes * 60).toFixed(1)} s; screens ${JSON.stringify(screenState)}`)
  expect({ settled, lastTicker, screenState }).toMatchObject({ settled: true })

  // Nothing acknowledged is missing.
  const createdIds = [...created.keys()]
  expect(createdIds.length).toBeGreaterThan(20)
  const rows = await db<{ id: number; status: string }[]>`select id, status from operations where company_id = ${companyId} and id = any(${createdIds})`
  expect(rows.length).toBe(createdIds.length)
  const status = new Map(rows.map((r) => [r.id, r.status]))
  expect([...approved].filter((id) => status.get(id) !== 'completed')).toEqual([])
  // No request failed for a reason other than the kill (cut connections, HAProxy's 502/503 around it) or its
  // own credential's budget on a machine fast enough to spend it.
  const unexpected = Object.keys(statuses).filter((k) => !/ (200|201|429)$/.test(k) && k !== 'network' && !/ 50[23]$/.test(k))
  expect(unexpected).toEqual([])

  // Balances are the sums of completed amounts, to the last decimal.
  const ledger = await db<{ id: number; balance: string; completed: string }[]>`
    select a.id, a.balance::text as balance,
           coalesce((select sum(amount) from transactions x where x.account_id = a.id and x.status = 'completed'), 0)::numeric(28,6)::text as completed
    from accounts a where a.id = any(${accountIds}) order by a.id`
  for (const row of ledger) expect(row.balance).toBe(row.completed)
  expect(ledger.some((r) => Number(r.balance) !== 0)).toBe(true)

  // The limit held across the three processes: its budget plus what refilled during the run, no more.
  expect(refused).toBeGreaterThan(0)
  expect(accepted).toBeLessThanOrEqual(LIMIT + Math.ceil(LIMIT * elapsedMinutes))
  expect(accepted).toBeGreaterThanOrEqual(LIMIT / 2)
}
