import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { buildTestApp, postgresTest, testApp, type Company, type TestApp } from '../helpers'
import { freePort } from '../server'
import { startReceiver, verify, type Receiver } from '../receiver'
import { ledgerSetup } from './operations.fixtures'
import { DeliveryWorker, deliveryWorker } from '../../server/modules/webhooks'
import { write } from '../../server/lib/write'
import { announce } from '../../server/lib/events'
import { authenticateKey } from '../../server/access/caller'
import { DEFAULT_RETRY_SCHEDULE, loadConfig } from '../../server/config'
import { pinned, sendTarget } from '../../server/modules/webhooks/address'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

let t: TestApp
const receivers: Receiver[] = []

beforeAll(async () => {
  const base = (await testApp()).ctx.config
  t = await buildTestApp({
    webhooks: { ...base.webhooks, allowHttp: true, allowPrivate: true, retrySchedule: [1, 1, 1], timeoutMs: 1000 },
  })
  deliveryWorker(t.ctx).start()
})

afterAll(async () => {
  await deliveryWorker(t.ctx).stop()
  for (const r of receivers) r.stop()
})

function receiver(port?: number) {
  const r = startReceiver(port)
  receivers.push(r)
  return r
}

async function endpoint(c: Company, url: string, extra: Record<string, unknown> = {}) {
  const res = await t.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url, ...extra } })
  expect(res.status).toBe(201)
  return res.body as { id: number; secret: string; enabled: boolean }
}

async function operation(c: Company, typeId: number, accountId: number, amount = 100) {
  const res = await t.request('POST', '/api/operations', {
    key: c.key,
    body: { operation_type_id: typeId, transactions: [{ account_id: accountId, amount }] },
  })
  expect(res.status).toBe(201)
  return res.body as { id: number }
}

async function attempts(c: Company, endpointId: number) {
  const res = await t.request('GET', `/api/webhook-endpoints/${endpointId}/attempts?pageSize=200`, { key: c.key })
  expect(res.status).toBe(200)
  return (res.body.data as any[]).reverse()
}

async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (ok(v)) return v
    if (Date.now() > deadline) throw new Error(`not reached in ${timeoutMs} ms: ${JSON.stringify(v).slice(0, 500)}`)
    await Bun.sleep(50)
  }
}

describe('configuration', () => {
  test('defaults are those of the contract; a bad schedule stops the start', () => {
    const cfg = loadConfig({})
    expect(cfg.webhooks.retrySchedule).toEqual(DEFAULT_RETRY_SCHEDULE)
    expect(DEFAULT_RETRY_SCHEDULE).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000])
    expect(cfg.webhooks.timeoutMs).toBe(15_000)
    expect(cfg.webhooks.disableAfterHours).toBe(120)
    expect(cfg.webhooks.allowHttp).toBe(false)
    expect(cfg.webhooks.allowPrivate).toBe(false)
    expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1, 1,1' }).webhooks.retrySchedule).toEqual([1, 1, 1])
    expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: '1,x' })).toThrow('WEBHOOK_RETRY_SCHEDULE')
  })
})

describe('endpoint management', () => {
  test('URLs: https only, no private or loopback hosts, unless allowed', async () => {
    const strict = await testApp()
    const c = await strict.newCompany()
    for (const url of ['http://example.com/hook', 'https://127.0.0.1/hook', 'https://localhost/hook', 'https://10.1.2.3/x', 'https://169.254.169.254/latest', 'https://[::1]/x', 'https://100.64.0.1/x', 'https://[::ffff:127.0.0.1]/x', 'ftp://example.com/'])  {
      const res = await strict.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url } })
      expect(res.status, url).toBe(422)
      expect(res.body.code).toBe('WEBHOOK_URL_NOT_ALLOWED')
    }
    const ok = await strict.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url: 'https://93.184.215.14/hook' } })
    expect(ok.status).toBe(201)
    const patched = await strict.request('PATCH', `/api/webhook-endpoints/${ok.body.id}`, { key: c.key, body: { url: 'https://192.168.1.1/' } })
    expect(patched.status).toBe(422)
  })

  test('IPv6 forms carrying a loopback, private or metadata IPv4 address are refused at create and at send', async () => {
    const strict = await testApp()
    const c = await strict.newCompany()
    const rules = { allowHttp: false, allowPrivate: false }
    const carrying = [
      '[::127.0.0.1]', // IPv4-compatible
      '[::ffff:0:127.0.0.1]', // IPv4-translated
      '[2002:7f00:1::]', // 6to4 of 127.0.0.1
      '[2002:a9fe:a9fe::1]', // 6to4 of 169.254.169.254
      '[::ffff:10.0.0.1]', // IPv4-mapped
      '[::ffff:7f00:1]', // IPv4-mapped, written in hex
      '[64:ff9b::169.254.169.254]', // NAT64
      '[64:ff9b:1::a00:1]', // local-use NAT64
      '[2001:0:4136:e378:8000:63bf:3fff:fdd2]', // Teredo, client 192.0.2.45
      '[::]',
      '[fd00::1]',
    ]
    for (const host of carrying) {
      const url = `https://${host}/hook`
      const res = await strict.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url } })
      expect({ url, status: res.status, code: res.body.code }).toEqual({ url, status: 422, code: 'WEBHOOK_URL_NOT_ALLOWED' })
      expect({ url, target: await sendTarget(url, rules) }).toEqual({ url, target: { refused: 'blocked address' } })
    }
    // The same forms carrying a public address are public.
    for (const host of ['[::ffff:93.184.215.14]', '[64:ff9b::93.184.215.14]', '[2002:5db8:d70e::1]', '[2001:4860:4860::8888]']) {
      const url = `https://${host}/hook`
      expect({ url, target: await sendTarget(url, rules) }).toEqual({ url, target: { url, headers: {} } })
    }
  })

  test('an attempt connects to the address that was checked, naming its host to HTTP and to TLS', async () => {
    const strict = { allowHttp: false, allowPrivate: false }
    expect(await sendTarget('https://localhost/hook', strict)).toEqual({ refused: 'blocked address' })
    expect(await sendTarget('https://93.184.215.14/hook', strict)).toEqual({ url: 'https://93.184.215.14/hook', headers: {} })
    expect(pinned(new URL('https://hooks.example:8443/in?x=1'), '2001:4860:4860::8888')).toEqual({
      url: 'https://[2001:4860:4860::8888]:8443/in?x=1',
      headers: { host: 'hooks.example:8443' },
      tls: { serverName: 'hooks.example' },
    })
    expect(pinned(new URL('http://hooks.example/in'), '93.184.215.14')).toEqual({ url: 'http://93.184.215.14/in', headers: { host: 'hooks.example' } })

    // A TLS receiver whose certificate names hooks.test only, reached at 127.0.0.1 as an attempt pinned there is.
    const fixtures = join(import.meta.dir, '..', 'fixtures')
    const cert = readFileSync(join(fixtures, 'hooks-test.cert.pem'), 'utf8')
    const server = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      tls: { cert, key: readFileSync(join(fixtures, 'hooks-test.key.pem'), 'utf8') },
      fetch: (req) => Response.json({ host: req.headers.get('host') }),
    })
    try {
      const target = pinned(new URL(`https://hooks.test:${server.port}/hook`), '127.0.0.1')
      const res = await fetch(target.url, { method: 'POST', headers: target.headers, tls: { ...target.tls, ca: cert } })
      expect(await res.json()).toEqual({ host: `hooks.test:${server.port}` })
      // The certificate is checked against the endpoint's name, not the address.
      const other = pinned(new URL(`https://other.test:${server.port}/hook`), '127.0.0.1')
      await expect(fetch(other.url, { method: 'POST', headers: other.headers, tls: { ...other.tls, ca: cert } })).rejects.toThrow()
    } finally {
      server.stop(true)
    }
  })

  test('create shows the secret once; reads never; unknown types are 400; who may manage', async () => {
    const c = await t.newCompany()
    const created = await t.request('POST', '/api/webhook-endpoints', {
      key: c.key,
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['operation.*', 'client.created'], description: 'ERP' },
    })
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({ url: 'http://127.0.0.1:9/hook', event_types: ['operation.*', 'client.created'], description: 'ERP', enabled: true, disabled_reason: null })
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    const id = created.body.id
    const one = await t.request('GET', `/api/webhook-endpoints/${id}`, { key: c.key })
    expect(one.status).toBe(200)
    expect(one.body.secret).toBeUndefined()
    const list = await t.request('GET', '/api/webhook-endpoints', { key: c.key })
    expect(list.body.data.map((e: any) => e.id)).toEqual([id])
    expect(JSON.stringify(list.body)).not.toContain('whsec_')
    expect((await t.request('POST', '/api/webhook-endpoints', { key: c.key, body: { url: 'http://127.0.0.1:9/', event_types: ['operation.aproved'] } })).status).toBe(400)
    expect((await t.request('POST', '/api/webhook-endpoints', { key: c.key, body: {} })).status).toBe(400)

    const other = await t.newCompany()
    expect((await t.request('GET', `/api/webhook-endpoints/${id}`, { key: other.key })).status).toBe(404)
    const plain = await c.employee(['operations.view'])
    expect((await t.request('GET', '/api/webhook-endpoints', { key: plain.key })).status).toBe(403)
    expect((await t.request('GET', '/api/events', { key: plain.key })).status).toBe(403)
    const manager = await c.employee(['webhooks.manage'])
    expect((await t.request('GET', '/api/webhook-endpoints', { key: manager.key })).status).toBe(200)
    const scoped = await c.employee(['webhooks.manage'], [])
    expect((await t.request('GET', '/api/events', { key: scoped.key })).status).toBe(200)

    const patched = await t.request('PATCH', `/api/webhook-endpoints/${id}`, { key: c.key, body: { enabled: false, description: 'off' } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ enabled: false, description: 'off' })
    expect((await t.request('DELETE', `/api/webhook-endpoints/${id}`, { key: c.key })).body).toEqual({ deleted: true })
    expect((await t.request('GET', `/api/webhook-endpoints/${id}`, { key: c.key })).status).toBe(404)
  })

  test('an Idempotency-Key replays the same endpoint and secret; the stored answer holds no clear secret', async () => {
    const c = await t.newCompany()
    const headers = { 'idempotency-key': `wh-${c.id}` }
    const a = await t.request('POST', '/api/webhook-endpoints', { key: c.key, headers, body: { url: 'http://127.0.0.1:9/a' } })
    const b = await t.request('POST', '/api/webhook-endpoints', { key: c.key, headers, body: { url: 'http://127.0.0.1:9/a' } })
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(b.body).toEqual(a.body)
    const clash = await t.request('POST', '/api/webhook-endpoints', { key: c.key, headers, body: { url: 'http://127.0.0.1:9/b' } })
    expect(clash.status).toBe(409)
    const stored = await t.ctx.database.rows<{ response: unknown }>(sql`select response from idempotency_keys where company_id = ${c.id}`)
    expect(JSON.stringify(stored)).not.toContain(a.body.secret)
  })

  test('secrets are neither in the table in clear nor in the audit trail', async () => {
    const c = await t.newCompany()
    const ep = await endpoint(c, 'http://127.0.0.1:9/x')
    const rotated = await t.request('POST', `/api/webhook-endpoints/${ep.id}/rotate-secret`, { key: c.key })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).toMatch(/^whsec_/)
    const raw = await t.ctx.database.rows(sql`select * from webhook_endpoints where id = ${ep.id}`)
    const audit = await t.ctx.database.rows(sql`select before, after, changes from audit_logs where company_id = ${c.id} and entity = 'webhook_endpoints'`)
    expect(audit.length).toBeGreaterThanOrEqual(2)
    for (const text of [JSON.stringify(raw), JSON.stringify(audit)]) {
      expect(text).not.toContain(ep.secret.slice(6))
      expect(text).not.toContain(rotated.body.secret.slice(6))
    }
    expect(JSON.stringify(audit)).not.toContain('secret_ciphertext')
    const trail = await t.request('GET', '/api/audit-logs?table=webhook_endpoints', { key: c.key })
    expect(trail.status).toBe(200)
    expect(JSON.stringify(trail.body)).not.toContain('ciphertext')
  })
})

describe('the event feed', () => {
  test('events carry the resource as its GET returns it, in order, with a cursor that resumes', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const op = await operation(c, typeId, cli.accounts[0])
    expect((await t.request('POST', `/api/operations/${op.id}/approve`, { key: c.key })).status).toBe(200)
    const get = await t.request('GET', `/api/operations/${op.id}`, { key: c.key })
    const page = await eventually(
      () => t.request('GET', '/api/events?type=operation.created,operation.approved', { key: c.key }),
      (r) => r.body.data.length === 2,
    )
    expect(page.status).toBe(200)
    const [created, approved] = page.body.data
    expect(created.type).toBe('operation.created')
    expect(approved.type).toBe('operation.approved')
    expect(created.id).toMatch(/^evt_\d+$/)
    expect(created.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(approved.data.object).toEqual(get.body)
    expect(created.data.object.status).toBe('pending')
    expect(created.data.object.transactions[0].status).toBe('pending')
    expect(created.data.channel).toBeUndefined()

    const single = await t.request('GET', `/api/events/${approved.id}`, { key: c.key })
    expect(single.body).toEqual(approved)
    const after = await t.request('GET', `/api/events?after=${created.id}&type=operation.approved`, { key: c.key })
    expect(after.body.data.map((e: any) => e.id)).toEqual([approved.id])
    const rest = await t.request('GET', `/api/events?after=${encodeURIComponent(page.body.next_cursor)}`, { key: c.key })
    expect(rest.body.data).toEqual([])
    expect(rest.body.next_cursor).toBe(page.body.next_cursor)
    const limited = await t.request('GET', '/api/events?limit=1', { key: c.key })
    expect(limited.body.data).toHaveLength(1)

    const other = await t.newCompany()
    expect((await t.request('GET', `/api/events/${approved.id}`, { key: other.key })).status).toBe(404)
    expect((await t.request('GET', '/api/events/evt_abc', { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/events', { key: other.key })).body.data).toEqual([])
    expect((await t.request('GET', `/api/events?after=${approved.id}`, { key: other.key })).status).toBe(400)
    expect((await t.request('GET', '/api/events?limit=501', { key: c.key })).status).toBe(400)
    expect((await t.request('GET', '/api/events?limit=0', { key: c.key })).status).toBe(400)
  })

  test('a refused change, or one asked of another company, records no event', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const op = await operation(c, typeId, cli.accounts[0])
    const other = await t.newCompany()
    expect((await t.request('POST', `/api/operations/${op.id}/approve`, { key: other.key })).status).toBe(404)
    expect((await t.request('POST', `/api/operations/${op.id}/revert`, { key: c.key })).status).toBe(409)
    expect((await t.request('POST', `/api/operations/${op.id}/approve`, { key: c.key })).status).toBe(200)
    expect((await t.request('POST', `/api/operations/${op.id}/approve`, { key: c.key })).status).toBe(409)
    expect((await t.request('POST', `/api/operations/${op.id}/cancel`, { key: c.key })).status).toBe(200)
    expect((await t.request('POST', `/api/operations/${op.id}/cancel`, { key: c.key })).status).toBe(409)
    const page = await t.request('GET', '/api/events', { key: c.key })
    expect(page.body.data.map((e: any) => [e.type, e.data.object.status])).toEqual([
      ['operation.created', 'pending'],
      ['operation.approved', 'completed'],
      ['operation.cancelled', 'cancelled'],
    ])
    expect((await t.request('GET', '/api/events', { key: other.key })).body.data).toEqual([])
  })

  postgresTest(
    'concurrent writers, some holding their transaction open: a consumer paging all along sees every event exactly once',
    async () => {
      const c = await t.newCompany()
      const caller = await authenticateKey(t.ctx.db, c.key)
      const WRITERS = 12
      const PER_WRITER = 25
      let writing = true
      const written: number[] = []
      const writer = async (w: number) => {
        for (let i = 0; i < PER_WRITER; i++) {
          await write(t.ctx, caller, async (tx) => {
            await announce(tx, { type: 'webhook.test', companyId: c.id, object: { kind: 'probe', id: w * 1000 + i }, data: { probe: w * 1000 + i } })
            // Every third transaction stays open after writing its event, so later ids commit before it.
            if (i % 3 === w % 3) await Bun.sleep(5 + ((w * 7 + i * 13) % 60))
          })
          written.push(w * 1000 + i)
        }
      }
      // Pages large enough to reach the head of the feed on every read: that is where an id cursor loses the
      // events of transactions still open (this test fails with 35 of 300 missing when positions are the ids).
      const seen: number[] = []
      let cursor: string | undefined
      const page = async () => {
        const res = await t.request('GET', `/api/events?limit=100${cursor ? `&after=${encodeURIComponent(cursor)}` : ''}`, { key: c.key })
        expect(res.status).toBe(200)
        for (const e of res.body.data) seen.push(e.data.probe)
        cursor = res.body.next_cursor
        return res.body.data.length
      }
      const consumer = (async () => {
        while (writing) {
          await page()
          await Bun.sleep(3)
        }
      })()
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
      writing = false
      await consumer
      while ((await page()) > 0);
      const ids = seen
      expect(ids.length).toBe(WRITERS * PER_WRITER)
      expect(new Set(ids).size).toBe(WRITERS * PER_WRITER)
      expect([...ids].sort((a, b) => a - b)).toEqual([...written].sort((a, b) => a - b))
    },
    120_000,
  )
})

describe('delivery', () => {
  test('signed per Standard Webhooks, verified as a receiver would; the body is the event of the feed', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    const ep = await endpoint(c, r.url, { event_types: ['operation.*'] })
    const op = await operation(c, typeId, cli.accounts[0])
    const [got] = await r.until((all) => all.length >= 1)
    expect(got.event.type).toBe('operation.created')
    expect(got.id).toBe(got.event.id)
    expect(Math.abs(Number(got.timestamp) - Date.now() / 1000)).toBeLessThan(30)
    expect(got.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/)
    expect(verify(ep.secret, got)).toEqual(got.event)
    expect(() => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, got)).toThrow()
    expect(() => verify(ep.secret, { ...got, body: got.body.replace('"pending"', '"completed"') })).toThrow()
    const fromFeed = await t.request('GET', `/api/events/${got.id}`, { key: c.key })
    expect(got.event).toEqual(fromFeed.body)
    expect(got.event.data.object.id).toBe(op.id)
    const log = await eventually(() => attempts(c, ep.id), (a) => a.length === 1 && a[0].status === 'succeeded')
    expect(log[0]).toMatchObject({ event_id: got.id, attempt: 1, status: 'succeeded', response_status: 200, error: null, next_attempt_at: null })
    expect(log[0].response_ms).toBeGreaterThanOrEqual(0)
  })

  test('event type filters: an endpoint gets only what it subscribed to; a test ping only goes to its endpoint', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const approvals = receiver()
    const everything = receiver()
    const a = await endpoint(c, approvals.url, { event_types: ['operation.approved'] })
    await endpoint(c, everything.url)
    const op = await operation(c, typeId, cli.accounts[0])
    await t.request('POST', `/api/operations/${op.id}/approve`, { key: c.key })
    const ping = await t.request('POST', `/api/webhook-endpoints/${a.id}/test`, { key: c.key })
    expect(ping.status).toBe(202)
    await approvals.until((all) => all.length >= 2)
    await everything.until((all) => all.length >= 2)
    await Bun.sleep(300)
    expect(approvals.received.map((x) => x.event.type).sort()).toEqual(['operation.approved', 'webhook.test'])
    expect(everything.received.map((x) => x.event.type)).toEqual(['operation.created', 'operation.approved'])
    const test = approvals.received.find((x) => x.event.type === 'webhook.test')!
    expect(test.event.data.object).toMatchObject({ id: a.id, url: approvals.url })
    expect(verify(a.secret, test)).toBeTruthy()
  })

  test('a receiver answering 500 then 200 gets the same event again on the schedule', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    let calls = 0
    r.respond = () => new Response('no', { status: ++calls === 1 ? 500 : 200 })
    const ep = await endpoint(c, r.url)
    await operation(c, typeId, cli.accounts[0])
    const [first, second] = await r.until((all) => all.length >= 2)
    expect(second.id).toBe(first.id)
    expect(second.body).toBe(first.body)
    expect(second.at - first.at).toBeGreaterThanOrEqual(900)
    expect(verify(ep.secret, second)).toBeTruthy()
    const log = await eventually(() => attempts(c, ep.id), (a) => a.length === 2 && a[1].status === 'succeeded')
    expect(log[0]).toMatchObject({ attempt: 1, status: 'failed', response_status: 500, error: 'HTTP 500' })
    expect(Date.parse(log[0].next_attempt_at) - Date.parse(log[0].created_at)).toBeGreaterThanOrEqual(900)
    expect(log[1]).toMatchObject({ attempt: 2, status: 'succeeded', response_status: 200 })
    const endpointNow = await t.request('GET', `/api/webhook-endpoints/${ep.id}`, { key: c.key })
    expect(endpointNow.body.enabled).toBe(true)
  })

  test('a receiver that is down, then up, gets the event; after the schedule runs out the delivery fails for good', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const port = freePort()
    const ep = await endpoint(c, `http://127.0.0.1:${port}/hook`)
    const dead = await endpoint(c, `http://127.0.0.1:${freePort()}/never`)
    await operation(c, typeId, cli.accounts[0])
    await eventually(() => attempts(c, ep.id), (a) => a.length >= 1 && a[0].status === 'failed')
    const r = receiver(port)
    const [got] = await r.until((all) => all.length >= 1)
    expect(got.event.type).toBe('operation.created')
    const log = await eventually(() => attempts(c, ep.id), (a) => a.at(-1)?.status === 'succeeded')
    expect(log[0].error).toMatch(/^connection failed/)
    // 1 + 3 retries of WEBHOOK_RETRY_SCHEDULE=1,1,1, then nothing more is scheduled.
    const deadLog = await eventually(() => attempts(c, dead.id), (a) => a.length === 4 && a[3].status === 'failed', 20_000)
    expect(deadLog.map((a) => a.attempt)).toEqual([1, 2, 3, 4])
    expect(deadLog[3].next_attempt_at).toBeNull()
    expect(deadLog[2].next_attempt_at).not.toBeNull()
    await Bun.sleep(1500)
    expect(await attempts(c, dead.id)).toHaveLength(4)
  }, 40_000)

  test('a slow receiver times out and is tried again', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    let calls = 0
    r.respond = async () => {
      if (++calls === 1) await Bun.sleep(2500)
      return new Response('ok')
    }
    const ep = await endpoint(c, r.url)
    await operation(c, typeId, cli.accounts[0])
    await r.until((all) => all.length >= 2)
    const log = await eventually(() => attempts(c, ep.id), (a) => a.length === 2 && a[1].status === 'succeeded')
    expect(log[0]).toMatchObject({ status: 'failed', response_status: null, error: 'timeout after 1 s' })
    expect(log[0].response_ms).toBeGreaterThanOrEqual(950)
  })

  test('410 disables the endpoint at once, with a webhook_endpoint.disabled event to the others', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const gone = receiver()
    gone.respond = () => new Response('gone', { status: 410 })
    const watcher = receiver()
    const ep = await endpoint(c, gone.url, { event_types: ['operation.created'] })
    await endpoint(c, watcher.url, { event_types: ['webhook_endpoint.disabled'] })
    await operation(c, typeId, cli.accounts[0])
    const [note] = await watcher.until((all) => all.length >= 1)
    expect(note.event.type).toBe('webhook_endpoint.disabled')
    expect(note.event.data.object).toMatchObject({ id: ep.id, enabled: false })
    const after = await t.request('GET', `/api/webhook-endpoints/${ep.id}`, { key: c.key })
    expect(after.body.enabled).toBe(false)
    expect(after.body.disabled_reason).toContain('410')
    await operation(c, typeId, cli.accounts[0])
    await Bun.sleep(500)
    expect(gone.received).toHaveLength(1)
    const log = await attempts(c, ep.id)
    expect(log).toHaveLength(1)
    expect(log[0]).toMatchObject({ status: 'failed', response_status: 410, next_attempt_at: null })
    const feed = await t.request('GET', '/api/events?type=webhook_endpoint.disabled', { key: c.key })
    expect(feed.body.data).toHaveLength(1)
  })

  test('an endpoint failing for WEBHOOK_DISABLE_AFTER_HOURS is disabled', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    r.respond = () => new Response('down', { status: 503 })
    const ep = await endpoint(c, r.url)
    // Its failures began long ago: the next failed attempt is past the 120 h limit.
    await t.ctx.db.execute(sql`update webhook_endpoints set failing_since = now() - interval '121 hours' where id = ${ep.id}`)
    await operation(c, typeId, cli.accounts[0])
    const after = await eventually(() => t.request('GET', `/api/webhook-endpoints/${ep.id}`, { key: c.key }), (x) => x.body.enabled === false)
    expect(after.body.disabled_reason).toContain('120 hours')
    const enabled = await t.request('PATCH', `/api/webhook-endpoints/${ep.id}`, { key: c.key, body: { enabled: true } })
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null })
  })

  test('Retry-After on 429 is waited out; redirects are not followed', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    let calls = 0
    r.respond = () => (++calls === 1 ? new Response('slow down', { status: 429, headers: { 'retry-after': '2' } }) : new Response('ok'))
    const ep = await endpoint(c, r.url, { event_types: ['operation.created'] })
    const target = receiver()
    const redirect = receiver()
    redirect.respond = () => new Response(null, { status: 302, headers: { location: target.url } })
    const moved = await endpoint(c, redirect.url, { event_types: ['operation.created'] })
    await operation(c, typeId, cli.accounts[0])
    const [first, second] = await r.until((all) => all.length >= 2)
    expect(second.at - first.at).toBeGreaterThanOrEqual(1900)
    const log = await eventually(() => attempts(c, moved.id), (a) => a.length >= 1 && a[0].status === 'failed')
    expect(log[0]).toMatchObject({ response_status: 302, error: 'redirect not followed' })
    expect(target.received).toHaveLength(0)
    expect((await attempts(c, ep.id))[0]).toMatchObject({ response_status: 429 })
  })

  test('rotation: during the overlap both secrets verify the same delivery', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    const ep = await endpoint(c, r.url)
    const rotated = await t.request('POST', `/api/webhook-endpoints/${ep.id}/rotate-secret`, { key: c.key })
    expect(rotated.status).toBe(200)
    expect(rotated.body.secret).not.toBe(ep.secret)
    await operation(c, typeId, cli.accounts[0])
    const [got] = await r.until((all) => all.length >= 1)
    expect(got.signature.split(' ')).toHaveLength(2)
    expect(verify(rotated.body.secret, got)).toEqual(got.event)
    expect(verify(ep.secret, got)).toEqual(got.event)
    // Once the overlap is over, only the new secret signs.
    await t.ctx.db.execute(sql`update webhook_endpoints set previous_secret_expires_at = now() - interval '1 second' where id = ${ep.id}`)
    await operation(c, typeId, cli.accounts[0])
    const [, later] = await r.until((all) => all.length >= 2)
    expect(later.signature.split(' ')).toHaveLength(1)
    expect(verify(rotated.body.secret, later)).toBeTruthy()
    expect(() => verify(ep.secret, later)).toThrow()
  })

  test('resend delivers an event again; an unknown event or endpoint is 404', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    const ep = await endpoint(c, r.url)
    await operation(c, typeId, cli.accounts[0])
    const [got] = await r.until((all) => all.length >= 1)
    const again = await t.request('POST', `/api/events/${got.id}/resend`, { key: c.key, body: { endpoint_id: ep.id } })
    expect(again.status).toBe(202)
    expect(again.body).toEqual({ event_id: got.id, endpoint_ids: [ep.id] })
    const [, second] = await r.until((all) => all.length >= 2)
    expect(second.id).toBe(got.id)
    expect(verify(ep.secret, second)).toEqual(got.event)
    const all = await t.request('POST', `/api/events/${got.id}/resend`, { key: c.key })
    expect(all.status).toBe(202)
    await r.until((x) => x.length >= 3)
    expect((await t.request('POST', '/api/events/evt_999999999/resend', { key: c.key })).status).toBe(404)
    expect((await t.request('POST', `/api/events/${got.id}/resend`, { key: c.key, body: { endpoint_id: 999999 } })).status).toBe(404)
    const other = await t.newCompany()
    expect((await t.request('POST', `/api/events/${got.id}/resend`, { key: other.key })).status).toBe(404)
  })

  postgresTest(
    'two workers on their own pools, woken at once over a backlog, never have more than the per-endpoint bound in flight together',
    async () => {
      const config = { ...t.ctx.config.webhooks, perEndpoint: 2 }
      const [p, q] = await Promise.all([buildTestApp({ webhooks: config }), buildTestApp({ webhooks: config })])
      const c = await t.newCompany()
      const r = receiver()
      let inFlight = 0
      let most = 0
      r.respond = async () => {
        most = Math.max(most, ++inFlight)
        await Bun.sleep(40)
        inFlight--
        return new Response('ok')
      }
      const ep = await endpoint(c, r.url)
      // This file's own worker would take the backlog alone: it sits out.
      await deliveryWorker(t.ctx).stop()
      try {
        await t.ctx.db.execute(sql`with ev as (
            insert into events (company_id, type, object_kind, object_id, data)
            select ${c.id}, 'webhook.test', 'bench', g, '{"object":null}'::jsonb from generate_series(1, 30) g returning id, object_id
          )
          insert into webhook_deliveries (company_id, endpoint_id, event_id, object_key)
          select ${c.id}, ${ep.id}, id, 'bench:' || object_id from ev`)
        const workers = [new DeliveryWorker(p.ctx), new DeliveryWorker(q.ctx)]
        for (const w of workers) w.start()
        await r.until((all) => all.length >= 30, 30_000)
        await Promise.all(workers.map((w) => w.stop()))
        expect(new Set(r.received.map((x) => x.id)).size).toBe(30)
        expect(most).toBeLessThanOrEqual(2)
      } finally {
        deliveryWorker(t.ctx).start()
        // The suite shares one Postgres with max_connections 100: these two pools go now, not at the end of the run.
        await Promise.all([p, q].map((x) => x.ctx.database.close()))
      }
    },
    60_000,
  )

  test('one object\'s events reach an endpoint in commit order, even across a retry', async () => {
    const { c, typeId, cli } = await ledgerSetup(t)
    const r = receiver()
    let calls = 0
    // The first event is refused once: the later events of the same operation wait for it.
    r.respond = () => new Response('', { status: ++calls === 1 ? 500 : 200 })
    await endpoint(c, r.url)
    const op = await operation(c, typeId, cli.accounts[0])
    await t.request('POST', `/api/operations/${op.id}/approve`, { key: c.key })
    await t.request('POST', `/api/operations/${op.id}/revert`, { key: c.key })
    await t.request('POST', `/api/operations/${op.id}/cancel`, { key: c.key })
    await r.until((all) => new Set(all.map((x) => x.id)).size >= 4)
    const firstSeen = [...new Map(r.received.map((x) => [x.id, x.event.type])).values()]
    expect(firstSeen).toEqual(['operation.created', 'operation.approved', 'operation.reverted', 'operation.cancelled'])
    const sent = r.received.map((x) => x.event.type)
    expect(sent).toEqual(['operation.created', 'operation.created', 'operation.approved', 'operation.reverted', 'operation.cancelled'])
  })
})

describe('what is recorded', () => {
  const feed = async (c: Company, type: string) => (await t.request('GET', `/api/events?type=${type}&limit=500`, { key: c.key })).body.data as any[]
  const withoutLink = ({ signed_url, ...rest }: Record<string, unknown>) => rest

  test('clients, accounts, cost centers, tools and attachments: each event carries the resource as its GET returned it', async () => {
    const c = await t.newCompany()
    const created = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    expect(created.status).toBe(201)
    const clientId = created.body.id
    const [clientCreated] = await feed(c, 'client.created')
    expect(clientCreated.data.object).toEqual(created.body)
    const [firstAccount] = await feed(c, 'account.created')
    expect(firstAccount.data.object).toEqual(created.body.accounts[0])

    await t.request('PATCH', `/api/clients/${clientId}`, { key: c.key, body: { description: 'principal' } })
    const added = await t.request('POST', `/api/clients/${clientId}/accounts`, { key: c.key, body: { currency_name: 'USD' } })
    const afterAccount = await t.request('GET', `/api/clients/${clientId}`, { key: c.key })
    const [, secondAccount] = await feed(c, 'account.created')
    expect(secondAccount.data.object).toEqual(added.body)
    const [updated] = await feed(c, 'client.updated')
    expect(updated.data.object.description).toBe('principal')
    expect(afterAccount.body.accounts).toContainEqual(expect.objectContaining({ id: added.body.id }))

    const cc = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Sueldos', client_id: clientId, default_currency: 'ARS' } })
    await t.request('POST', `/api/cost-centers/${cc.body.id}/budgets`, { key: c.key, body: { currency: 'ARS', year: 2026, period: 1, amount: 1000, kind: 'expense' } })
    const listed = (await t.request('GET', '/api/cost-centers', { key: c.key })).body.data.find((x: any) => x.id === cc.body.id)
    expect((await feed(c, 'cost_center.created'))[0].data.object).toEqual(cc.body)
    expect((await feed(c, 'cost_center.updated'))[0].data.object).toEqual(listed)

    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Subida', kind: 'up_down' } })
    const tool = await t.request('POST', '/api/messaging/tools', {
      key: c.key,
      body: { name: 'Depósito', fixed_config: { toolKind: 'up_down', operationTypeId: type.body.id, destinationAccountId: created.body.accounts[0].id, amount: 5 } },
    })
    expect(tool.status).toBe(201)
    const patched = await t.request('PATCH', `/api/messaging/tools/${tool.body.id}`, { key: c.key, body: { description: 'por bot' } })
    const requested_by = { contact_id: 9, phone: '+5491100000000' }
    const ran = await t.request('POST', `/api/messaging/tools/${tool.body.id}/run`, { key: c.key, body: { parameters: {}, requested_by, channel: 'twin' } })
    expect(ran.status).toBe(201)
    await t.request('POST', `/api/operations/${ran.body.operation.id}/approve`, { key: c.key })
    await t.request('DELETE', `/api/messaging/tools/${tool.body.id}`, { key: c.key })
    const toolEvents = await feed(c, 'messaging_tool.created,messaging_tool.updated,messaging_tool.deleted')
    expect(toolEvents.map((e) => e.type)).toEqual(['messaging_tool.created', 'messaging_tool.updated', 'messaging_tool.deleted'])
    expect(toolEvents[0].data.object).toEqual(tool.body)
    expect(toolEvents[1].data.object).toEqual(patched.body)
    expect(toolEvents[2].data.object.deleted_at).not.toBeNull()
    const runEvents = await feed(c, 'operation.created,operation.approved')
    expect(runEvents).toHaveLength(2)
    for (const e of runEvents) {
      expect(e.data.channel).toBe('twin')
      expect(e.data.requested_by).toEqual(ran.body.draft.requested_by)
    }
    expect(runEvents[0].data.object).toEqual({ ...ran.body.operation })

    const f = new FormData()
    f.append('file', new File(['hola'], 'recibo.txt', { type: 'text/plain' }))
    const up = await t.request('POST', `/api/operations/${ran.body.operation.id}/attachments`, { key: c.key, raw: f })
    expect(up.status).toBe(201)
    const opWithFile = await t.request('GET', `/api/operations/${ran.body.operation.id}`, { key: c.key })
    await t.request('DELETE', `/api/operations/${ran.body.operation.id}/attachments/${up.body.id}`, { key: c.key })
    const files = await feed(c, 'attachment.created,attachment.deleted')
    expect(files.map((e) => e.type)).toEqual(['attachment.created', 'attachment.deleted'])
    for (const e of files) {
      expect(e.data.object).toEqual(withoutLink(up.body))
      expect(e.data.operation_id).toBe(ran.body.operation.id)
    }
    // An operation's own events list its attachments without links too.
    await t.request('POST', `/api/operations/${ran.body.operation.id}/revert`, { key: c.key })
    const reverted = (await feed(c, 'operation.reverted'))[0]
    expect(reverted.data.object.attachments).toEqual([])
    expect(opWithFile.body.attachments.map(withoutLink)).toEqual([withoutLink(up.body)])

    const spare = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Juan', type: 1 } })
    const before = await t.request('GET', `/api/clients/${spare.body.id}`, { key: c.key })
    expect((await t.request('DELETE', `/api/clients/${spare.body.id}`, { key: c.key })).status).toBe(200)
    const deleted = await feed(c, 'client.deleted')
    expect(deleted).toHaveLength(1)
    expect(deleted[0].data.object).toEqual(before.body)
  })

  test('mesa lines and waiting-room tickets: each step is an event with the record as answered', async () => {
    const c = await t.newCompany({ mesas: true, ventanilla: true })
    const caja = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] } })
    const mesa = await t.request('POST', '/api/mesas', {
      key: c.key,
      body: { name: 'Mesa USD', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: caja.body.accounts.map((a: any) => a.id) },
    })
    expect(mesa.status).toBe(201)
    const line = await t.request('POST', `/api/mesas/${mesa.body.id}/lines`, { key: c.key, body: { side: 'buy', local_amount: 1000, quote_amount: 1 } })
    expect(line.status).toBe(201)
    const listed = (await t.request('GET', `/api/mesas/${mesa.body.id}/lines`, { key: c.key })).body.data
    expect((await t.request('DELETE', `/api/mesas/${mesa.body.id}/lines/${line.body.id}`, { key: c.key })).status).toBe(200)
    const lines = await feed(c, 'mesa_line.created,mesa_line.deleted')
    expect(lines.map((e) => e.type)).toEqual(['mesa_line.created', 'mesa_line.deleted'])
    expect(lines[0].data.object).toEqual(line.body)
    expect(lines[0].data.object).toEqual(listed[0])
    expect(lines[1].data.object).toEqual(line.body)

    const service = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })
    const first = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: service.body.id, customer_name: 'Juan Pérez' } })
    const second = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: service.body.id } })
    const called = await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 2' } })
    const finished = await t.request('POST', `/api/ventanilla/tickets/${first.body.id}/finish`, { key: c.key })
    const gone = await t.request('POST', `/api/ventanilla/tickets/${second.body.id}/no-show`, { key: c.key })
    expect([first.status, second.status, called.status, finished.status, gone.status]).toEqual([201, 201, 201, 200, 200])
    const tickets = await feed(c, 'ventanilla_ticket.created,ventanilla_ticket.called,ventanilla_ticket.finished,ventanilla_ticket.no_show')
    expect(tickets.map((e) => [e.type, e.data.object])).toEqual([
      ['ventanilla_ticket.created', first.body],
      ['ventanilla_ticket.created', second.body],
      ['ventanilla_ticket.called', called.body],
      ['ventanilla_ticket.finished', finished.body],
      ['ventanilla_ticket.no_show', gone.body],
    ])

    // A ticket a dispenser issues without a key, and a transfer, are steps like the others.
    const other = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Caja', prefix: 'B' } })
    const dispenser = await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: { name: 'Tablet' } })
    const dispensed = await t.request('POST', `/api/public/ventanilla/${dispenser.body.token}/tickets`, { body: { service_id: service.body.id } })
    expect(dispensed.status).toBe(201)
    const [issued] = (await feed(c, 'ventanilla_ticket.created')).slice(2)
    expect([issued.data.object.number, issued.data.object.service_id]).toEqual([dispensed.body.number, service.body.id])
    const moved = await t.request('POST', `/api/ventanilla/tickets/${issued.data.object.id}/transfer`, { key: c.key, body: { service_id: other.body.id } })
    expect(moved.status).toBe(200)
    const transferred = await feed(c, 'ventanilla_ticket.transferred')
    expect(transferred.map((e) => [e.type, e.data.object])).toEqual([['ventanilla_ticket.transferred', moved.body]])
    expect(moved.body.service_id).toBe(other.body.id)
  })

  test('a rolled-back change records no event', async () => {
    const c = await t.newCompany()
    const bad = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'X', type: 1, tag_ids: [999999] } })
    expect(bad.status).toBe(422)
    expect(await feed(c, 'client.created')).toEqual([])
    const rows = await t.ctx.database.rows(sql`select id from events where company_id = ${c.id}`)
    expect(rows).toEqual([])
  })
})
