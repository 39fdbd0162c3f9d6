import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Webhook } from 'standardwebhooks'
import { buildTestApp, postgresTest, testApp, type Company, type TestApp } from '../helpers'
import { freePort } from '../server'
import { startReceiver, verify, type Receiver } from '../receiver'
import { ledgerSetup } from './operations.fixtures'
import { deliveryWorker } from '../../server/modules/webhooks'
import { write } from '../../server/lib/write'
import { announce } from '../../server/lib/events'
import { authenticateKey } from '../../server/access/caller'
import { DEFAULT_RETRY_SCHEDULE, loadConfig } from '../../server/config'

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
