import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type Company, type TestApp } from '../helpers'
import { openStream } from '../sse'
import { ventanillaHub } from '../../server/modules/ventanilla/hub'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
  ventanillaHub(t.ctx).configure({ heartbeatMs: 100, pollMs: 100, gapMs: 20 })
})

afterAll(() => {
  ventanillaHub(t.ctx).configure({ heartbeatMs: 15_000, pollMs: 1_000, gapMs: 50 })
})

const SETTINGS = {
  logoUrl: '',
  showLogo: false,
  timezone: 'America/Argentina/Buenos_Aires',
  tickerText: 'Bienvenidos',
  announceSound: true,
  announceTts: true,
  privacyMode: 'first_last_initial',
}

async function branch() {
  const c = await t.newCompany({ ventanilla: true })
  const a = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: 'Cambio', prefix: 'A' } })).body.id as number
  const b = (await t.request('POST', '/api/ventanilla/services', { key: c.key, body: { name: '=Pagos, varios', prefix: 'B' } })).body.id as number
  return { c, a, b }
}

const take = (c: Company, service_id: number, extra: Record<string, unknown> = {}) =>
  t.request('POST', '/api/ventanilla/tickets', { key: c.key, body: { service_id, ...extra } })
const settingsRow = async (companyId: number) =>
  (await t.ctx.database.rows<{ ticker_text: string; logo_url: string }>(sql`select ticker_text, logo_url from ventanilla_settings where company_id = ${companyId}`))[0]

describe('PATCH /api/ventanilla/settings', () => {
  test('changes only the fields given and answers the whole settings', async () => {
    const { c } = await branch()
    expect((await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: SETTINGS })).status).toBe(200)
    const patched = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { tickerText: 'Dólar hoy', dispenserAsksName: 'optional' } })
    expect(patched.status).toBe(200)
    expect(patched.body).toEqual({ ...SETTINGS, displayName: null, tickerText: 'Dólar hoy', priorityMode: 'first', dispenserAsksName: 'optional' })
    expect((await t.request('GET', '/api/ventanilla/settings', { key: c.key })).body).toEqual(patched.body)
  })

  test('on a company that never saved settings, starts from the defaults', async () => {
    const { c } = await branch()
    const patched = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { showLogo: true } })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ showLogo: true, logoUrl: '', timezone: 'America/Argentina/Buenos_Aires', privacyMode: 'first_last_initial', dispenserAsksName: 'off' })
  })

  test('an unknown field is 400 VALIDATION_ERROR and nothing changes', async () => {
    const { c } = await branch()
    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: SETTINGS })
    const res = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { tickerText: 'nuevo', colour: 'red' } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect((await settingsRow(c.id)).ticker_text).toBe('Bienvenidos')
    // Who may call is decided before the body is looked at.
    expect((await t.request('PATCH', '/api/ventanilla/settings', { body: { colour: 'red' } })).status).toBe(401)
    const clerk = await c.employee(['ventanilla.call'])
    expect((await t.request('PATCH', '/api/ventanilla/settings', { key: clerk.key, body: { colour: 'red' } })).status).toBe(403)
  })

  test('a logo that is not https is refused with words; https and same-origin paths are taken', async () => {
    const { c } = await branch()
    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: SETTINGS })
    for (const logoUrl of ['http://cdn.example/logo.png', 'ftp://x/y.png', 'logo.png', 'javascript:alert(1)', '//cdn.example/logo.png']) {
      const res = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { logoUrl, tickerText: 'no' } })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
      expect(res.body.error).toContain('https://')
      expect(res.body.details).toEqual([{ field: 'logoUrl', message: expect.stringContaining('https://') }])
    }
    const put = await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, logoUrl: 'http://cdn.example/logo.png' } })
    expect(put.status).toBe(400)
    expect(await settingsRow(c.id)).toEqual({ ticker_text: 'Bienvenidos', logo_url: '' })
    for (const logoUrl of ['https://cdn.example/logo.png', '/files/logo.png', '']) {
      const res = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { logoUrl } })
      expect(res.status).toBe(200)
      expect(res.body.logoUrl).toBe(logoUrl)
    }
  })

  test('an empty ticker is no ticker; an unknown time zone is refused', async () => {
    const { c } = await branch()
    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: SETTINGS })
    const blank = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { tickerText: '   ' } })
    expect(blank.status).toBe(200)
    expect(blank.body.tickerText).toBe('')
    const tz = await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { timezone: 'Mars/Olympus' } })
    expect(tz.status).toBe(400)
    expect(tz.body.details[0].field).toBe('timezone')
  })

  test('needs ventanilla.manage', async () => {
    const { c } = await branch()
    const caller = await c.employee(['ventanilla.call'])
    expect((await t.request('PATCH', '/api/ventanilla/settings', { key: caller.key, body: { tickerText: 'x' } })).status).toBe(403)
  })
})

describe('rates', () => {
  test('GET answers the board with when and by whom it was replaced', async () => {
    const { c } = await branch()
    expect((await t.request('GET', '/api/ventanilla/rates', { key: c.key })).body).toEqual({ rates: [], updated_at: null, updated_by: null })
    const manager = await c.employee(['ventanilla.manage'])
    const put = await t.request('PUT', '/api/ventanilla/rates', { key: manager.key, body: { rates: [{ currency: 'usd', buy: '1180.5', sell: 1220 }] } })
    expect(put.status).toBe(200)
    const read = await t.request('GET', '/api/ventanilla/rates', { key: c.key })
    expect(read.body.rates).toEqual([{ currency: 'USD', buy: 1180.5, sell: 1220, mid: 1200.25 }])
    expect(read.body.updated_by).toBe('Empleado 1')
    expect(Date.now() - Date.parse(read.body.updated_at)).toBeLessThan(60_000)
    await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'EUR', buy: 1300, sell: 1350 }] } })
    expect((await t.request('GET', '/api/ventanilla/rates', { key: c.key })).body.updated_by).toBeNull()
  })

  test('the counter reads the board (ventanilla.call) but does not replace it; other employees read neither', async () => {
    const { c } = await branch()
    await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: '1165.5', sell: '1185.5' }] } })
    const cashier = await c.employee(['ventanilla.call'])
    const read = await t.request('GET', '/api/ventanilla/rates', { key: cashier.key, headers: { accept: 'application/json; money=string' } })
    expect(read.status).toBe(200)
    expect(read.body.rates).toEqual([{ currency: 'USD', buy: '1165.5', sell: '1185.5', mid: '1175.5' }])
    expect((await t.request('PUT', '/api/ventanilla/rates', { key: cashier.key, body: { rates: [] } })).status).toBe(403)
    const clerk = await c.employee(['operations.create'])
    expect((await t.request('GET', '/api/ventanilla/rates', { key: clerk.key })).body.code).toBe('FORBIDDEN')
  })

  test('a comma where a dot is meant is 400 with a message saying so, and the board is untouched', async () => {
    const { c } = await branch()
    await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: 1000, sell: 1100 }] } })
    const res = await t.request('PUT', '/api/ventanilla/rates', { key: c.key, body: { rates: [{ currency: 'USD', buy: '1.180,50', sell: '1220' }, { currency: 'EUR', buy: 'mucho', sell: 1 }] } })
    expect(res.status).toBe(400)
    expect(res.body.code).toBe('VALIDATION_ERROR')
    expect(res.body.details).toEqual([
      { field: 'rates.0.buy', message: '"1.180,50" uses a comma: write decimals with a dot, e.g. "1180.50"' },
      { field: 'rates.1.buy', message: '"mucho" is not a decimal number (digits, with a dot for decimals)' },
    ])
    expect(res.body.error).toContain('rates.0.buy')
    expect((await t.request('GET', '/api/ventanilla/rates', { key: c.key })).body.rates).toEqual([{ currency: 'USD', buy: 1000, sell: 1100, mid: 1050 }])
  })
})

describe('PATCH /api/ventanilla/tickets/{id}', () => {
  test('sets the name while waiting or called; a closed ticket is 409 TICKET_CLOSED', async () => {
    const { c, a } = await branch()
    const caller = await c.employee(['ventanilla.call'])
    const ticket = (await take(c, a)).body
    const named = await t.request('PATCH', `/api/ventanilla/tickets/${ticket.id}`, { key: caller.key, body: { customer_name: '  Ana Ruiz ' } })
    expect(named.status).toBe(200)
    expect(named.body).toMatchObject({ id: ticket.id, customer_name: 'Ana Ruiz', status: 'waiting' })
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 1' } })
    const renamed = await t.request('PATCH', `/api/ventanilla/tickets/${ticket.id}`, { key: caller.key, body: { customer_name: 'Ana María Ruiz' } })
    expect(renamed.body).toMatchObject({ customer_name: 'Ana María Ruiz', status: 'called' })
    await t.request('POST', `/api/ventanilla/tickets/${ticket.id}/finish`, { key: c.key })
    const closed = await t.request('PATCH', `/api/ventanilla/tickets/${ticket.id}`, { key: caller.key, body: { customer_name: 'Otra' } })
    expect(closed.status).toBe(409)
    expect(closed.body.code).toBe('TICKET_CLOSED')

    const other = (await take(c, a, { customer_name: 'Luis' })).body
    await t.request('POST', `/api/ventanilla/tickets/${other.id}/no-show`, { key: c.key })
    expect((await t.request('PATCH', `/api/ventanilla/tickets/${other.id}`, { key: caller.key, body: { customer_name: null } })).body.code).toBe('TICKET_CLOSED')
    const cleared = (await take(c, a, { customer_name: 'Eva' })).body
    expect((await t.request('PATCH', `/api/ventanilla/tickets/${cleared.id}`, { key: caller.key, body: { customer_name: null } })).body.customer_name).toBeNull()
  })

  test("another company's ticket is 404; an unknown field is 400", async () => {
    const { c, a } = await branch()
    const other = await branch()
    const ticket = (await take(c, a)).body
    expect((await t.request('PATCH', `/api/ventanilla/tickets/${ticket.id}`, { key: other.c.key, body: { customer_name: 'X' } })).status).toBe(404)
    expect((await t.request('PATCH', `/api/ventanilla/tickets/${ticket.id}`, { key: c.key, body: { customer_name: 'X', status: 'finished' } })).status).toBe(400)
  })
})

describe('queue serving', () => {
  test('lists called tickets, one per desk, with the employee who called', async () => {
    const { c, a, b } = await branch()
    const desk = await c.employee(['ventanilla.call'])
    const t1 = (await take(c, a, { customer_name: 'Ana Ruiz' })).body
    const t2 = (await take(c, b)).body
    const t3 = (await take(c, a)).body
    expect((await t.request('GET', '/api/ventanilla/queue', { key: c.key })).body.serving).toEqual([])

    const stream = await openStream((r) => t.app.handle(r), 'http://fos.test/api/ventanilla/events', { 'x-api-key': c.key })
    try {
      await stream.next((e) => e.event === 'queue')
      const call1 = (await t.request('POST', '/api/ventanilla/calls', { key: desk.key, body: { desk: 'Caja 1', service_id: a } })).body
      await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 2', service_id: b } })
      const q = (await t.request('GET', '/api/ventanilla/queue', { key: c.key })).body
      expect(q.serving).toEqual([
        { desk: 'Caja 1', ticket: { id: t1.id, number: t1.number, customer_name: 'Ana Ruiz', service_id: a }, employee: { id: desk.id, name: 'Empleado 1' }, called_at: call1.called_at },
        { desk: 'Caja 2', ticket: { id: t2.id, number: t2.number, customer_name: null, service_id: b }, employee: null, called_at: expect.any(String) },
      ])
      // The stream carries the same body once it has caught up.
      const pushed = await stream.next((e) => e.event === 'queue' && JSON.parse(e.data).serving.length === 2, 5000)
      expect(JSON.parse(pushed.data)).toEqual(q)

      // Calling again at Caja 1 without finishing: the desk shows its latest call only.
      await t.request('POST', '/api/ventanilla/calls', { key: desk.key, body: { desk: 'Caja 1', service_id: a } })
      await t.request('POST', `/api/ventanilla/tickets/${t2.id}/finish`, { key: c.key })
      const after = (await t.request('GET', '/api/ventanilla/queue', { key: c.key })).body.serving
      expect(after.map((s: { desk: string; ticket: { id: number } }) => [s.desk, s.ticket.id])).toEqual([['Caja 1', t3.id]])
    } finally {
      stream.abort()
    }
  })
})

describe('stats', () => {
  test('rows carry the service name; format=csv answers the same rows as an es-AR spreadsheet reads them', async () => {
    const { c, a, b } = await branch()
    await take(c, a)
    await take(c, b)
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 1', service_id: a } })
    const json = await t.request('GET', '/api/ventanilla/stats', { key: c.key })
    expect(json.status).toBe(200)
    expect(json.body.data.map((r: { service_name: string }) => r.service_name)).toEqual(['Cambio', '=Pagos, varios'])
    const csv = await t.request('GET', '/api/ventanilla/stats?format=csv', { key: c.key })
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    // A byte order mark, so a spreadsheet reads UTF-8 (accents) rather than the system's code page (a decoder drops it).
    const raw = await t.app.handle(new Request('http://fos.test/api/ventanilla/stats?format=csv', { headers: { 'x-api-key': c.key } }))
    expect([...new Uint8Array(await raw.arrayBuffer()).slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf])
    const lines = (csv.body as string).replace(/^\ufeff/, '').split('\r\n')
    expect(lines[0]).toBe('Fecha;N.º de servicio;Servicio;Emitidos;Atendidos;No se presentaron;Espera promedio (s);Espera p90 (s);Atención promedio (s)')
    const [r0, r1] = json.body.data
    const day = (iso: string) => iso.split('-').reverse().join('/')
    expect(lines[1]).toBe([day(r0.date), a, 'Cambio', 1, 0, 0, r0.avg_wait_s, r0.p90_wait_s, ''].join(';'))
    expect(lines[2]).toBe([day(r1.date), b, "'=Pagos, varios", 1, 0, 0, '', '', ''].join(';'))
    expect(lines[3]).toBe('')
    expect((await t.request('GET', '/api/ventanilla/stats?format=xml', { key: c.key })).status).toBe(400)
  })

  test('a transferred ticket is issued under the service it was taken for and served under the one that served it', async () => {
    const { c, a, b } = await branch()
    const ticket = (await take(c, a)).body.id as number
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 1', service_id: a } })
    expect((await t.request('POST', `/api/ventanilla/tickets/${ticket}/transfer`, { key: c.key, body: { service_id: b } })).status).toBe(200)
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 2', service_id: b } })
    expect((await t.request('POST', `/api/ventanilla/tickets/${ticket}/finish`, { key: c.key })).status).toBe(200)
    const rows = (await t.request('GET', '/api/ventanilla/stats', { key: c.key })).body.data as { service_id: number; issued: number; served: number; avg_wait_s: number | null; avg_service_s: number | null }[]
    const of = (id: number) => rows.find((r) => r.service_id === id)
    expect(of(a)).toMatchObject({ issued: 1, served: 0, avg_service_s: null })
    expect(of(a)!.avg_wait_s).not.toBeNull()
    expect(of(b)).toMatchObject({ issued: 0, served: 1, avg_wait_s: null })
    expect(of(b)!.avg_service_s).not.toBeNull()
    expect(rows.reduce((n, r) => n + r.issued, 0)).toBe(1)
  })
})

describe('dispenser asks the name', () => {
  async function dispenser(c: Company) {
    return (await t.request('POST', '/api/ventanilla/dispenser-tokens', { key: c.key, body: { name: 'Entrada' } })).body.token as string
  }
  const dispense = (token: string, body: Record<string, unknown>) => t.request('POST', `/api/public/ventanilla/${token}/tickets`, { body })
  const names = async (companyId: number) =>
    (await t.ctx.database.rows<{ customer_name: string | null }>(sql`select customer_name from ventanilla_tickets where company_id = ${companyId} order by id`)).map((r) => r.customer_name)

  test('off ignores a name, optional keeps one, required refuses a ticket without one', async () => {
    const { c, a } = await branch()
    const token = await dispenser(c)
    expect((await t.request('GET', `/api/public/ventanilla/${token}/services`)).body.asksName).toBe('off')
    expect((await dispense(token, { service_id: a, customer_name: 'Ana' })).status).toBe(201)
    await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { dispenserAsksName: 'optional' } })
    expect((await dispense(token, { service_id: a, customer_name: ' Luis Paz ' })).status).toBe(201)
    expect((await dispense(token, { service_id: a })).status).toBe(201)
    await t.request('PATCH', '/api/ventanilla/settings', { key: c.key, body: { dispenserAsksName: 'required' } })
    expect((await t.request('GET', `/api/public/ventanilla/${token}/services`)).body.asksName).toBe('required')
    for (const body of [{ service_id: a }, { service_id: a, customer_name: '   ' }, { service_id: a, customer_name: null }]) {
      const refused = await dispense(token, body)
      expect(refused.status).toBe(400)
      expect(refused.body.code).toBe('VALIDATION_ERROR')
      expect(refused.body.details[0].field).toBe('customer_name')
    }
    expect((await dispense(token, { service_id: a, customer_name: 'Eva' })).status).toBe(201)
    expect(await names(c.id)).toEqual([null, 'Luis Paz', null, 'Eva'])
  })
})

describe('transfer after a call', () => {
  test('the call stays on the screen with the desk that made it', async () => {
    const { c, a, b } = await branch()
    await t.request('PUT', '/api/ventanilla/settings', { key: c.key, body: { ...SETTINGS, privacyMode: 'full_name' } })
    const token = (await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })).body.token
    const ticket = (await take(c, a, { customer_name: 'Ana Ruiz' })).body
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 3', service_id: a } })
    const other = (await take(c, b)).body
    await t.request('POST', '/api/ventanilla/calls', { key: c.key, body: { desk: 'Caja 1', service_id: b } })
    expect((await t.request('POST', `/api/ventanilla/tickets/${ticket.id}/transfer`, { key: c.key, body: { service_id: b } })).status).toBe(200)
    const snap = await t.request('GET', `/api/public/ventanilla/${token}`)
    expect(snap.status).toBe(200)
    expect(snap.body.currentCall).toMatchObject({ ticket: other.number, desk: 'Caja 1' })
    expect(snap.body.recentCalls).toEqual([{ ticket: ticket.number, name: 'Ana Ruiz', desk: 'Caja 3', service: '=Pagos, varios', calledAt: expect.any(String) }])
    // Waiting again, it is no longer served at Caja 3.
    expect((await t.request('GET', '/api/ventanilla/queue', { key: c.key })).body.serving.map((s: { desk: string }) => s.desk)).toEqual(['Caja 1'])
  })
})
