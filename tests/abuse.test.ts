/**
 * The cheap attacks that once stalled the service for every tenant, one test each (SECURITY.md names them):
 * deep JSON, bodies that never finish, callers refused before their body is read.
 */
import { describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { SignJWT } from 'jose'
import { buildTestApp, postgresTest, SUPERADMIN_EMAIL, SUPERADMIN_SECRET, testApp, type TestApp } from './helpers'
import { JsonDepthScanner, withinDepth } from '../server/lib/json-depth'

/** A body that sends `head` and then never ends (as a client trickling or stalling would). */
function stalled(head: string, signal?: AbortSignal) {
  const bytes = new TextEncoder().encode(head)
  return new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes)
      signal?.addEventListener('abort', () => c.error(new Error('gone')))
    },
  })
}

function post(t: TestApp, path: string, key: string | undefined, body: BodyInit, method = 'POST') {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers['x-api-key'] = key
  return t.app.handle(new Request(`http://fos.test${path}`, { method, headers, body, duplex: 'half' } as RequestInit))
}

const deep = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

describe('JSON nesting depth', () => {
  test('the scanner counts brackets outside strings only, across chunk borders', () => {
    expect(withinDepth(deep(64), 64)).toBe(true)
    expect(withinDepth(deep(65), 64)).toBe(false)
    expect(withinDepth(JSON.stringify({ a: '[[[[[[[[[[', b: '\\"[[[[' }), 2)).toBe(true)
    expect(withinDepth(JSON.stringify({ a: { b: { c: [1] } } }), 3)).toBe(false)
    const s = new JsonDepthScanner(3)
    expect(s.push(new TextEncoder().encode('{"x":"\\'))).toBe(true)
    expect(s.push(new TextEncoder().encode('"[[[[",'))).toBe(true)
    expect(s.push(new TextEncoder().encode('"y":[[['))).toBe(false)
  })

  test('a body nested 100,000 deep is 400 VALIDATION_ERROR at once, on every write route, and writes nothing', async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true, ventanilla: true })
    const body = `{"operation_type_id":${deep(100_000)}}`
    const audit = async () => (await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from audit_logs where company_id = ${c.id}`))[0].n
    const before = await audit()
    const routes = ['POST /api/operations', 'POST /api/clients', 'POST /api/employees', 'PUT /api/ventanilla/rates', 'POST /api/mesas', 'POST /api/tags']
    for (const route of routes) {
      const [method, path] = route.split(' ')
      const started = performance.now()
      const res = await post(t, path, c.key, body, method)
      expect({ path, status: res.status }).toEqual({ path, status: 400 })
      expect(await res.json()).toEqual({ error: expect.stringContaining('64'), code: 'VALIDATION_ERROR', details: [{ field: 'body', message: expect.any(String) }] })
      expect(performance.now() - started).toBeLessThan(2000)
    }
    expect(await audit()).toBe(before)
  })

  test('64 levels still parse (and fail or pass on their schema), 65 do not', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const at = await t.request('POST', '/api/tags', { key: c.key, raw: `{"name":"x","color":"#000000","extra":${deep(63)}}`, headers: { 'content-type': 'application/json' } })
    expect(at.status).toBe(201)
    const over = await t.request('POST', '/api/tags', { key: c.key, raw: `{"name":"y","color":"#000000","extra":${deep(64)}}`, headers: { 'content-type': 'application/json' } })
    expect(over.status).toBe(400)
    expect(over.body.code).toBe('VALIDATION_ERROR')
  })

  test('the depth is refused while the body is still arriving: the rest is never waited for', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const abort = new AbortController()
    const res = await post(t, '/api/operations', c.key, stalled(`{"transactions":${'['.repeat(200)}`, abort.signal))
    abort.abort()
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('VALIDATION_ERROR')
  })
})

describe('who may call is decided before the body is read', () => {
  test('no key, a bad key, or a key without the permission: answered while the body never finishes', async () => {
    const t = await testApp()
    const c = await t.newCompany({ ventanilla: true })
    const clerk = await c.employee([])
    const cases: [string | undefined, number][] = [
      [undefined, 401],
      ['fos_000000000000_nope', 401],
      [clerk.key, 403],
    ]
    for (const [key, status] of cases) {
      for (const route of ['POST /api/operations', 'POST /api/clients', 'PUT /api/ventanilla/rates', 'POST /api/ventanilla/tickets']) {
        const [method, path] = route.split(' ')
        const abort = new AbortController()
        const res = await post(t, path, key, stalled('{"operation_type_id":1,', abort.signal), method)
        abort.abort()
        expect({ route, status: res.status }).toEqual({ route, status })
      }
    }
    const abort = new AbortController()
    const platform = await post(t, '/api/superadmin/companies', c.key, stalled('{"name":', abort.signal))
    abort.abort()
    expect(platform.status).toBe(401)
    const stall = new AbortController()
    const dispenser = await post(t, `/api/public/ventanilla/vdt_000000000000_${'a'.repeat(32)}/tickets`, undefined, stalled('{"service_id":', stall.signal))
    stall.abort()
    expect(dispenser.status).toBe(404)
  })
})

describe('body read deadline', () => {
  test('a body that does not arrive whole in BODY_TIMEOUT_MS is 408 and the connection is closed; nothing is written', async () => {
    const t = await buildTestApp({ bodyTimeoutMs: 300 })
    const c = await t.newCompany()
    const abort = new AbortController()
    const started = performance.now()
    const res = await post(t, '/api/clients', c.key, stalled('{"name":"Lento","type":', abort.signal))
    abort.abort()
    expect(res.status).toBe(408)
    expect(res.headers.get('connection')).toBe('close')
    expect(await res.json()).toEqual({ error: expect.any(String), code: 'REQUEST_TIMEOUT' })
    expect(performance.now() - started).toBeLessThan(5000)
    const [{ n }] = await t.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from clients where company_id = ${c.id}`)
    expect(n).toBe(0)
  })

  test('the defaults are 64 levels, 30 s, and the variables change them', async () => {
    const { loadConfig } = await import('../server/config')
    const d = loadConfig({})
    expect([d.maxJsonDepth, d.bodyTimeoutMs]).toEqual([64, 30_000])
    const o = loadConfig({ MAX_JSON_DEPTH: '10', BODY_TIMEOUT_MS: '1000' })
    expect([o.maxJsonDepth, o.bodyTimeoutMs]).toEqual([10, 1000])
    expect(() => loadConfig({ MAX_JSON_DEPTH: 'deep' })).toThrow('MAX_JSON_DEPTH')
  })

  test('exports rest as long as each batch took by default; EXPORT_REST_PERCENT changes it, 0 turns it off', async () => {
    const { loadConfig } = await import('../server/config')
    expect(loadConfig({}).exports.restPercent).toBe(100)
    expect(loadConfig({ EXPORT_REST_PERCENT: '0' }).exports.restPercent).toBe(0)
    expect(() => loadConfig({ EXPORT_REST_PERCENT: '-5' })).toThrow('EXPORT_REST_PERCENT')
  })
})

describe('request log', () => {
  test('the status logged is always the status answered: errors, database client faults, refusals, early limits', async () => {
    const t = await buildTestApp({ maxJsonBytes: 2048 })
    const c = await t.newCompany()
    const lines: Record<string, any>[] = []
    t.ctx.log = (entry) => lines.push(entry)
    const answers: { id: string | null; status: number }[] = []
    const send = async (method: string, path: string, opts: Parameters<TestApp['request']>[2] = {}) => {
      const r = await t.request(method, path, { key: c.key, ...opts })
      answers.push({ id: r.headers.get('x-request-id'), status: r.status })
    }
    await send('GET', '/api/tags')
    await send('POST', '/api/tags', { body: { name: 'x', color: 'nope' } })
    await send('POST', '/api/clients', { body: { name: 'a\u0000b', type: 0 } })
    await send('POST', '/api/operations', { raw: deep(1000), headers: { 'content-type': 'application/json' } })
    await send('POST', '/api/clients', { raw: JSON.stringify({ name: 'x'.repeat(4000) }), headers: { 'content-type': 'application/json', 'content-length': '4020' } })
    await send('GET', '/api/clients/99999999')
    await send('GET', '/api/tags', { key: 'fos_000000000000_nope' })
    await send('GET', '/nowhere')
    expect(new Set(answers.map((a) => a.status)).size).toBeGreaterThanOrEqual(5)
    for (const a of answers) {
      const line = lines.find((l) => l.msg === 'request' && l.id === a.id)
      expect({ id: a.id, status: line?.status }).toEqual({ id: a.id, status: a.status })
    }
  })
})

describe('money bounds', () => {
  async function ledger(t: TestApp) {
    const c = await t.newCompany()
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
    const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
    const account = client.body.accounts[0].id as number
    const create = (amount: unknown, status?: string) =>
      t.request('POST', '/api/operations', { key: c.key, body: { operation_type_id: type.body.id, ...(status && { status }), transactions: [{ account_id: account, amount }] } })
    const balance = async () => (await t.request('GET', `/api/clients/${client.body.id}`, { key: c.key })).body.accounts[0].balance as number
    return { c, create, balance }
  }

  test('a JSON number and a decimal string meet the same bound: below 10^22 accepted, at or above it 400', async () => {
    const t = await testApp()
    const { create } = await ledger(t)
    for (const amount of [5e21, '5000000000000000000000', '9999999999999999999999.999999', -9.99e21]) expect((await create(amount)).status).toBe(201)
    for (const amount of [1e22, 5e22, '10000000000000000000000', '-10000000000000000000000', '9999999999999999999999.9999996']) {
      const res = await create(amount)
      expect({ amount, status: res.status, code: res.body.code }).toEqual({ amount, status: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.details?.length).toBeGreaterThan(0)
    }
  })

  test('an approval that would push a balance past numeric(28,6) is 422 AMOUNT_OUT_OF_RANGE and changes nothing', async () => {
    const t = await testApp()
    const { c, create, balance } = await ledger(t)
    expect((await create('6000000000000000000000', 'completed')).status).toBe(201)
    const pending = await create(5e21)
    const res = await t.request('POST', `/api/operations/${pending.body.id}/approve`, { key: c.key })
    expect(res.status).toBe(422)
    expect(res.body.code).toBe('AMOUNT_OUT_OF_RANGE')
    expect(await balance()).toBe(6e21)
    expect((await t.request('GET', `/api/operations/${pending.body.id}`, { key: c.key })).body.status).toBe('pending')
    const direct = await create(5e21, 'completed')
    expect(direct.status).toBe(422)
    expect(direct.body.code).toBe('AMOUNT_OUT_OF_RANGE')
    expect(await balance()).toBe(6e21)
  })
})

describe('overload', () => {
  postgresTest('with the pool saturated a request waits DB_QUEUE_TIMEOUT_MS, then 503 SERVICE_UNAVAILABLE with Retry-After; one company holds at most half the pool', async () => {
    const t = await buildTestApp({ dbPoolMax: 2, dbQueueTimeoutMs: 400 })
    const blocker = postgres(process.env.TEST_DATABASE_URL!, { max: 2, onnotice: () => {} })
    let unlock = () => {}
    let holding: Promise<unknown> = Promise.resolve()
    try {
      const pendingOf = async () => {
        const c = await t.newCompany()
        const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
        const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }] } })
        const op = await t.request('POST', '/api/operations', { key: c.key, body: { operation_type_id: type.body.id, transactions: [{ account_id: client.body.accounts[0].id, amount: 1 }] } })
        expect(op.status).toBe(201)
        return { c, id: op.body.id as number }
      }
      const a = await pendingOf()
      const b = await pendingOf()
      const bystander = await t.newCompany()
      // Row locks held from outside keep each approval, and the pool slot it holds, busy until released.
      const held = new Promise<void>((r) => (unlock = r))
      let ready!: () => void
      const locked = new Promise<void>((r) => (ready = r))
      holding = blocker.begin(async (sql) => {
        await sql`select id from operations where id in ${sql([a.id, b.id])} for update`
        ready()
        await held
      })
      await locked
      const approveA = t.request('POST', `/api/operations/${a.id}/approve`, { key: a.c.key })
      await Bun.sleep(100)
      // A second request of the same company waits for its half of the pool although a slot is free.
      const secondA = t.request('GET', '/api/operations', { key: a.c.key })
      const approveB = t.request('POST', `/api/operations/${b.id}/approve`, { key: b.c.key })
      // Both approvals hold their pool slot once they wait on the row locks.
      for (let i = 0; i < 200; i++) {
        const [{ n }] = await blocker`select count(*)::int as n from pg_locks where not granted and database = (select oid from pg_database where datname = current_database())`
        if (n >= 2) break
        await Bun.sleep(25)
      }
      const started = performance.now()
      const refused = await t.request('GET', '/api/operations', { key: bystander.key })
      expect(refused.status).toBe(503)
      expect(refused.body).toEqual({ error: expect.any(String), code: 'SERVICE_UNAVAILABLE' })
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(performance.now() - started).toBeGreaterThanOrEqual(350)
      expect((await secondA).status).toBe(503)
      unlock()
      await holding
      expect((await approveA).status).toBe(200)
      expect((await approveB).status).toBe(200)
      expect((await t.request('GET', '/api/operations', { key: bystander.key })).status).toBe(200)
    } finally {
      unlock()
      await holding.catch(() => {})
      await blocker.end({ timeout: 1 })
    }
  })
})

describe('client scope wherever a client shows', () => {
  test('a scoped employee lists, reads and sums only its clients; others are 404; mesa lines of unseen operations are hidden', async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true })
    const mk = async (name: string, type: number, currency: string) =>
      (await t.request('POST', '/api/clients', { key: c.key, body: { name, type, accounts: [{ currency_name: currency }] } })).body
    const mine = await mk('Mio', 1, 'USD')
    const other = await mk('Ajeno', 1, 'USD')
    const caja = await mk('Caja', 0, 'ARS')
    const cajaUsd = (await t.request('POST', `/api/clients/${caja.id}/accounts`, { key: c.key, body: { currency_name: 'USD' } })).body
    const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Compra', kind: 'exchange' } })
    const trade = async (client: { id: number; accounts: { id: number }[] }) =>
      (
        await t.request('POST', '/api/operations', {
          key: c.key,
          body: {
            operation_type_id: type.body.id,
            client_id: client.id,
            status: 'completed',
            transactions: [
              { account_id: client.accounts[0].id, amount: 100 },
              { account_id: cajaUsd.id, amount: -100 },
              { account_id: caja.accounts[0].id, amount: -110000 },
            ],
          },
        })
      ).body
    const seen = await trade(mine)
    const unseen = await trade(other)
    const mesa = await t.request('POST', '/api/mesas', {
      key: c.key,
      body: { name: 'Mesa USD', slug: `usd-${c.id}`, local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [caja.accounts[0].id, cajaUsd.id] },
    })
    expect(mesa.status).toBe(201)
    for (const op of [seen, unseen]) await t.request('POST', `/api/mesas/${mesa.body.id}/lines`, { key: c.key, body: { operation_id: op.id } })
    await t.request('POST', `/api/mesas/${mesa.body.id}/lines`, { key: c.key, body: { side: 'buy', local_amount: 1100, quote_amount: 1 } })
    expect((await t.request('GET', `/api/mesas/${mesa.body.id}/lines`, { key: c.key })).body.data).toHaveLength(3)

    const scoped = await c.employee(['clients.view', 'mesas.view', 'operations.view'], [mine.id])
    const list = await t.request('GET', '/api/clients', { key: scoped.key })
    expect(list.body.data.map((x: { id: number }) => x.id)).toEqual([mine.id])
    expect(list.body.count).toBe(1)
    expect((await t.request('GET', `/api/clients/${mine.id}`, { key: scoped.key })).status).toBe(200)
    expect((await t.request('GET', `/api/clients/${other.id}`, { key: scoped.key })).status).toBe(404)
    expect((await t.request('GET', `/api/clients/${caja.id}`, { key: scoped.key })).status).toBe(404)
    expect((await t.request('GET', '/api/balances', { key: scoped.key })).body.data).toEqual([{ currency: 'USD', cajas: 0, accounts: 100 }])
    const lines = await t.request('GET', `/api/mesas/${mesa.body.id}/lines`, { key: scoped.key })
    expect(lines.body.data.map((l: { operation_id: number | null }) => l.operation_id)).toEqual([seen.id])
    const suggestions = await t.request('GET', `/api/mesas/${mesa.body.id}/suggestions`, { key: scoped.key })
    expect(suggestions.status).toBe(200)
    expect(suggestions.body.data.every((s: { operation_id: number }) => s.operation_id === seen.id)).toBe(true)
  })
})

describe('superadmin token age', () => {
  const sign = (claims: Record<string, unknown>) =>
    new SignJWT({ email: SUPERADMIN_EMAIL, ...claims }).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode(SUPERADMIN_SECRET))
  test('iat more than 60 s ahead, a lifetime over 24 h, or no iat → 401; within the bounds → served', async () => {
    const t = await testApp()
    const now = Math.floor(Date.now() / 1000)
    const cases: [Record<string, unknown>, number][] = [
      [{ iat: now, exp: now + 300 }, 201],
      [{ iat: now + 30, exp: now + 300 }, 201],
      [{ iat: now - 3600, exp: now + 23 * 3600 }, 201],
      [{ iat: now + 120, exp: now + 300 }, 401],
      [{ iat: now, exp: now + 24 * 3600 + 1 }, 401],
      [{ iat: now, exp: now + 100 * 365 * 24 * 3600 }, 401],
      [{ exp: now + 300 }, 401],
    ]
    for (const [claims, status] of cases) {
      const res = await t.request('POST', '/api/superadmin/companies', { bearer: await sign(claims), body: { name: `Edad ${JSON.stringify(claims)}` } })
      expect({ claims, status: res.status }).toEqual({ claims, status })
      if (status === 401) expect(res.body.code).toBe('UNAUTHORIZED')
    }
  })
})

describe('kiosk page', () => {
  test('GET /kiosk/{token} is 404 for an unknown or revoked token, 200 for a live one', async () => {
    const t = await testApp()
    const c = await t.newCompany({ ventanilla: true })
    const tok = await t.request('POST', '/api/ventanilla/tokens', { key: c.key, body: { name: 'TV' } })
    const page = (token: string) => t.app.handle(new Request(`http://fos.test/kiosk/${token}`))
    const live = await page(tok.body.token)
    expect([200, 503]).toContain(live.status)
    if (live.status === 503) return console.log('[kiosk] app not built: only the build check ran')
    expect((await page('vtk_000000000000_unknown')).status).toBe(404)
    expect((await page('not-a-token')).status).toBe(404)
    await t.request('DELETE', `/api/ventanilla/tokens/${tok.body.id}`, { key: c.key })
    expect((await page(tok.body.token)).status).toBe(404)
  })
})

describe('exports bounded per company', () => {
  test('EXPORTS_PER_COMPANY at once (429 with Retry-After past it, other companies unaffected); EXPORT_MAX_ROWS per export (400, narrow the range)', async () => {
    const t = await buildTestApp({ exports: { poolMax: 2, perCompany: 1, maxRows: 3, statementTimeoutMs: 60_000, restPercent: 0 } })
    const setup = async () => {
      const c = await t.newCompany()
      const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Mov', kind: 'other' } })
      const client = await t.request('POST', '/api/clients', { key: c.key, body: { name: 'Externo', type: 1, accounts: [{ currency_name: 'USD' }] } })
      return { c, typeId: type.body.id as number, client: client.body as { id: number; accounts: { id: number }[] } }
    }
    const a = await setup()
    const b = await setup()
    for (let i = 0; i < 3; i++)
      await t.request('POST', '/api/operations', {
        key: a.c.key,
        body: { operation_type_id: a.typeId, status: 'completed', transactions: [{ account_id: a.client.accounts[0].id, amount: i + 1 }] },
      })
    const statement = (s: typeof a, query = '') =>
      t.app.handle(new Request(`http://fos.test/api/external/clients/${s.client.id}/statement${query}`, { headers: { 'x-api-key': s.c.key } }))

    const open = await statement(a, '?format=csv')
    expect(open.status).toBe(200)
    const busy = await statement(a)
    expect(busy.status).toBe(429)
    expect(busy.headers.get('retry-after')).toBeTruthy()
    expect((await busy.json()).code).toBe('RATE_LIMITED')
    expect((await statement(b)).status).toBe(200)
    await open.text()
    const whole = await statement(a)
    expect(whole.status).toBe(200)
    expect((await whole.json()).accounts[0].transactions).toHaveLength(3)

    await t.request('POST', '/api/operations', {
      key: a.c.key,
      body: { operation_type_id: a.typeId, status: 'completed', transactions: [{ account_id: a.client.accounts[0].id, amount: 4 }] },
    })
    const tooMany = await statement(a)
    expect(tooMany.status).toBe(400)
    expect(await tooMany.json()).toEqual({ error: expect.stringContaining('narrow'), code: 'VALIDATION_ERROR', details: [{ field: 'from', message: expect.any(String) }] })
    expect((await statement(a, '?format=csv')).status).toBe(400)
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)
    expect((await statement(a, `?from=${tomorrow}`)).status).toBe(200)
  })
})
