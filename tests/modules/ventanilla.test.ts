import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'
import { startServer } from '../server'
import { ventanillaHub } from '../../server/modules/ventanilla/hub'
import { openStream } from '../sse'
import { maskName } from '../../server/modules/ventanilla/service'

const tick = (ms = 20) => new Promise((r) => setTimeout(r, ms))

let t: TestApp

beforeAll(async () => {
  t = await testApp()
  ventanillaHub(t.ctx).configure({ heartbeatMs: 100, pollMs: 100, gapMs: 20 })
})

afterAll(() => {
  ventanillaHub(t.ctx).configure({ heartbeatMs: 15_000, pollMs: 1_000, gapMs: 50 })
})

const SETTINGS = {
  logoUrl: 'https://cdn.example/logo.png',
  showLogo: true,
  timezone: 'America/Argentina/Buenos_Aires',
  tickerText: 'Bienvenidos',
  announceSound: true,
  announceTts: false,
  privacyMode: 'first_last_initial',
}

async function setup(privacyMode = 'first_last_initial') {
  const c = await t.newCompany({ ventanilla: true })
  const settings = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, privacyMode } })
  expect(settings.status).toBe(200)
  const svc = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })
  expect(svc.status).toBe(201)
  const tok = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })
  expect(tok.status).toBe(201)
  return { c, serviceId: svc.body.id as number, token: tok.body.token as string, tokenId: tok.body.id as number }
}

const ticket = (c: Company, serviceId: number, customer_name?: string) =>
  t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: serviceId, ...(customer_name !== undefined && { customer_name }) } })
const callNext = (c: Company, desk = 'Caja 1', service_id?: number) =>
  t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk, ...(service_id && { service_id }) } })
const publicSnapshot = (token: string) => t.request('GET', `/api/public/ventanilla/${token}`)
const stream = (token: string, headers?: Record<string, string>) =>
  openStream((r) => t.app.handle(r), `http://fos.test/api/public/ventanilla/${token}/events`, headers)

/** Every key anywhere in a JSON value. */
function keysOf(value: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((v) => keysOf(v, out))
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      out.add(k)
      keysOf(v, out)
    }
  return out
}

describe('ventanilla staff routes', () => {
  test('module off: staff routes 403 VENTANILLA_DISABLED, public routes 404', async () => {
    const off = await t.newCompany()
    for (const [method, path, body] of [
      ['GET', '/api/ventanilla/settings'],
      ['PUT', '/api/ventanilla/rates', { rates: [] }],
      ['GET', '/api/ventanilla/services'],
      ['POST', '/api/ventanilla/tokens', { name: 'x' }],
      ['POST', '/api/ventanilla/tickets', { service_id: 1 }],
      ['POST', '/api/ventanilla/calls', { desk: 'Caja 1' }],
      ['POST', '/api/ventanilla/tickets/1/finish'],
    ] as const) {
      const r = await t.request(method, path, { key: off.key, body })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('VENTANILLA_DISABLED')
    }
    const { c, token } = await setup()
    expect((await publicSnapshot(token)).status).toBe(200)
    const patched = await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { modules: { ventanilla: false } } })
    expect(patched.status).toBe(200)
    const gone = await publicSnapshot(token)
    expect(gone.status).toBe(404)
    expect(gone.body.code).toBe('NOT_FOUND')
    expect((await t.request('GET', `/api/public/ventanilla/${token}/events`)).status).toBe(404)
    expect((await t.request('GET', '/api/ventanilla/services', { key: c.key })).body.code).toBe('VENTANILLA_DISABLED')
  })

  test('authentication and permissions', async () => {
    const { c } = await setup()
    expect((await t.request('GET', '/api/ventanilla/settings')).status).toBe(401)
    expect((await t.request('POST', '/api/ventanilla/calls', { body: { desk: 'x' } })).status).toBe(401)
    const nobody = await c.employee(['clients.view'])
    const caller = await c.employee(['ventanilla.call'])
    const manager = await c.employee(['ventanilla.manage'])
    for (const key of [nobody.key, caller.key]) {
      const r = await t.request('GET', '/api/ventanilla/settings', { key })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('FORBIDDEN')
      expect((await t.request('POST', '/api/ventanilla/tokens', { key, body: { name: 'x' } })).status).toBe(403)
    }
    for (const key of [nobody.key, manager.key]) {
      const r = await t.request('POST', '/api/ventanilla/calls', { key, body: { desk: 'Caja 1' } })
      expect(r.status).toBe(403)
      expect(r.body.code).toBe('FORBIDDEN')
    }
    expect((await t.request('GET', '/api/ventanilla/settings', { key: manager.key })).status).toBe(200)
    const svc = (await t.request('GET', '/api/ventanilla/services', { key: manager.key })).body.data[0]
    const tk = await t.request('POST', '/api/ventanilla/tickets', { key: caller.key, body: { service_id: svc.id } })
    expect(tk.status).toBe(201)
    const called = await t.request('POST', '/api/ventanilla/calls', { key: caller.key, body: { desk: 'Caja 3' } })
    expect(called.status).toBe(201)
    expect(called.body.id).toBe(tk.body.id)
  })

  test('settings: defaults, replace, validation', async () => {
    const c = await t.newCompany({ ventanilla: true, timezone: 'America/Montevideo' })
    const first = await t.request('GET', '/api/ventanilla/settings', { key: c.key })
    expect(first.status).toBe(200)
    expect(first.body).toEqual({
      displayName: null,
      logoUrl: '',
      showLogo: false,
      timezone: 'America/Montevideo',
      tickerText: '',
      announceSound: true,
      announceTts: true,
      privacyMode: 'first_last_initial',
      priorityMode: 'first',
      dispenserAsksName: 'off',
    })
    const put = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, displayName: 'Casa Centro', privacyMode: 'ticket' } })
    expect(put.status).toBe(200)
    expect(put.body).toEqual({ ...SETTINGS, displayName: 'Casa Centro', privacyMode: 'ticket', priorityMode: 'first', dispenserAsksName: 'off' })
    expect((await t.request('GET', '/api/ventanilla/settings', { key: c.key })).body.displayName).toBe('Casa Centro')
    const off = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, displayName: 'Casa Centro', priorityMode: 'off' } })
    expect(off.body.priorityMode).toBe('off')
    expect((await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, priorityMode: 'later' } })).status).toBe(400)
    const badTz = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, timezone: 'Mars/Olympus' } })
    expect(badTz.status).toBe(400)
    expect(badTz.body.code).toBe('VALIDATION_ERROR')
    const badMode = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, privacyMode: 'everything' } })
    expect(badMode.status).toBe(400)
    const missing = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { showLogo: true } })
    expect(missing.status).toBe(400)
    expect(missing.body.code).toBe('VALIDATION_ERROR')
  })

  test('rates: exact mid, replace as a set, validation', async () => {
    const { c, token } = await setup()
    const put = await t.request('PUT', '/api/ventanilla/rates', {
      key: c.key,
      body: { rates: [{ currency: 'usd', buy: '1000.10', sell: 1050.2 }, { currency: 'EUR', buy: 0.1, sell: 0.2 }] },
    })
    expect(put.status).toBe(200)
    expect(put.body).toEqual({
      rates: [
        { currency: 'USD', buy: 1000.1, sell: 1050.2, mid: 1025.15 },
        { currency: 'EUR', buy: 0.1, sell: 0.2, mid: 0.15 },
      ],
    })
    const odd = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'BRL', buy: '0.000001', sell: '0.000002' }] } })
    expect(odd.body.rates).toEqual([{ currency: 'BRL', buy: 0.000001, sell: 0.000002, mid: 0.0000015 }])
    expect((await publicSnapshot(token)).body.rates).toEqual(odd.body.rates)
    const dup = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: 1, sell: 2 }, { currency: 'usd', buy: 1, sell: 2 }] } })
    expect(dup.status).toBe(400)
    expect(dup.body.code).toBe('VALIDATION_ERROR')
    const neg = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: -1, sell: 2 }] } })
    expect(neg.status).toBe(400)
    const junk = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: 'abc', sell: 2 }] } })
    expect(junk.status).toBe(400)
    const empty = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [] } })
    expect(empty.body).toEqual({ rates: [] })
  })

  test('services: create, list, update, delete, conflicts and tenancy', async () => {
    const { c, serviceId } = await setup()
    const other = await t.newCompany({ ventanilla: true })
    const b = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Pagos', prefix: 'b' } })
    expect(b.status).toBe(201)
    expect(b.body).toMatchObject({ name: 'Pagos', prefix: 'B' })
    const taken = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Otro', prefix: 'A' } })
    expect(taken.status).toBe(409)
    expect(taken.body.code).toBe('PREFIX_TAKEN')
    expect((await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Otro', prefix: 'A-1' } })).status).toBe(400)
    expect((await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { prefix: 'C' } })).status).toBe(400)
    const list = await t.request('GET', '/api/ventanilla/services', { key: c.key })
    expect(list.body.data.map((s: any) => s.prefix)).toEqual(['A', 'B'])
    const patched = await t.request('PATCH', `/api/ventanilla/services/${b.body.id}`, { key: c.key, body: { name: 'Pagos y cobros' } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: b.body.id, name: 'Pagos y cobros', prefix: 'B' })
    const clash = await t.request('PATCH', `/api/ventanilla/services/${b.body.id}`, { key: c.key, body: { prefix: 'A' } })
    expect(clash.status).toBe(409)
    expect((await t.request('PATCH', `/api/ventanilla/services/${b.body.id}`, { key: other.key, body: { name: 'x' } })).status).toBe(404)
    expect((await t.request('DELETE', `/api/ventanilla/services/${serviceId}`, { key: other.key })).status).toBe(404)
    expect((await t.request('PATCH', '/api/ventanilla/services/abc', { key: c.key, body: { name: 'x' } })).body.code).toBe('INVALID_ID')
    const del = await t.request('DELETE', `/api/ventanilla/services/${b.body.id}`, { key: c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    expect((await t.request('DELETE', `/api/ventanilla/services/${b.body.id}`, { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/ventanilla/services', { key: c.key })).body.data).toHaveLength(1)
    const reuse = await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Nuevo', prefix: 'B' } })
    expect(reuse.status).toBe(201)
    const gone = await ticket(c, b.body.id)
    expect(gone.status).toBe(422)
    expect(gone.body.code).toBe('UNKNOWN_SERVICE')
  })

  test('tokens: issued once, listed without values, revoked', async () => {
    const { c, token, tokenId } = await setup()
    const other = await t.newCompany({ ventanilla: true })
    const issued = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'Hall' } })
    expect(issued.status).toBe(201)
    expect(Object.keys(issued.body).sort()).toEqual(['id', 'kiosk_url', 'name', 'token'])
    expect(issued.body.kiosk_url).toBe(`http://fos.test/kiosk/${issued.body.token}`)
    expect(issued.body.token).not.toBe(token)
    // The secret part alone is 24 random bytes (192 bits).
    expect(issued.body.token).toMatch(/^vtk_[0-9a-f]{12}_[A-Za-z0-9_-]{32}$/)
    const list = await t.request('GET', '/api/ventanilla/tokens', { key: c.key })
    expect(list.status).toBe(200)
    expect(list.body.data.map((x: any) => x.name)).toEqual(['TV', 'Hall'])
    const listed = JSON.stringify(list.body)
    expect(listed).not.toContain(token)
    expect(listed).not.toContain(issued.body.token)
    expect((await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: {} })).status).toBe(400)
    expect((await t.request('DELETE', `/api/ventanilla/tokens/${tokenId}`, { key: other.key })).status).toBe(404)
    expect((await publicSnapshot(token)).status).toBe(200)
    const del = await t.request('DELETE', `/api/ventanilla/tokens/${tokenId}`, { key: c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    expect((await publicSnapshot(token)).status).toBe(404)
    expect((await t.request('DELETE', `/api/ventanilla/tokens/${tokenId}`, { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/ventanilla/tokens', { key: c.key })).body.data.map((x: any) => x.id)).toEqual([issued.body.id])
    expect((await publicSnapshot(issued.body.token)).status).toBe(200)
    expect((await publicSnapshot('nope')).status).toBe(404)
    expect((await publicSnapshot(issued.body.token.slice(0, -1) + (issued.body.token.endsWith('A') ? 'B' : 'A'))).status).toBe(404)
  })

  test('tickets: numbering per service per local day, validation, idempotency', async () => {
    const { c, serviceId } = await setup()
    const other = await t.newCompany({ ventanilla: true })
    const b = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Pagos', prefix: 'B' } })).body.id
    try {
      const first = await ticket(c, serviceId, '  Ana Gómez ')
      expect(first.status).toBe(201)
      expect(first.body).toMatchObject({ number: 'A-001', service_id: serviceId, customer_name: 'Ana Gómez', status: 'waiting' })
      expect(first.body.created_at).toMatch(/Z$/)
      expect((await ticket(c, serviceId)).body.number).toBe('A-002')
      expect((await ticket(c, b)).body.number).toBe('B-001')
      expect((await ticket(c, serviceId)).body).toMatchObject({ number: 'A-003', customer_name: null })
      t.travel(24 * 60 * 60 * 1000)
      expect((await ticket(c, serviceId)).body.number).toBe('A-001')
      expect((await ticket(c, serviceId)).body.number).toBe('A-002')
    } finally {
      t.travel(0)
    }
    const foreign = await t.request('POST', '/api/ventanilla/services', { key: other.key, body: { name: 'X', prefix: 'X' } })
    const cross = await ticket(c, foreign.body.id)
    expect(cross.status).toBe(422)
    expect(cross.body.code).toBe('UNKNOWN_SERVICE')
    expect((await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: {} })).status).toBe(400)
    expect((await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: 'a' } })).body.code).toBe('VALIDATION_ERROR')
    const headers = { 'idempotency-key': `tk-${c.id}` }
    const once = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, headers, body: { service_id: serviceId } })
    const again = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, headers, body: { service_id: serviceId } })
    expect(again.status).toBe(201)
    expect(again.body.id).toBe(once.body.id)
    const reused = await t.request('POST', '/api/ventanilla/tickets', { key: c.key, headers, body: { service_id: b } })
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
  })

  test('numbering follows the screen time zone', async () => {
    const { c, serviceId } = await setup()
    // 02:30 UTC is still the previous day in Buenos Aires (UTC−3) and already the same day in Tokyo.
    const now = new Date()
    const target = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 2, 2, 30)
    try {
      t.travel(target - Date.now())
      expect((await ticket(c, serviceId)).body.number).toBe('A-001')
      await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, timezone: 'Asia/Tokyo' } })
      expect((await ticket(c, serviceId)).body.number).toBe('A-001')
      await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, timezone: 'America/Argentina/Buenos_Aires' } })
      expect((await ticket(c, serviceId)).body.number).toBe('A-002')
    } finally {
      t.travel(0)
    }
  })

  test('calls: oldest first, service filter, QUEUE_EMPTY, recall, finish, no-show', async () => {
    const { c, serviceId } = await setup()
    const other = await t.newCompany({ ventanilla: true })
    const empty = await callNext(c)
    expect(empty.status).toBe(409)
    expect(empty.body.code).toBe('QUEUE_EMPTY')
    const b = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Pagos', prefix: 'B' } })).body.id
    const a1 = (await ticket(c, serviceId)).body
    const b1 = (await ticket(c, b)).body
    const a2 = (await ticket(c, serviceId)).body
    const onlyB = await callNext(c, 'Caja 2', b)
    expect(onlyB.status).toBe(201)
    expect(onlyB.body).toMatchObject({ id: b1.id, status: 'called', desk: 'Caja 2' })
    expect(onlyB.body.called_at).toMatch(/Z$/)
    expect((await callNext(c, 'Caja 2', b)).body.code).toBe('QUEUE_EMPTY')
    const first = await callNext(c)
    expect(first.body).toMatchObject({ id: a1.id, number: 'A-001', status: 'called', desk: 'Caja 1' })
    const unknownSvc = await callNext(c, 'Caja 1', 999999)
    expect(unknownSvc.status).toBe(422)
    expect(unknownSvc.body.code).toBe('UNKNOWN_SERVICE')
    expect((await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: {} })).status).toBe(400)

    const recall = await t.request('POST', `/api/ventanilla/tickets/${a1.id}/call`, { key: c.key, body: { desk: 'Caja 4' } })
    expect(recall.status).toBe(200)
    expect(recall.body).toMatchObject({ id: a1.id, status: 'called', desk: 'Caja 4' })
    const finish = await t.request('POST', `/api/ventanilla/tickets/${a1.id}/finish`, { key: c.key })
    expect(finish.status).toBe(200)
    expect(finish.body.status).toBe('finished')
    const finishAgain = await t.request('POST', `/api/ventanilla/tickets/${a1.id}/finish`, { key: c.key })
    expect(finishAgain.status).toBe(409)
    expect(finishAgain.body.code).toBe('INVALID_TICKET_STATUS')
    expect((await t.request('POST', `/api/ventanilla/tickets/${a1.id}/call`, { key: c.key, body: { desk: 'Caja 1' } })).status).toBe(409)
    expect((await t.request('POST', `/api/ventanilla/tickets/${a2.id}/finish`, { key: c.key })).status).toBe(409)
    const noShow = await t.request('POST', `/api/ventanilla/tickets/${a2.id}/no-show`, { key: c.key })
    expect(noShow.status).toBe(200)
    expect(noShow.body.status).toBe('no_show')
    expect((await t.request('POST', `/api/ventanilla/tickets/${a2.id}/no-show`, { key: c.key })).status).toBe(409)
    expect((await callNext(c)).body.code).toBe('QUEUE_EMPTY')
    const back = await t.request('POST', `/api/ventanilla/tickets/${a2.id}/call`, { key: c.key, body: { desk: 'Caja 1' } })
    expect(back.body.status).toBe('called')
    for (const action of ['finish', 'no-show']) {
      expect((await t.request('POST', `/api/ventanilla/tickets/${a2.id}/${action}`, { key: other.key })).status).toBe(404)
      expect((await t.request('POST', `/api/ventanilla/tickets/0/${action}`, { key: c.key })).body.code).toBe('INVALID_ID')
    }
    expect((await t.request('POST', `/api/ventanilla/tickets/${a2.id}/call`, { key: other.key, body: { desk: 'x' } })).status).toBe(404)
    expect((await t.request('POST', `/api/ventanilla/tickets/${a2.id}/call`, { key: c.key, body: {} })).status).toBe(400)
  })

  postgresTest('concurrent tickets get consecutive numbers; concurrent calls never take one ticket twice', async () => {
    const { c, serviceId } = await setup()
    const made = await Promise.all(Array.from({ length: 20 }, () => ticket(c, serviceId)))
    expect(made.every((r) => r.status === 201)).toBe(true)
    expect(made.map((r) => r.body.number).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `A-${String(i + 1).padStart(3, '0')}`))
    const calls = await Promise.all(Array.from({ length: 25 }, (_, i) => callNext(c, `Caja ${i}`)))
    const ok = calls.filter((r) => r.status === 201)
    expect(ok).toHaveLength(20)
    expect(new Set(ok.map((r) => r.body.id)).size).toBe(20)
    expect(calls.filter((r) => r.status === 409 && r.body.code === 'QUEUE_EMPTY')).toHaveLength(5)
  })
})

describe('ventanilla public snapshot', () => {
  test('shape, companyName, calls newest first, no amounts', async () => {
    const { c, serviceId, token } = await setup()
    await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: 1000, sell: 1040 }] } })
    const fresh = await publicSnapshot(token)
    expect(fresh.status).toBe(200)
    expect(fresh.headers.get('cache-control')).toBe('no-store')
    expect(Object.keys(fresh.body).sort()).toEqual(
      ['announceSound', 'announceTts', 'companyName', 'currentCall', 'date', 'logoUrl', 'privacyMode', 'rates', 'recentCalls', 'services', 'showLogo', 'tickerText', 'timezone', 'updatedAt'].sort(),
    )
    expect(fresh.body).toMatchObject({
      companyName: c.name,
      rates: [{ currency: 'USD', buy: 1000, sell: 1040, mid: 1020 }],
      services: [{ id: serviceId, name: 'Cambio', prefix: 'A', waiting: 0 }],
      currentCall: null,
      recentCalls: [],
      logoUrl: SETTINGS.logoUrl,
      showLogo: true,
      timezone: SETTINGS.timezone,
      tickerText: 'Bienvenidos',
      announceSound: true,
      announceTts: false,
      privacyMode: 'first_last_initial',
    })
    expect(fresh.body.date).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    expect(fresh.body.updatedAt).toMatch(/Z$/)

    for (let i = 0; i < 9; i++) await ticket(c, serviceId, `Cliente ${i} Apellido${i}`)
    expect((await publicSnapshot(token)).body.services[0].waiting).toBe(9)
    const called: string[] = []
    for (let i = 0; i < 8; i++) called.push((await callNext(c, `Caja ${(i % 3) + 1}`)).body.number)
    const snap = (await publicSnapshot(token)).body
    expect(snap.services[0].waiting).toBe(1)
    expect(snap.currentCall).toMatchObject({ ticket: 'A-008', name: 'Cliente A.', desk: 'Caja 2', service: 'Cambio' })
    expect(Object.keys(snap.currentCall).sort()).toEqual(['calledAt', 'desk', 'name', 'service', 'ticket'])
    expect(snap.recentCalls.map((x: any) => x.ticket)).toEqual(['A-007', 'A-006', 'A-005', 'A-004', 'A-003', 'A-002'])
    expect(new Date(snap.updatedAt).getTime()).toBeGreaterThan(new Date(fresh.body.updatedAt).getTime())
    const keys = keysOf(snap)
    for (const k of keys) expect(k).not.toMatch(/amount|balance|account/i)

    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, displayName: 'Sucursal Centro' } })
    expect((await publicSnapshot(token)).body.companyName).toBe('Sucursal Centro')
  })

  test('first_last_initial reads Spanish names: compound given names, particles, the first surname\'s initial', () => {
    const cases: [string, string | null][] = [
      ['Juan Pérez', 'Juan P.'],
      ['Zoe', 'Zoe'],
      ['  juan   pérez ', 'juan P.'],
      // Three parts could be two given names and a surname or a name and two surnames: one given name is shown.
      ['Juan Carlos Pérezlópez', 'Juan P.'],
      ['Juan Pérez García', 'Juan G.'],
      // Four or more: two given names and the first surname's initial; a particle belongs to the word after it.
      ['María José González Fernández de la Torre', 'María José G.'],
      ['Juan Carlos Pérez López', 'Juan Carlos P.'],
      ['María de los Ángeles Pérez García', 'María de los Ángeles P.'],
      ['Juan de la Torre', 'Juan T.'],
      ['Ana María del Valle Ruiz', 'Ana María V.'],
      ['Édgar Öztürk', 'Édgar Ö.'],
      ['', null],
    ]
    expect(cases.map(([name]) => [name, maskName(name, 'first_last_initial')])).toEqual(cases)
    expect(maskName('María José González', 'ticket')).toBeNull()
    expect(maskName('María José González', 'full_name')).toBe('María José González')
  })

  for (const mode of ['full_name', 'first_last_initial', 'ticket'] as const) {
    test(`privacy mode ${mode}: names masked on the server in the snapshot and the stream`, async () => {
      const { c, serviceId, token } = await setup(mode)
      const s = await stream(token)
      await s.snapshot()
      await ticket(c, serviceId, 'Juan Carlos Pérezlópez')
      await ticket(c, serviceId, 'Zoe')
      await callNext(c)
      await callNext(c)
      const live = await s.snapshot(2000, (x) => x.currentCall?.ticket === 'A-002' && x.recentCalls.length === 1)
      const json = JSON.stringify((await publicSnapshot(token)).body)
      s.abort()
      const expected = { full_name: 'Juan Carlos Pérezlópez', first_last_initial: 'Juan P.', ticket: null }[mode]
      expect(live.recentCalls[0].name).toBe(expected)
      expect(live.currentCall.name).toBe(mode === 'ticket' ? null : 'Zoe')
      for (const text of [json, s.text]) {
        if (mode === 'full_name') expect(text).toContain('Juan Carlos Pérezlópez')
        else {
          expect(text).not.toContain('Carlos')
          expect(text).not.toContain('Pérezlópez')
        }
        if (mode === 'ticket') expect(text).not.toContain('Juan')
      }
    })
  }
})

describe('ventanilla event stream', () => {
  test('snapshot at once, retry hint, ids, headers, delivery after a call, heartbeats', async () => {
    const { c, serviceId, token } = await setup()
    const s = await stream(token)
    expect(s.response.status).toBe(200)
    expect(s.response.headers.get('content-type')).toContain('text/event-stream')
    expect(s.response.headers.get('cache-control')).toBe('no-cache')
    expect(s.response.headers.get('x-accel-buffering')).toBe('no')
    const first = await s.next()
    expect(first.event).toBe('snapshot')
    expect(first.id).toMatch(/^[0-9a-f]{16}$/)
    expect(s.retry).toBe('3000')
    expect(JSON.parse(first.data).currentCall).toBeNull()
    await ticket(c, serviceId, 'Ana Gómez')
    const waiting = await s.snapshot(2000, (x) => x.services[0].waiting === 1)
    expect(waiting.currentCall).toBeNull()
    await callNext(c, 'Caja 2')
    const called = await s.snapshot(2000, (x) => x.currentCall !== null)
    expect(called.currentCall).toMatchObject({ ticket: 'A-001', name: 'Ana G.', desk: 'Caja 2', service: 'Cambio' })
    const last = s.events[s.events.length - 1]
    expect(last.id).not.toBe(first.id)
    expect(await s.readUntil(() => s.comments >= 2, 2000)).toBe(true)
    s.abort()
  })

  test('reconnect with Last-Event-ID gets the current snapshot at once', async () => {
    const { c, serviceId, token } = await setup()
    const a = await stream(token)
    const first = await a.next()
    a.abort()
    await ticket(c, serviceId)
    const b = await stream(token, { 'last-event-id': first.id! })
    const again = await b.snapshot()
    expect(again.services[0].waiting).toBe(1)
    b.abort()
  })

  test('disconnect removes the stream from the hub at once', async () => {
    const hub = ventanillaHub(t.ctx)
    const { c, serviceId, token } = await setup()
    expect(hub.subscribers(c.id)).toBe(0)
    const streams = await Promise.all([stream(token), stream(token), stream(token)])
    await Promise.all(streams.map((s) => s.snapshot()))
    expect(hub.subscribers(c.id)).toBe(3)
    streams[0].abort()
    await tick()
    expect(hub.subscribers(c.id)).toBe(2)
    await ticket(c, serviceId)
    await streams[1].snapshot(2000, (x) => x.services[0].waiting === 1)
    streams[1].abort()
    streams[2].abort()
    await tick()
    expect(hub.subscribers(c.id)).toBe(0)
    // A client that goes away before its first snapshot is cleaned up too.
    const early = await stream(token)
    early.abort()
    await tick()
    expect(hub.subscribers(c.id)).toBe(0)
  })

  test('revoking the token sends `revoked` and ends the stream; other tokens keep theirs', async () => {
    const { c, serviceId, token, tokenId } = await setup()
    const second = (await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'Hall' } })).body.token
    const s = await stream(token)
    const keep = await stream(second)
    await s.snapshot()
    await keep.snapshot()
    await t.request('DELETE', `/api/ventanilla/tokens/${tokenId}`, { key: c.key })
    const ev = await s.next((e) => e.event === 'revoked')
    expect(ev.event).toBe('revoked')
    expect(await s.readUntil(() => false, 2000)).toBe(false)
    expect(s.done).toBe(true)
    expect((await t.request('GET', `/api/public/ventanilla/${token}/events`)).status).toBe(404)
    await ticket(c, serviceId)
    expect((await keep.snapshot(2000, (x) => x.services[0].waiting === 1)).services[0].waiting).toBe(1)
    expect(ventanillaHub(t.ctx).subscribers(c.id)).toBe(1)
    keep.abort()
  })

  test('switching the module off ends open streams with `revoked`', async () => {
    const { c, token } = await setup()
    const s = await stream(token)
    await s.snapshot()
    await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { modules: { ventanilla: false } } })
    expect((await s.next((e) => e.event === 'revoked')).event).toBe('revoked')
    expect(await s.readUntil(() => false, 2000)).toBe(false)
    expect(s.done).toBe(true)
  })

  test('a company rename reaches the stream without a ventanilla change', async () => {
    const { c, token } = await setup()
    const s = await stream(token)
    await s.snapshot()
    await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { name: 'Cambio Renombrado' } })
    expect((await s.snapshot(2000, (x) => x.companyName === 'Cambio Renombrado')).companyName).toBe('Cambio Renombrado')
    s.abort()
  })

  test('all streams of a company get the same sequence of snapshots, each different from the one before', async () => {
    const { c, serviceId, token } = await setup()
    const streams = await Promise.all(Array.from({ length: 5 }, () => stream(token)))
    await Promise.all(streams.map((s) => s.snapshot()))
    await Promise.all(Array.from({ length: 10 }, () => ticket(c, serviceId)))
    const finals = await Promise.all(streams.map((s) => s.snapshot(2000, (x) => x.services[0].waiting === 10)))
    expect(new Set(finals.map((f) => JSON.stringify(f))).size).toBe(1)
    const ids = streams.map((s) => s.events.map((e) => e.id).join(','))
    expect(new Set(ids).size).toBe(1)
    const data = streams[0].events.map((e) => e.data)
    for (let i = 1; i < data.length; i++) expect(data[i]).not.toBe(data[i - 1])
    for (const s of streams) s.abort()
  })
})

describe('ventanilla across server processes', () => {
  const procs: ReturnType<typeof Bun.spawn>[] = []
  let dataDir = ''
  afterAll(async () => {
    for (const p of procs) p.kill()
    // A process that does not stop on SIGTERM in time is killed outright; the test must not leave servers behind.
    const stopped = await Promise.race([Promise.all(procs.map((p) => p.exited)).then(() => true), tick(3_000).then(() => false)])
    if (!stopped) for (const p of procs) p.kill('SIGKILL')
    await Promise.all(procs.map((p) => p.exited))
    if (dataDir) rmSync(dataDir, { recursive: true, force: true })
  }, 15_000)

  async function start() {
    const server = await startServer({ dataDir, databaseUrl: process.env.TEST_DATABASE_URL!, timeoutMs: 30_000 })
    procs.push(server.proc)
    return server.base
  }

  postgresTest(
    'a call made on process A reaches a stream held by process B',
    async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'fos-ventanilla-'))
      const [a, b] = await Promise.all([start(), start()])
      const { c, serviceId, token } = await setup('ticket')
      const s = await openStream(fetch, `${b}/api/public/ventanilla/${token}/events`)
      expect((await s.snapshot()).currentCall).toBeNull()
      const made = await fetch(`${a}/api/ventanilla/tickets`, {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json' },
        body: JSON.stringify({ service_id: serviceId, customer_name: 'Juan Pérez' }),
      })
      expect(made.status).toBe(201)
      const call = await fetch(`${a}/api/ventanilla/calls`, {
        method: 'POST',
        headers: { 'x-api-key': c.key, 'content-type': 'application/json' },
        body: JSON.stringify({ desk: 'Caja 7' }),
      })
      expect(call.status).toBe(201)
      const got = await s.snapshot(2000, (x) => x.currentCall !== null)
      expect(got.currentCall).toEqual({ ticket: 'A-001', name: null, desk: 'Caja 7', service: 'Cambio', calledAt: expect.stringMatching(/Z$/) })
      expect(s.text).not.toContain('Juan')
      s.abort()
    },
    60_000,
  )
})
