import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'
import { openStream } from '../sse'
import { ventanillaHub } from '../../server/modules/ventanilla/hub'
import { ensureKioskBuilt } from '../kiosk/browser'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
  ventanillaHub(t.ctx).configure({ heartbeatMs: 100, pollMs: 100, gapMs: 20 })
})

afterAll(() => {
  t.travel(0)
  ventanillaHub(t.ctx).configure({ heartbeatMs: 15_000, pollMs: 1_000, gapMs: 50 })
})

const SETTINGS = {
  logoUrl: '',
  showLogo: false,
  timezone: 'America/Argentina/Buenos_Aires',
  tickerText: '',
  announceSound: true,
  announceTts: true,
  privacyMode: 'first_last_initial',
}

async function branch() {
  const c = await t.newCompany({ ventanilla: true })
  const a = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })).body.id as number
  const b = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Pagos', prefix: 'B' } })).body.id as number
  return { c, a, b }
}

const take = (c: Company, service_id: number, extra: Record<string, unknown> = {}) =>
  t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id, ...extra } })
const callNext = (c: Company, body: Record<string, unknown> = { desk: 'Caja 1' }) => t.request('POST', '/api/ventanilla/calls', { key: c.key, body })
const queue = (c: Company, key = c.key) => t.request('GET', '/api/ventanilla/queue', { key })
const ticketCount = async (companyId: number) =>
  Number((await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from ventanilla_tickets where company_id = ${companyId}`))[0].n)

describe('priority tickets', () => {
  test('priorityMode first: waiting priority tickets go first, each group oldest first; off: arrival order', async () => {
    const { c, a } = await branch()
    const n1 = (await take(c, a)).body
    const p1 = (await take(c, a, { priority: true })).body
    const n2 = (await take(c, a)).body
    const p2 = (await take(c, a, { priority: true })).body
    expect(n1.priority).toBe(false)
    expect(p1.priority).toBe(true)
    expect((await t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id: a, priority: 'yes' } })).status).toBe(400)
    expect((await queue(c)).body.data[0].waiting.map((w: { number: string }) => w.number)).toEqual([p1.number, p2.number, n1.number, n2.number])
    expect((await callNext(c)).body.number).toBe(p1.number)

    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, priorityMode: 'off' } })
    expect((await queue(c)).body.data[0].waiting.map((w: { number: string }) => w.number)).toEqual([n1.number, n2.number, p2.number])
    expect((await callNext(c)).body.number).toBe(n1.number)
    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, priorityMode: 'first' } })
    expect((await callNext(c)).body.number).toBe(p2.number)
    expect((await callNext(c)).body.number).toBe(n2.number)
  })
})

describe('transfer', () => {
  test('waits in the other service with the same number and its place by created_at', async () => {
    const { c, a, b } = await branch()
    const first = (await take(c, a, { customer_name: 'Ana Ruiz' })).body
    const later = (await take(c, b)).body
    const called = (await callNext(c, { desk: 'Caja 1', service_id: a })).body
    expect(called.id).toBe(first.id)
    const moved = await t.request('POST', `/api/ventanilla/tickets/${first.id}/transfer`, { key: c.key, body: { service_id: b } })
    expect(moved.status).toBe(200)
    expect(moved.body).toMatchObject({ id: first.id, number: first.number, service_id: b, status: 'waiting', created_at: first.created_at, customer_name: 'Ana Ruiz' })
    const q = (await queue(c)).body.data
    expect(q.find((s: { service_id: number }) => s.service_id === b).waiting.map((w: { id: number }) => w.id)).toEqual([first.id, later.id])
    expect(q.find((s: { service_id: number }) => s.service_id === a).waiting).toEqual([])
    expect((await callNext(c, { desk: 'Caja 2', service_id: b })).body.id).toBe(first.id)
  })

  test('a ticket transferred after a call keeps the desk that called it on the public snapshot', async () => {
    const { c, a, b } = await branch()
    const token = (await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })).body.token as string
    const snapshot = () => t.request('GET', `/api/public/ventanilla/${token}`)
    const first = (await take(c, a)).body
    const second = (await take(c, a)).body
    expect((await callNext(c, { desk: 'Caja 1', service_id: a })).body.id).toBe(first.id)
    expect((await callNext(c, { desk: 'Caja 2', service_id: a })).body.id).toBe(second.id)

    // Transferred while another call is on the board: the earlier call stays listed, with its desk.
    expect((await t.request('POST', `/api/ventanilla/tickets/${first.id}/transfer`, { key: c.key, body: { service_id: b } })).status).toBe(200)
    let snap = await snapshot()
    expect(snap.status).toBe(200)
    expect(snap.body.currentCall).toMatchObject({ ticket: second.number, desk: 'Caja 2' })
    expect(snap.body.recentCalls.map((x: { ticket: string; desk: string }) => [x.ticket, x.desk])).toEqual([[first.number, 'Caja 1']])

    // Transferred while it is the current call: the board still answers, with the desk the customer went to.
    expect((await t.request('POST', `/api/ventanilla/tickets/${second.id}/transfer`, { key: c.key, body: { service_id: b } })).status).toBe(200)
    snap = await snapshot()
    expect(snap.status).toBe(200)
    expect(snap.body.currentCall).toMatchObject({ ticket: second.number, desk: 'Caja 2' })
    expect(snap.body.services.find((s: { id: number }) => s.id === b).waiting).toBe(2)

    // Called again from its new queue: the new desk replaces the old one.
    expect((await callNext(c, { desk: 'Caja 3', service_id: b })).body.id).toBe(first.id)
    snap = await snapshot()
    expect(snap.body.currentCall).toMatchObject({ ticket: first.number, desk: 'Caja 3' })
    expect(snap.body.recentCalls.map((x: { ticket: string; desk: string }) => [x.ticket, x.desk])).toEqual([[second.number, 'Caja 2']])
  })

  test('closed tickets → 409 TICKET_CLOSED, other company service → 404, nothing changes', async () => {
    const { c, a, b } = await branch()
    const other = await branch()
    const x = (await take(c, a)).body
    await callNext(c)
    const foreign = await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: c.key, body: { service_id: other.b } })
    expect(foreign.status).toBe(404)
    expect(foreign.body.code).toBe('NOT_FOUND')
    const notMine = await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: other.c.key, body: { service_id: other.b } })
    expect(notMine.status).toBe(404)
    expect((await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: c.key, body: {} })).status).toBe(400)
    expect((await t.request('POST', `/api/ventanilla/tickets/abc/transfer`, { key: c.key, body: { service_id: b } })).body.code).toBe('INVALID_ID')
    // Still called at its service: the failed transfers wrote nothing.
    const [row] = await t.ctx.database.rows<{ status: string; service_id: number }>(sql`select status, service_id from ventanilla_tickets where id = ${x.id}`)
    expect({ status: row.status, service_id: Number(row.service_id) }).toEqual({ status: 'called', service_id: a })

    await t.request('POST', `/api/ventanilla/tickets/${x.id}/finish`, { key: c.key })
    const finished = await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: c.key, body: { service_id: b } })
    expect(finished.status).toBe(409)
    expect(finished.body.code).toBe('TICKET_CLOSED')
    const y = (await take(c, a)).body
    await t.request('POST', `/api/ventanilla/tickets/${y.id}/no-show`, { key: c.key })
    const gone = await t.request('POST', `/api/ventanilla/tickets/${y.id}/transfer`, { key: c.key, body: { service_id: b } })
    expect(gone.status).toBe(409)
    expect(gone.body.code).toBe('TICKET_CLOSED')
  })

  test('needs ventanilla.call', async () => {
    const { c, a, b } = await branch()
    const x = (await take(c, a)).body
    const manager = await c.employee(['ventanilla.manage'])
    const clerk = await c.employee(['ventanilla.call'])
    expect((await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: manager.key, body: { service_id: b } })).status).toBe(403)
    expect((await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: clerk.key, body: { service_id: b } })).status).toBe(200)
  })
})

describe('staff queue', () => {
  test('every live service with full names, in call order; ventanilla.call only; module gate', async () => {
    const { c, a, b } = await branch()
    const x = (await take(c, a, { customer_name: 'Juan Pérez' })).body
    const q = await queue(c)
    expect(q.status).toBe(200)
    expect(q.body).toEqual({
      data: [
        { service_id: a, name: 'Cambio', prefix: 'A', waiting: [{ id: x.id, number: 'A-001', customer_name: 'Juan Pérez', priority: false, created_at: x.created_at }] },
        { service_id: b, name: 'Pagos', prefix: 'B', waiting: [] },
      ],
      serving: [],
    })
    expect((await queue(c, (await c.employee(['ventanilla.manage'])).key)).status).toBe(403)
    expect((await queue(c, (await c.employee(['ventanilla.call'])).key)).status).toBe(200)
    expect((await t.request('GET', '/api/ventanilla/queue')).status).toBe(401)
    const off = await t.newCompany()
    expect((await queue(off)).body.code).toBe('VENTANILLA_DISABLED')
  })

  test('event stream: event queue at once and within 2 s of every change', async () => {
    const { c, a, b } = await branch()
    const clerk = await c.employee(['ventanilla.call'])
    const s = await openStream((r) => t.app.handle(r), 'http://fos.test/api/ventanilla/events', { 'x-api-key': clerk.key })
    try {
      expect(s.response.status).toBe(200)
      expect(s.response.headers.get('content-type')).toContain('text/event-stream')
      const body = async (match: (d: any) => boolean) => JSON.parse((await s.next((e) => e.event === 'queue' && match(JSON.parse(e.data)), 2000)).data)
      const first = await body(() => true)
      expect(first.data.map((x: { service_id: number }) => x.service_id)).toEqual([a, b])
      const x = (await take(c, a, { customer_name: 'Eva Sosa' })).body
      const after = await body((d) => d.data[0].waiting.length === 1)
      expect(after.data[0].waiting[0]).toEqual({ id: x.id, number: 'A-001', customer_name: 'Eva Sosa', priority: false, created_at: x.created_at })
      await t.request('POST', `/api/ventanilla/tickets/${x.id}/transfer`, { key: c.key, body: { service_id: b } })
      await body((d) => d.data[0].waiting.length === 0 && d.data[1].waiting.length === 1)
      await callNext(c)
      await body((d) => d.data[1].waiting.length === 0)
      // The public snapshot kind never reaches a staff stream.
      expect(s.events.every((e) => e.event === 'queue')).toBe(true)
    } finally {
      s.abort()
    }
    expect((await t.request('GET', '/api/ventanilla/events', { key: (await c.employee(['ventanilla.manage'])).key })).status).toBe(403)
    expect((await t.request('GET', '/api/ventanilla/events')).status).toBe(401)
  })

  test('a staff stream ends soon after its session is signed out or its key revoked', async () => {
    const { c } = await branch()
    const clerk = await c.employee(['ventanilla.call'])
    await t.request('PATCH', `/api/employees/${clerk.id}`, { key: c.key, body: { password: 'contraseña de prueba' } })
    const signed = await t.request('POST', '/api/sessions', { body: { company_id: c.id, email: clerk.email, password: 'contraseña de prueba' } })
    const cookie = `fos_session=${/fos_session=([^;]*)/.exec(signed.headers.get('set-cookie')!)![1]}`
    const open = (headers: Record<string, string>) => openStream((r) => t.app.handle(r), 'http://fos.test/api/ventanilla/events', headers)
    const bySession = await open({ cookie })
    const byKey = await open({ 'x-api-key': clerk.key })
    const other = await open({ 'x-api-key': c.key })
    try {
      for (const s of [bySession, byKey, other]) await s.next((e) => e.event === 'queue')
      await t.request('DELETE', '/api/sessions/current', { headers: { cookie, origin: 'http://fos.test' } })
      await bySession.next((e) => e.event === 'revoked')
      expect(await bySession.readUntil(() => bySession.done)).toBe(true)
      const keys = await t.ctx.database.rows<{ id: number }>(sql`select id from api_keys where employee_id = ${clerk.id}`)
      await t.request('DELETE', `/api/api-keys/${keys[0].id}`, { key: c.key })
      await byKey.next((e) => e.event === 'revoked')
      // The company key's stream goes on.
      await take(c, (await queue(c)).body.data[0].service_id)
      await other.next((e) => e.event === 'queue' && JSON.parse(e.data).data[0].waiting.length === 1)
      expect(other.done).toBe(false)
    } finally {
      for (const s of [bySession, byKey, other]) s.abort()
    }
  })
})

describe('stats', () => {
  test('issued, served, no-show, average and p90 wait, average service time per day and service', async () => {
    const { c, a, b } = await branch()
    try {
      // Ten tickets of A taken at once; the i-th is first called after (i+1) minutes. Clock moves are the app's own.
      const ids: number[] = []
      for (let i = 0; i < 10; i++) ids.push((await take(c, a)).body.id)
      for (let i = 0; i < 10; i++) {
        t.travel((i + 1) * 60_000)
        await t.request('POST', `/api/ventanilla/tickets/${ids[i]}/call`, { key: c.key, body: { desk: 'Caja 1' } })
      }
      // Ticket 0 is called again later: service time counts from the last call, wait from the first.
      t.travel(11 * 60_000)
      await t.request('POST', `/api/ventanilla/tickets/${ids[0]}/call`, { key: c.key, body: { desk: 'Caja 1' } })
      t.travel(11 * 60_000 + 30_000)
      await t.request('POST', `/api/ventanilla/tickets/${ids[0]}/finish`, { key: c.key })
      await t.request('POST', `/api/ventanilla/tickets/${ids[1]}/finish`, { key: c.key })
      await t.request('POST', `/api/ventanilla/tickets/${ids[2]}/no-show`, { key: c.key })
      t.travel(0)
      await take(c, b)

      const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/Argentina/Buenos_Aires' }).format(new Date())
      const r = await t.request('GET', `/api/ventanilla/stats?from=${today}&to=${today}`, { key: c.key })
      expect(r.status).toBe(200)
      // Expected figures from the stored times themselves (taking ten tickets is not instantaneous under load).
      const rows = await t.ctx.database.rows<{ wait: number; service: number | null }>(
        sql`select extract(epoch from first_called_at - created_at)::float8 as wait, extract(epoch from finished_at - called_at)::float8 as service
            from ventanilla_tickets where service_id = ${a} order by id`,
      )
      const waits = rows.map((r) => Number(r.wait)).sort((x, y) => x - y)
      const services = rows.filter((r) => r.service != null).map((r) => Number(r.service))
      const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length
      const p90 = waits[8] + 0.1 * (waits[9] - waits[8])
      expect(Math.abs(mean(waits) - 330)).toBeLessThan(5)
      expect(services).toHaveLength(2)
      expect(r.body.data).toEqual([
        { date: today, service_id: a, service_name: 'Cambio', issued: 10, served: 2, no_show: 1, avg_wait_s: Math.round(mean(waits)), p90_wait_s: Math.round(p90), avg_service_s: Math.round(mean(services)) },
        { date: today, service_id: b, service_name: 'Pagos', issued: 1, served: 0, no_show: 0, avg_wait_s: null, p90_wait_s: null, avg_service_s: null },
      ])
      // Today is the default; another day has nothing.
      expect((await t.request('GET', '/api/ventanilla/stats', { key: c.key })).body).toEqual(r.body)
      expect((await t.request('GET', '/api/ventanilla/stats?from=2020-01-01&to=2020-01-31', { key: c.key })).body).toEqual({ data: [] })
    } finally {
      t.travel(0)
    }
  })

  test('bad ranges are 400, and only ventanilla.manage may read', async () => {
    const { c } = await branch()
    for (const q of ['from=2026-13-01', 'to=yesterday', 'from=2026-02-02&to=2026-02-01']) {
      const r = await t.request('GET', `/api/ventanilla/stats?${q}`, { key: c.key })
      expect(r.status).toBe(400)
      expect(r.body.code).toBe('VALIDATION_ERROR')
    }
    expect((await t.request('GET', '/api/ventanilla/stats', { key: (await c.employee(['ventanilla.call'])).key })).status).toBe(403)
  })
})

describe('dispensers', () => {
  async function dispenser(c: Company) {
    const issued = await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: { name: 'Tablet entrada' } })
    expect(issued.status).toBe(201)
    return issued.body as { id: number; name: string; token: string; dispenser_url: string }
  }
  const dispense = (token: string, body: unknown) => t.request('POST', `/api/public/ventanilla/${token}/tickets`, { body })

  test('tokens: issued once with their URL, listed without values, revoked; ventanilla.manage only', async () => {
    const { c } = await branch()
    const d = await dispenser(c)
    expect(d.name).toBe('Tablet entrada')
    expect(d.token).toMatch(/^vdt_[0-9a-f]{12}_/)
    expect(d.dispenser_url).toBe(`http://fos.test/dispenser/${d.token}`)
    const list = await t.request('GET', '/api/ventanilla/dispenser-tokens', { key: c.key })
    expect(list.body.data).toEqual([{ id: d.id, name: 'Tablet entrada', prefix: d.token.split('_')[1], created_at: expect.any(String) }])
    expect(JSON.stringify(list.body)).not.toContain(d.token)
    const clerk = await c.employee(['ventanilla.call'])
    expect((await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: clerk.key, body: { name: 'x' } })).status).toBe(403)
    expect((await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: {} })).status).toBe(400)
    const other = await branch()
    expect((await t.request('DELETE', `/api/ventanilla/dispenser-tokens/${d.id}`, { key: other.c.key })).status).toBe(404)
    expect((await t.request('DELETE', `/api/ventanilla/dispenser-tokens/${d.id}`, { key: c.key })).status).toBe(200)
    expect((await t.request('DELETE', `/api/ventanilla/dispenser-tokens/${d.id}`, { key: c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/ventanilla/dispenser-tokens', { key: c.key })).body.data).toEqual([])
  })

  test('a ticket at the dispenser: number, service, priority, waiting ahead; shows in the staff queue', async () => {
    const { c, a, b } = await branch()
    const d = await dispenser(c)
    const view = await t.request('GET', `/api/public/ventanilla/${d.token}/services`)
    expect(view.status).toBe(200)
    expect(view.body).toEqual({ companyName: c.name, timezone: 'America/Argentina/Buenos_Aires', priority: true, asksName: 'off', services: [{ id: a, name: 'Cambio', prefix: 'A' }, { id: b, name: 'Pagos', prefix: 'B' }] })
    expect(await dispense(d.token, { service_id: a })).toMatchObject({ status: 201, body: { number: 'A-001', service: 'Cambio', priority: false, waiting_ahead: 0 } })
    expect((await dispense(d.token, { service_id: a })).body).toEqual({ number: 'A-002', service: 'Cambio', priority: false, waiting_ahead: 1 })
    // A priority ticket goes before the ordinary ones, and they now have one more ahead of them.
    expect((await dispense(d.token, { service_id: a, priority: true })).body).toEqual({ number: 'A-003', service: 'Cambio', priority: true, waiting_ahead: 0 })
    expect((await dispense(d.token, { service_id: a })).body.waiting_ahead).toBe(3)
    expect((await dispense(d.token, { service_id: b })).body).toEqual({ number: 'B-001', service: 'Pagos', priority: false, waiting_ahead: 0 })
    const q = (await queue(c)).body.data[0].waiting.map((w: { number: string }) => w.number)
    expect(q).toEqual(['A-003', 'A-001', 'A-002', 'A-004'])

    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, priorityMode: 'off' } })
    expect((await t.request('GET', `/api/public/ventanilla/${d.token}/services`)).body.priority).toBe(false)
  })

  test('bad input: unknown, revoked or module-off tokens 404, unknown service 422, bad body 400; nothing written', async () => {
    const { c, a } = await branch()
    const other = await branch()
    const d = await dispenser(c)
    const before = await ticketCount(c.id)
    for (const token of ['nope', `vdt_000000000000_${'x'.repeat(32)}`, d.token.slice(0, -1) + (d.token.endsWith('A') ? 'B' : 'A')]) {
      const r = await dispense(token, { service_id: a })
      expect(r.status).toBe(404)
      expect(r.body.code).toBe('NOT_FOUND')
      expect((await t.request('GET', `/api/public/ventanilla/${token}/services`)).status).toBe(404)
    }
    const foreign = await dispense(d.token, { service_id: other.a })
    expect(foreign.status).toBe(422)
    expect(foreign.body.code).toBe('UNKNOWN_SERVICE')
    expect((await dispense(d.token, { service_id: 'A' })).status).toBe(400)
    expect((await dispense(d.token, {})).status).toBe(400)
    // A kiosk token is not a dispenser token.
    const kiosk = (await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })).body.token
    expect((await dispense(kiosk, { service_id: a })).status).toBe(404)
    expect(await ticketCount(c.id)).toBe(before)

    await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { modules: { ventanilla: false } } })
    expect((await dispense(d.token, { service_id: a })).status).toBe(404)
    await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { modules: { ventanilla: true } } })
    expect((await dispense(d.token, { service_id: a })).status).toBe(201)
    await t.request('DELETE', `/api/ventanilla/dispenser-tokens/${d.id}`, { key: c.key })
    const revoked = await dispense(d.token, { service_id: a })
    expect(revoked.status).toBe(404)
    expect(await ticketCount(c.id)).toBe(before + 1)
  })

  test('Idempotency-Key: a retried touch gets the same number, not a second ticket', async () => {
    const { c, a } = await branch()
    const d = await dispenser(c)
    const send = (body: unknown) => t.request('POST', `/api/public/ventanilla/${d.token}/tickets`, { body, headers: { 'idempotency-key': 'toque-1' } })
    const first = await send({ service_id: a })
    expect(first.status).toBe(201)
    const again = await send({ service_id: a })
    expect(again.status).toBe(201)
    expect(again.body).toEqual(first.body)
    expect(await ticketCount(c.id)).toBe(1)
    const other = await send({ service_id: a, priority: true })
    expect(other.status).toBe(409)
    expect(other.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
    expect(await ticketCount(c.id)).toBe(1)
  })

  test('a flood: more than 30 tickets a minute from one dispenser → 429 with Retry-After, nothing issued', async () => {
    const { c, a } = await branch()
    const d = await dispenser(c)
    const d2 = await dispenser(c)
    try {
      for (let i = 0; i < 30; i++) expect((await dispense(d.token, { service_id: a })).status).toBe(201)
      const refused = await dispense(d.token, { service_id: a })
      expect(refused.status).toBe(429)
      expect(refused.body.code).toBe('RATE_LIMITED')
      const wait = Number(refused.headers.get('retry-after'))
      expect(wait).toBeGreaterThanOrEqual(1)
      expect(wait).toBeLessThanOrEqual(60)
      expect(await ticketCount(c.id)).toBe(30)
      // Another dispenser of the same branch has its own allowance.
      expect((await dispense(d2.token, { service_id: a })).status).toBe(201)
      t.travel(61_000)
      expect((await dispense(d.token, { service_id: a })).status).toBe(201)
    } finally {
      t.travel(0)
    }
  })

  postgresTest('the per-minute limit holds for concurrent requests', async () => {
    const { c, a } = await branch()
    const d = await dispenser(c)
    const answers = await Promise.all(Array.from({ length: 45 }, () => dispense(d.token, { service_id: a })))
    expect(answers.filter((r) => r.status === 201)).toHaveLength(30)
    expect(answers.filter((r) => r.status === 429)).toHaveLength(15)
    expect(await ticketCount(c.id)).toBe(30)
  })
})

describe('app pages', () => {
  beforeAll(() => ensureKioskBuilt())

  test('GET /staff serves the console; GET /dispenser/{token} the dispenser, 404 for a token that is not live', async () => {
    const staff = await t.app.handle(new Request('http://fos.test/staff'))
    expect(staff.status).toBe(200)
    expect(staff.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(staff.headers.get('content-security-policy')).toContain("default-src 'none'")
    expect(await staff.text()).toContain('/kiosk/assets/')
    const { c } = await branch()
    const d = (await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: { name: 'Tablet' } })).body
    const page = await t.app.handle(new Request(`http://fos.test/dispenser/${d.token}`))
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('/kiosk/assets/')
    expect((await t.app.handle(new Request('http://fos.test/dispenser/nope'))).status).toBe(404)
    await t.request('DELETE', `/api/ventanilla/dispenser-tokens/${d.id}`, { key: c.key })
    expect((await t.app.handle(new Request(`http://fos.test/dispenser/${d.token}`))).status).toBe(404)
  })
})
