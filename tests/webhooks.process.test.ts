/**
 * Webhook delivery across real server processes (`bun server/main.ts`): a kill -9 between commit and delivery,
 * two processes sharing one database and one receiver, and a process at capacity waking the other.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { SignJWT } from 'jose'
import postgres from 'postgres'
import { postgresTest, SUPERADMIN_EMAIL, SUPERADMIN_SECRET } from './helpers'
import { startServer, type RunningServer } from './server'
import { startReceiver, verify, type Receiver } from './receiver'

const ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCHEDULE: '1,1,1',
  // The lease on an attempt is twice this: how long a crashed attempt waits before it is made again.
  WEBHOOK_TIMEOUT_SECONDS: '2',
}
const running = new Set<Subprocess>()
const dirs: string[] = []
const receivers: Receiver[] = []

afterAll(() => {
  for (const p of running) if (p.exitCode === null) p.kill('SIGKILL')
  for (const r of receivers) r.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function start(dataDir: string, databaseUrl: string | undefined, name: string, env: Record<string, string> = {}) {
  const log = Bun.file(join(dataDir, `${name}.log`))
  const s = await startServer({ dataDir, databaseUrl, stdout: log, stderr: log, env: { ...ENV, ...env } })
  running.add(s.proc)
  return s
}

async function api(base: string, method: string, path: string, init: { key?: string; bearer?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {}
  if (init.key) headers['x-api-key'] = init.key
  if (init.bearer) headers.authorization = `Bearer ${init.bearer}`
  if (init.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${base}${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body), signal: AbortSignal.timeout(30_000) })
  const text = await res.text()
  const body = text ? JSON.parse(text) : null
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${text}`)
  return body
}

/** A company with a key, an operation type and one account, made through the API of `s`. */
async function company(s: RunningServer, name: string) {
  const bearer = await new SignJWT({ email: SUPERADMIN_EMAIL })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('10m')
    .sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  const c = await api(s.base, 'POST', '/api/superadmin/companies', { bearer, body: { name } })
  const { key } = await api(s.base, 'POST', `/api/superadmin/companies/${c.id}/api-keys`, { bearer, body: { name: 'hooks' } })
  const client = await api(s.base, 'POST', '/api/clients', { key, body: { name: 'Cliente', type: 1, accounts: [{ currency_name: 'ARS' }] } })
  const type = await api(s.base, 'POST', '/api/operation-types', { key, body: { name: 'Carga', kind: 'other' } })
  const operation = (base: string) =>
    api(base, 'POST', '/api/operations', { key, body: { operation_type_id: type.id, transactions: [{ account_id: client.accounts[0].id, amount: 10 }] } })
  return { id: c.id as number, key: key as string, operation }
}

function receiver() {
  const r = startReceiver()
  receivers.push(r)
  return r
}

async function crashScenario(databaseUrl: string | undefined) {
  const dataDir = mkdtempSync(join(tmpdir(), 'fos-webhooks-crash-'))
  dirs.push(dataDir)
  let server = await start(dataDir, databaseUrl, 'first')
  const c = await company(server, `Webhooks crash ${databaseUrl ? 'pg' : 'pglite'} ${process.pid}`)
  const r = receiver()
  let hold = true
  // The first request is held open: the kill comes while the attempt is in flight.
  r.respond = async () => {
    while (hold) await Bun.sleep(20)
    return new Response('ok')
  }
  const ep = await api(server.base, 'POST', '/api/webhook-endpoints', { key: c.key, body: { url: r.url, event_types: ['operation.created'] } })
  const op = await c.operation(server.base)
  const [inFlight] = await r.until((all) => all.length >= 1)
  server.proc.kill('SIGKILL')
  await server.proc.exited
  running.delete(server.proc)
  hold = false

  server = await start(dataDir, databaseUrl, 'second')
  const [, again] = await r.until((all) => all.length >= 2, 30_000)
  expect(again.id).toBe(inFlight.id)
  expect(again.event.data.object.id).toBe(op.id)
  expect(verify(ep.secret, again)).toEqual(inFlight.event)

  // Committed, then refused once, then the process dies before the retry: the retry happens after the restart.
  let refuse = true
  r.respond = () => {
    const status = refuse ? 500 : 200
    refuse = false
    return new Response('', { status })
  }
  const op2 = await c.operation(server.base)
  await r.until((all) => all.some((x) => x.event.data.object.id === op2.id))
  for (;;) {
    const latest = (await api(server.base, 'GET', `/api/webhook-endpoints/${ep.id}/attempts?pageSize=1`, { key: c.key })).data[0]
    if (latest.response_status === 500) break
    await Bun.sleep(20)
  }
  server.proc.kill('SIGKILL')
  await server.proc.exited
  running.delete(server.proc)
  server = await start(dataDir, databaseUrl, 'third')
  await r.until((all) => all.filter((x) => x.event.data.object.id === op2.id).length >= 2, 30_000)

  await Bun.sleep(1500)
  // Once per attempt: the interrupted attempt, its redo; the refused attempt, its retry. Nothing more.
  expect(r.received.map((x) => x.event.data.object.id)).toEqual([op.id, op.id, op2.id, op2.id])
  const log = (await api(server.base, 'GET', `/api/webhook-endpoints/${ep.id}/attempts`, { key: c.key })).data.reverse()
  expect(log.map((a: any) => [a.attempt, a.status])).toEqual([
    [1, 'failed'],
    [2, 'succeeded'],
    [1, 'failed'],
    [2, 'succeeded'],
  ])
  expect(log[0].error).toMatch(/^interrupted/)
  expect(log[2].response_status).toBe(500)
  server.proc.kill('SIGTERM')
  await server.proc.exited
  running.delete(server.proc)
}

describe('webhook delivery across processes', () => {
  postgresTest('kill -9 between commit and delivery (Postgres): delivered after restart, once per attempt', () => crashScenario(process.env.TEST_DATABASE_URL), 120_000)

  // The embedded database is the process's own (a fresh DATA_DIR), so this runs whatever database the suite has.
  test('kill -9 between commit and delivery (embedded PGlite): delivered after restart, once per attempt', () => crashScenario(undefined), 120_000)

  postgresTest(
    'two processes on one database: every event delivered, never to one endpoint twice at once, one object in order, at most the per-endpoint bound in flight',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fos-webhooks-two-'))
      dirs.push(dataDir)
      const perEndpoint = { WEBHOOK_CONCURRENCY_PER_ENDPOINT: '3' }
      const [a, b] = await Promise.all([start(dataDir, process.env.TEST_DATABASE_URL, 'a', perEndpoint), start(dataDir, process.env.TEST_DATABASE_URL, 'b', perEndpoint)])
      const c = await company(a, `Webhooks two ${process.pid}`)
      const r = receiver()
      const open = new Map<string, number>()
      let overlaps = 0
      let inFlight = 0
      let mostInFlight = 0
      r.respond = async (rec) => {
        const n = (open.get(rec.id) ?? 0) + 1
        open.set(rec.id, n)
        if (n > 1) overlaps++
        mostInFlight = Math.max(mostInFlight, ++inFlight)
        await Bun.sleep(rec.at % 25)
        inFlight--
        open.set(rec.id, open.get(rec.id)! - 1)
        return new Response('ok')
      }
      const ep = await api(a.base, 'POST', '/api/webhook-endpoints', { key: c.key, body: { url: r.url, event_types: ['operation.*'] } })
      const ops = await Promise.all(Array.from({ length: 40 }, (_, i) => c.operation(i % 2 ? a.base : b.base)))
      await Promise.all(ops.map((op, i) => api(i % 2 ? b.base : a.base, 'POST', `/api/operations/${op.id}/approve`, { key: c.key })))
      await r.until((all) => new Set(all.map((x) => x.id)).size >= 80, 30_000)
      await Bun.sleep(1000)
      expect(overlaps).toBe(0)
      // The per-endpoint bound holds across the two processes, not only within each.
      expect(mostInFlight).toBeLessThanOrEqual(3)
      const ids = r.received.map((x) => x.id)
      expect(new Set(ids).size).toBe(80)
      expect(ids.length).toBe(80)
      for (const op of ops) {
        const types = r.received.filter((x) => x.event.data.object.id === op.id).map((x) => x.event.type)
        expect(types).toEqual(['operation.created', 'operation.approved'])
      }
      for (const rec of r.received) expect(verify(ep.secret, rec)).toBeTruthy()
      for (const s of [a, b]) {
        s.proc.kill('SIGTERM')
        await s.proc.exited
        running.delete(s.proc)
      }
    },
    120_000,
  )

  postgresTest(
    'woken, not polled: a commit wakes its own process, a process at capacity wakes the other, a retry wakes its worker',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fos-webhooks-wake-'))
      dirs.push(dataDir)
      // Polls ten minutes apart: whatever arrives within the test was delivered by a wake-up. Attempts time out
      // only after a minute, so A's one slot stays held by the slow receiver for the whole test.
      const quiet = { WEBHOOK_POLL_MS: '600000', WEBHOOK_TIMEOUT_SECONDS: '60' }
      const [a, b] = await Promise.all([
        start(dataDir, process.env.TEST_DATABASE_URL, 'a', { ...quiet, WEBHOOK_CONCURRENCY: '1' }),
        start(dataDir, process.env.TEST_DATABASE_URL, 'b', quiet),
      ])
      const c = await company(a, `Webhooks wake ${process.pid}`)
      const slow = receiver()
      let hold = true
      slow.respond = async () => {
        while (hold) await Bun.sleep(20)
        return new Response('ok')
      }
      const fast = receiver()
      let refused = false
      fast.respond = () => {
        if (refused) return new Response('ok')
        refused = true
        return new Response('', { status: 500 })
      }
      await api(a.base, 'POST', '/api/webhook-endpoints', { key: c.key, body: { url: slow.url, event_types: ['operation.created'] } })
      await api(a.base, 'POST', '/api/webhook-endpoints', { key: c.key, body: { url: fast.url, event_types: ['operation.approved'] } })

      // A's own worker is woken by the commit and takes the delivery: A's one slot is now held by the slow receiver.
      const op = await c.operation(a.base)
      await slow.until((all) => all.length === 1, 10_000)
      await Bun.sleep(200)

      // Committed in A, which has no free slot: B is told and delivers; B's retry after the 500 comes a second later.
      await api(a.base, 'POST', `/api/operations/${op.id}/approve`, { key: c.key })
      const [first, again] = await fast.until((all) => all.length >= 2, 15_000)
      expect([first.event.type, again.event.type]).toEqual(['operation.approved', 'operation.approved'])
      expect(again.id).toBe(first.id)
      expect(again.at - first.at).toBeGreaterThanOrEqual(900)
      expect(slow.received.length).toBe(1)
      expect(hold).toBe(true)

      hold = false
      for (const s of [a, b]) {
        s.proc.kill('SIGTERM')
        await s.proc.exited
        running.delete(s.proc)
      }
    },
    120_000,
  )

  postgresTest(
    'a statement cut off with its connection: its outcomes are recorded by the next one at once, nothing sent again',
    async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'fos-webhooks-cut-'))
      dirs.push(dataDir)
      // The default attempt timeout: leases of 30 s, which nothing here may wait out.
      const s = await start(dataDir, process.env.TEST_DATABASE_URL, 'cut', { WEBHOOK_TIMEOUT_SECONDS: '15' })
      const c = await company(s, `Webhooks cut ${process.pid}`)
      const r = receiver()
      let hold = true
      r.respond = async () => {
        while (hold) await Bun.sleep(20)
        return new Response('ok')
      }
      const ep = await api(s.base, 'POST', '/api/webhook-endpoints', { key: c.key, body: { url: r.url, event_types: ['operation.created'] } })
      for (let i = 0; i < 20; i++) await c.operation(s.base)
      await r.until((all) => all.length >= 20, 10_000)
      const admin = postgres(process.env.TEST_DATABASE_URL!, { max: 2, onnotice: () => {} })
      try {
        // The statement recording the 20 outcomes waits behind the claims' lock, and its connection is cut there.
        const session = await admin.reserve()
        await session`begin`
        await session`select pg_advisory_xact_lock(727416, 0)`
        hold = false
        let waiting: { pid: number } | undefined
        const deadline = Date.now() + 10_000
        while (!waiting && Date.now() < deadline) {
          ;[waiting] = await admin<{ pid: number }[]>`select pid from pg_locks where locktype = 'advisory' and not granted and classid = 727416 and objid = 0`
          if (!waiting) await Bun.sleep(20)
        }
        expect(waiting).toBeDefined()
        await admin`select pg_terminate_backend(${waiting!.pid})`
        await session`commit`
        session.release()
        const cutAt = Date.now()
        let states: { status: string; leased: boolean }[] = []
        while (Date.now() - cutAt < 10_000) {
          states = await admin`select status, locked_until is not null as leased from webhook_deliveries where endpoint_id = ${ep.id}`
          if (states.every((d) => d.status === 'succeeded' && !d.leased)) break
          await Bun.sleep(50)
        }
        // Recorded within seconds, not when the 30 s leases run out; and nothing delivered twice.
        expect(states.map((d) => [d.status, d.leased])).toEqual(Array(20).fill(['succeeded', false]))
        expect(Date.now() - cutAt).toBeLessThan(10_000)
        await Bun.sleep(500)
        expect(r.received.length).toBe(20)
        const log = (await api(s.base, 'GET', `/api/webhook-endpoints/${ep.id}/attempts`, { key: c.key })).data
        expect(log.map((a: any) => a.status)).toEqual(Array(20).fill('succeeded'))
      } finally {
        await admin.end({ timeout: 1 })
        s.proc.kill('SIGTERM')
        await s.proc.exited
        running.delete(s.proc)
      }
    },
    120_000,
  )
})
