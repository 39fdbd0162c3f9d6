/**
 * The probes and the metrics of server/modules/monitoring: /metrics off by default and never reachable by a
 * company credential, the figures a known workload leaves (route templates, status classes, refusals by limit and
 * by cause, open streams, the pool, the outbox and audit backlogs), and readiness against a database that stops
 * taking writes or lacks a migration, while liveness stays up.
 */
import { describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { buildTestApp, postgresTest, testApp, type TestApp } from '../helpers'
import { openStream } from '../sse'
import { startServer } from '../server'
import { freshDatabase } from '../fresh'
import { admission } from '../../server/lib/write'
import { LAST_MIGRATION } from '../../db/client'
import { loadConfig } from '../../server/config'

const TOKEN = 'metrics-token-for-tests-0123456789'

/** The value of one sample of the Prometheus text, matched by name and the labels given; undefined when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!m || m[1] !== name) continue
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]))
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3])
  }
  return undefined
}

/** Every label value of the text but bucket bounds, for the check that none names a company or a concrete path. */
const labelValues = (text: string) => [...text.matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].filter((m) => m[1] !== 'le').map((m) => m[2])

let metered: Promise<TestApp> | undefined
/** An app with metrics on the main port behind TOKEN. */
const meteredApp = () => (metered ??= buildTestApp({ metrics: { token: TOKEN } }))

const scrape = async (t: TestApp) => {
  const res = await t.request('GET', '/metrics', { bearer: TOKEN })
  expect(res.status).toBe(200)
  return res.body as string
}

describe('metrics settings', () => {
  const DB = { DATABASE_URL: 'postgres://u@db.example/fos' }
  test('a bad combination stops the start with a message naming the variable', () => {
    const refused = (env: Record<string, string>) => () => loadConfig(env)
    expect(refused({ METRICS_TOKEN: 'short' })).toThrow('METRICS_TOKEN must be at least 16 characters')
    expect(refused({ ...DB, PROCESSES: '2', METRICS_TOKEN: TOKEN })).toThrow('Set METRICS_PORT as well')
    expect(refused({ PORT: '9465', ...DB, PROCESSES: '3', METRICS_PORT: '9464' })).toThrow('METRICS_PORT needs ports 9464–9466 apart from PORT (9465)')
    expect(refused({ ...DB, PROCESSES: '2', METRICS_PORT: '65535' })).toThrow('METRICS_PORT must be an integer from 1 to 65534')
  })

  test('off unless set; the token alone on one process, the port with any number', () => {
    expect(loadConfig({}).metrics).toEqual({ token: undefined })
    expect(loadConfig({ METRICS_TOKEN: TOKEN }).metrics).toEqual({ token: TOKEN })
    expect(loadConfig({ ...DB, PROCESSES: '4', METRICS_PORT: '9464', METRICS_TOKEN: TOKEN }).metrics).toEqual({ token: TOKEN, port: 9464 })
  })
})

describe('metrics', () => {
  test('off by default: /metrics is 404 like an unknown path; liveness and readiness answer', async () => {
    const t = await testApp()
    const off = await t.request('GET', '/metrics', { bearer: TOKEN })
    expect([off.status, off.body.code]).toEqual([404, 'NOT_FOUND'])
    expect((await t.request('GET', '/health')).body).toEqual({ status: 'ok' })
    const ready = await t.request('GET', '/health/ready')
    expect([ready.status, ready.body]).toEqual([200, { status: 'ready' }])
  })

  test('only the metrics token opens it: no company key, key as bearer, session or wrong token', async () => {
    const t = await meteredApp()
    const c = await t.newCompany()
    for (const opts of [{}, { key: c.key }, { bearer: c.key }, { bearer: `${TOKEN}x` }, { headers: { authorization: `Basic ${btoa(`x:${TOKEN}`)}` } }]) {
      const res = await t.request('GET', '/metrics', opts)
      expect([res.status, res.body.code, res.headers.get('www-authenticate')]).toEqual([401, 'UNAUTHORIZED', 'Bearer realm="metrics"'])
    }
    const ok = await t.request('GET', '/metrics', { bearer: TOKEN })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(ok.body).toContain('# TYPE fos_http_request_duration_seconds histogram')
  })

  test('a known workload: counts by route template and status class, no tenant in any label', async () => {
    const t = await meteredApp()
    const c = await t.newCompany({ name: `Casa Metrica ${process.pid}` })
    const before = await scrape(t)
    const count = (text: string, route: string, method: string, cls: string) =>
      sample(text, 'fos_http_request_duration_seconds_count', { route, method, status_class: cls }) ?? 0
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    expect(client.status).toBe(201)
    for (let i = 0; i < 3; i++) expect((await t.request('GET', `/api/clients/${client.body.id}`, { key: c.key })).status).toBe(200)
    expect((await t.request('GET', '/api/clients/2147483646', { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/no/such/path')).status).toBe(404)
    const after = await scrape(t)
    expect(count(after, '/api/clients/:id', 'GET', '2xx') - count(before, '/api/clients/:id', 'GET', '2xx')).toBe(3)
    expect(count(after, '/api/clients/:id', 'GET', '4xx') - count(before, '/api/clients/:id', 'GET', '4xx')).toBe(1)
    expect(count(after, '/api/clients', 'POST', '2xx') - count(before, '/api/clients', 'POST', '2xx')).toBe(1)
    expect(count(after, 'unmatched', 'GET', '4xx') - count(before, 'unmatched', 'GET', '4xx')).toBe(1)
    const values = labelValues(after)
    expect(values.filter((v) => v === String(c.id) || v === String(client.body.id) || v.includes(`/${client.body.id}`) || v.includes('Casa Metrica') || v.includes('/no/such'))).toEqual([])
    expect(values.filter((v) => v.startsWith('/api/') && !/^\/api\/[a-zA-Z_\-/:*]*$/.test(v))).toEqual([])
    // Process figures that hold under Bun are there; those that do not are left out.
    for (const name of ['process_resident_memory_bytes', 'process_cpu_seconds_total', 'nodejs_eventloop_lag_p99_seconds', 'nodejs_heap_size_used_bytes'])
      expect(sample(after, name)).toBeGreaterThanOrEqual(0)
    expect(sample(after, 'nodejs_active_handles_total')).toBeUndefined()
    expect(sample(after, 'fos_runtime_info', { runtime: 'bun', version: Bun.version })).toBe(1)
  })

  test('refusals are counted by limit: the per-credential rate limit and sign-ins, bad and throttled', async () => {
    // A per-credential budget small enough to run out of.
    const t = await buildTestApp({ metrics: { token: TOKEN }, rateLimit: { perKey: 5, perIp: 0, perCompany: 0 } })
    const c = await t.newCompany()
    const before = await scrape(t)
    const statuses: number[] = []
    for (let i = 0; i < 8; i++) statuses.push((await t.request('GET', '/api/tags', { key: c.key })).status)
    const limited = statuses.filter((s) => s === 429).length
    expect(limited).toBeGreaterThan(0)
    const signIns: number[] = []
    for (let i = 0; i < 7; i++) {
      const res = await t.request('POST', '/api/sessions', { body: { company_id: c.id, email: `nadie.${process.pid}@fos.test`, password: 'no es esta' } })
      signIns.push(res.status)
    }
    const after = await scrape(t)
    const delta = (name: string, labels: Record<string, string>) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0)
    expect(delta('fos_rate_limited_total', { limit: 'credential' })).toBe(limited)
    expect(delta('fos_sign_in_refusals_total', { reason: 'bad_credentials' })).toBe(signIns.filter((s) => s === 401).length)
    expect(delta('fos_sign_in_refusals_total', { reason: 'throttled' })).toBe(signIns.filter((s) => s === 429).length)
    expect(signIns.filter((s) => s === 429).length).toBeGreaterThan(0)
  }, 30_000)

  test('open streams by kind, while they are open', async () => {
    const t = await meteredApp()
    const c = await t.newCompany({ ventanilla: true })
    expect((await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })).status).toBe(201)
    const tok = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })
    expect(tok.status).toBe(201)
    const screens = Number(sample(await scrape(t), 'fos_streams_open', { kind: 'screen' }))
    const consoles = Number(sample(await scrape(t), 'fos_streams_open', { kind: 'console' }))
    const screen = await openStream((r) => t.app.handle(r), `http://fos.test/api/public/ventanilla/${tok.body.token}/events`)
    await screen.next((e) => e.event === 'snapshot')
    const queue = await openStream((r) => t.app.handle(r), 'http://fos.test/api/ventanilla/events', { 'x-api-key': c.key })
    await queue.next((e) => e.event === 'queue')
    const open = await scrape(t)
    expect(sample(open, 'fos_streams_open', { kind: 'screen' })).toBe(screens + 1)
    expect(sample(open, 'fos_streams_open', { kind: 'console' })).toBe(consoles + 1)
    screen.abort()
    queue.abort()
    let closed = await scrape(t)
    for (const deadline = Date.now() + 2000; sample(closed, 'fos_streams_open', { kind: 'screen' }) !== screens && Date.now() < deadline; closed = await scrape(t)) await Bun.sleep(20)
    expect(sample(closed, 'fos_streams_open', { kind: 'screen' })).toBe(screens)
    expect(sample(closed, 'fos_streams_open', { kind: 'console' })).toBe(consoles)
  })

  postgresTest('the pool: in use, waiting, waits; a full line is a 503 counted as db_pool_queue', async () => {
    const t = await buildTestApp({ metrics: { token: TOKEN }, dbPoolMax: 1, dbQueueTimeoutMs: 3000 })
    const c = await t.newCompany()
    const line = admission(t.ctx)!
    // The only connection is held, as a long request would hold it.
    const release = await line.enter(c.id)
    const waiting = t.request('GET', '/api/tags', { key: c.key })
    for (const deadline = Date.now() + 2000; line.waiting === 0 && Date.now() < deadline; ) await Bun.sleep(5)
    const busy = await scrape(t)
    expect(sample(busy, 'fos_db_pool_size')).toBe(1)
    expect(sample(busy, 'fos_db_pool_in_use')).toBe(1)
    expect(sample(busy, 'fos_db_pool_waiting')).toBe(1)
    const refused = await waiting
    expect([refused.status, refused.body.code, refused.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '1'])
    release()
    expect((await t.request('GET', '/api/tags', { key: c.key })).status).toBe(200)
    const after = await scrape(t)
    expect(sample(after, 'fos_unavailable_total', { cause: 'db_pool_queue' })).toBe(1)
    expect(sample(after, 'fos_db_pool_in_use')).toBe(0)
    expect(sample(after, 'fos_db_pool_waiting')).toBe(0)
    // Every admitted transaction is one observation; the refused one is not.
    expect(sample(after, 'fos_db_pool_wait_seconds_count')).toBeGreaterThanOrEqual(2)
  })

  test('the outbox and the audit trail, read from the tables at scrape time', async () => {
    // This app runs neither the delivery worker nor the sealer: what it writes stays pending.
    const t = await meteredApp()
    const c = await t.newCompany()
    const endpoint = await t.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url: 'https://93.184.215.14/hook', event_types: ['*'] } })
    expect(endpoint.status).toBe(201)
    const before = await scrape(t)
    expect(sample(before, 'fos_database_figures_up')).toBe(1)
    expect((await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Otra', type: 1 } })).status).toBe(201)
    await Bun.sleep(1100)
    const after = await scrape(t)
    expect(sample(after, 'fos_webhook_deliveries_pending')! - sample(before, 'fos_webhook_deliveries_pending')!).toBe(1)
    expect(sample(after, 'fos_webhook_oldest_unattempted_seconds')).toBeGreaterThanOrEqual(1)
    expect(sample(after, 'fos_webhook_oldest_pending_seconds')).toBeGreaterThanOrEqual(sample(after, 'fos_webhook_oldest_unattempted_seconds')!)
    expect(sample(after, 'fos_audit_unsealed_rows')!).toBeGreaterThan(sample(before, 'fos_audit_unsealed_rows')!)
    expect(sample(after, 'fos_audit_seal_lag_seconds')).toBeGreaterThanOrEqual(1)
    expect(sample(after, 'fos_ready')).toBe(1)
  })
})

describe('readiness', () => {
  postgresTest('503 with Retry-After while the database takes no writes or lacks a migration; liveness stays 200', async () => {
    const url = await freshDatabase()
    const dir = mkdtempSync(join(tmpdir(), 'fos-ready-'))
    const server = await startServer({ dataDir: dir, databaseUrl: url, env: { DB_POOL_MAX: '2' } })
    const db = postgres(url, { max: 1, onnotice: () => {} })
    const name = new URL(url).pathname.slice(1)
    /** New sessions of the server's pool start with the setting; its open ones are ended so that it reconnects. */
    const reconnect = () => db`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${name} and pid <> pg_backend_pid()`
    const probe = async (path: string) => {
      const res = await fetch(`${server.base}${path}`)
      return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as { status?: string; error?: string; code?: string } }
    }
    /** The first answer of `path` that `ok` accepts, within 10 s (the pool reconnects on its next statement). */
    const until = async (path: string, ok: (r: Awaited<ReturnType<typeof probe>>) => boolean) => {
      let last = await probe(path)
      for (const deadline = Date.now() + 10_000; !ok(last) && Date.now() < deadline; last = await probe(path)) await Bun.sleep(100)
      return last
    }
    try {
      expect((await probe('/health/ready')).body).toEqual({ status: 'ready' })

      await db.unsafe(`alter database ${name} set default_transaction_read_only = on`)
      await reconnect()
      // The pool's ended sessions first answer "not reachable" once; then the reconnected ones are read-only.
      const readOnly = await until('/health/ready', (r) => r.body.error?.includes('writes') === true)
      expect(readOnly).toEqual({ status: 503, retryAfter: '1', body: { error: 'Not ready: the database does not take writes yet', code: 'SERVICE_UNAVAILABLE' } })
      expect((await until('/health', (r) => r.status === 200)).body).toEqual({ status: 'ok' })
      await db.unsafe(`alter database ${name} reset default_transaction_read_only`)
      await reconnect()
      expect((await until('/health/ready', (r) => r.status === 200)).body).toEqual({ status: 'ready' })

      const [{ id }] = await db`delete from drizzle.__drizzle_migrations where created_at = ${LAST_MIGRATION} returning id, hash`
      const behind = await until('/health/ready', (r) => r.status === 503)
      expect(behind.retryAfter).toBe('1')
      expect(behind.body.error).toBe('Not ready: the database lacks migrations this version needs')
      await db`insert into drizzle.__drizzle_migrations (id, hash, created_at) values (${id}, 'restored', ${LAST_MIGRATION})`
      expect((await until('/health/ready', (r) => r.status === 200)).status).toBe(200)
    } finally {
      await db.end({ timeout: 1 })
      server.proc.kill('SIGTERM')
      await server.proc.exited
      rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
})
