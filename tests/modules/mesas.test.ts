import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'

// Opening the shared app runs the migrations, which on embedded PGlite takes longer than one test's budget.
beforeAll(async () => {
  await testApp()
}, 120_000)

interface Desk {
  t: TestApp
  c: Company
  /** caja (type 0) accounts */
  ars: number
  usd: number
  eur: number
  /** a second caja, for a second mesa */
  ars2: number
  usd2: number
  /** external counterparty accounts */
  extArs: number
  extUsd: number
  typeId: number
  commissionTypeId: number
}

async function clientRecord(t: TestApp, c: Company, type: 0 | 1, currencies: string[]) {
  const r = await t.request('POST', '/api/clients', {
    key: c.key,
    body: { name: `C${type}-${currencies.join('')}`, type, accounts: currencies.map((currency_name) => ({ currency_name })) },
  })
  expect(r.status).toBe(201)
  return { id: r.body.id as number, accounts: (r.body.accounts as { id: number }[]).map((a) => a.id) }
}

const client = async (t: TestApp, c: Company, type: 0 | 1, currencies: string[]) => (await clientRecord(t, c, type, currencies)).accounts

async function desk(opts: { mesas?: boolean } = {}): Promise<Desk> {
  const t = await testApp()
  const c = await t.newCompany({ mesas: opts.mesas ?? true })
  const [ars, usd, eur] = await client(t, c, 0, ['ARS', 'USD', 'EUR'])
  const [ars2, usd2] = await client(t, c, 0, ['ARS', 'USD'])
  const [extArs, extUsd] = await client(t, c, 1, ['ARS', 'USD'])
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Cambio', kind: 'exchange' } })
  expect(type.status).toBe(201)
  const comm = await t.request('POST', '/api/transaction-types', { key: c.key, body: { name: 'Comisión', is_commission: true } })
  expect(comm.status).toBe(201)
  return { t, c, ars, usd, eur, ars2, usd2, extArs, extUsd, typeId: type.body.id, commissionTypeId: comm.body.id }
}

async function mesa(d: Desk, body: Record<string, unknown> = {}) {
  const r = await d.t.request('POST', '/api/mesas', {
    key: d.c.key,
    body: { name: 'Mesa USD', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [d.ars, d.usd], ...body },
  })
  expect(r.status).toBe(201)
  return r.body as { id: number }
}

type Leg = { account_id: number; amount: string | number; transaction_type_id?: number }

async function operation(d: Desk, transactions: Leg[], status: 'pending' | 'completed' = 'completed') {
  const r = await d.t.request('POST', '/api/operations', { key: d.c.key, body: { operation_type_id: d.typeId, status, transactions } })
  expect(r.status).toBe(201)
  return r.body.id as number
}

/** The house buys `usd` dollars at `fx`: dollars come into the caja, pesos leave it. */
const buyLegs = (d: Desk, usd: string, ars: string): Leg[] => [
  { account_id: d.usd, amount: usd },
  { account_id: d.ars, amount: `-${ars}` },
  { account_id: d.extUsd, amount: `-${usd}` },
  { account_id: d.extArs, amount: ars },
]
const sellLegs = (d: Desk, usd: string, ars: string): Leg[] => [
  { account_id: d.usd, amount: `-${usd}` },
  { account_id: d.ars, amount: ars },
  { account_id: d.extUsd, amount: usd },
  { account_id: d.extArs, amount: `-${ars}` },
]

const lines = async (d: Desk, mesaId: number) => (await d.t.request('GET', `/api/mesas/${mesaId}/lines`, { key: d.c.key })).body.data as any[]

describe('mesas: module flag, auth and permissions', () => {
  test('every mesa route answers 403 MESAS_DISABLED while the module is off, before validating anything', async () => {
    const d = await desk({ mesas: false })
    const routes: [string, string, unknown?][] = [
      ['POST', '/api/mesas', { name: 'x' }],
      ['GET', '/api/mesas'],
      ['GET', '/api/mesas/1'],
      ['PATCH', '/api/mesas/1', { name: 'y' }],
      ['DELETE', '/api/mesas/1'],
      ['GET', '/api/mesas/1/infer?operation_id=1'],
      ['POST', '/api/mesas/1/infer', { operation_id: 1 }],
      ['GET', '/api/mesas/1/lines'],
      ['POST', '/api/mesas/1/lines', { side: 'buy' }],
      ['DELETE', '/api/mesas/1/lines/2'],
      ['GET', '/api/mesas/1/suggestions'],
      ['GET', '/api/mesas/1/position'],
    ]
    for (const [method, path, body] of routes) {
      const r = await d.t.request(method, path, { key: d.c.key, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 403, 'MESAS_DISABLED'])
      expect(typeof r.body.error).toBe('string')
    }
    const anonymous = await d.t.request('GET', '/api/mesas')
    expect(anonymous.status).toBe(401)
    expect(anonymous.body.code).toBe('UNAUTHORIZED')

    // Enabled by the superadmin, the same key works.
    const token = await d.t.superToken()
    await d.t.request('PATCH', `/api/superadmin/companies/${d.c.id}`, { bearer: token, body: { modules: { mesas: true } } })
    expect((await d.t.request('GET', '/api/mesas', { key: d.c.key })).body).toEqual({ data: [] })
  })

  test('the OpenAPI document describes every mesa route', async () => {
    const t = await testApp()
    const doc = await t.request('GET', '/openapi.json')
    expect(doc.status).toBe(200)
    const paths = doc.body.paths as Record<string, Record<string, unknown>>
    const mesaRoutes = Object.entries(paths)
      .filter(([p]) => p.startsWith('/api/mesas'))
      .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`))
      .sort()
    expect(mesaRoutes).toEqual(
      [
        'GET /api/mesas',
        'POST /api/mesas',
        'GET /api/mesas/{id}',
        'PATCH /api/mesas/{id}',
        'DELETE /api/mesas/{id}',
        'GET /api/mesas/{id}/infer',
        'POST /api/mesas/{id}/infer',
        'GET /api/mesas/{id}/lines',
        'POST /api/mesas/{id}/lines',
        'DELETE /api/mesas/{id}/lines/{lineId}',
        'GET /api/mesas/{id}/suggestions',
        'GET /api/mesas/{id}/position',
      ].sort(),
    )
  })

  test('mesas.view reads, mesas.manage writes, nothing else gets in', async () => {
    const d = await desk()
    const m = await mesa(d)
    const viewer = await d.c.employee(['mesas.view'])
    const manager = await d.c.employee(['mesas.manage'])
    const outsider = await d.c.employee(['operations.view'])
    for (const path of [`/api/mesas`, `/api/mesas/${m.id}`, `/api/mesas/${m.id}/lines`, `/api/mesas/${m.id}/position`, `/api/mesas/${m.id}/suggestions`])
      expect((await d.t.request('GET', path, { key: viewer.key })).status).toBe(200)
    const viewerWrite = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: viewer.key, body: { side: 'buy', local_amount: 10, quote_amount: 1 } })
    expect(viewerWrite.status).toBe(403)
    expect(viewerWrite.body.code).toBe('FORBIDDEN')
    expect((await d.t.request('DELETE', `/api/mesas/${m.id}`, { key: viewer.key })).status).toBe(403)
    const outsiderRead = await d.t.request('GET', `/api/mesas/${m.id}`, { key: outsider.key })
    expect(outsiderRead.status).toBe(403)
    expect(outsiderRead.body.code).toBe('FORBIDDEN')
    // The permission is checked before the body or query is validated: an incomplete request is still 403.
    const refused: [string, string, { key: string }, unknown?][] = [
      ['POST', '/api/mesas', viewer, { name: 'x' }],
      ['PATCH', `/api/mesas/${m.id}`, viewer, { name: '' }],
      ['POST', `/api/mesas/${m.id}/lines`, viewer, {}],
      ['GET', `/api/mesas/${m.id}/infer?operation_id=abc`, outsider],
      ['POST', `/api/mesas/${m.id}/infer`, outsider, { operation_id: 'abc' }],
    ]
    for (const [method, path, who, body] of refused) {
      const r = await d.t.request(method, path, { key: who.key, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 403, 'FORBIDDEN'])
    }
    // POST infer only reads, so mesas.view is enough for it.
    const viewerInfer = await d.t.request('POST', `/api/mesas/${m.id}/infer`, { key: viewer.key, body: {} })
    expect(viewerInfer.status).toBe(400)
    expect(viewerInfer.body.code).toBe('VALIDATION_ERROR')

    const created = await d.t.request('POST', '/api/mesas', {
      key: manager.key,
      body: { name: 'Mesa EUR', local_currency: 'ARS', quote_currency: 'EUR', costing_method: 'wac', account_ids: [d.eur] },
    })
    expect(created.status).toBe(201)
    expect(created.body.created_by).toBe(manager.id)
    const line = await d.t.request('POST', `/api/mesas/${created.body.id}/lines`, { key: manager.key, body: { side: 'buy', local_amount: 10, quote_amount: 1 } })
    expect(line.status).toBe(201)
    expect(line.body.created_by).toBe(manager.id)
  })
})

describe('mesas: create, read, update, delete', () => {
  test('create answers 201 with the mesa, its defaults and its accounts', async () => {
    const d = await desk()
    const r = await d.t.request('POST', '/api/mesas', {
      key: d.c.key,
      body: { name: 'Mesa USD', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [d.usd, d.ars] },
    })
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({
      company_id: d.c.id,
      name: 'Mesa USD',
      local_currency: 'ARS',
      quote_currency: 'USD',
      costing_method: 'fifo',
      account_ids: [d.ars, d.usd].sort((a, b) => a - b),
      quote_direction: 'quote',
      blotter_feed_mode: 'manual',
      include_pending_legs: false,
      created_by: null,
      deleted_at: null,
    })
    expect(r.body.created_at).toMatch(/Z$/)
    expect(r.body.updated_at).toMatch(/Z$/)

    const full = await d.t.request('POST', '/api/mesas', {
      key: d.c.key,
      body: {
        name: 'Mesa 2',
        local_currency: 'ARS',
        quote_currency: 'USD',
        costing_method: 'wac',
        account_ids: [d.usd2],
        quote_direction: 'local',
        blotter_feed_mode: 'auto',
        include_pending_legs: true,
      },
    })
    expect(full.status).toBe(201)
    expect(full.body).toMatchObject({ quote_direction: 'local', blotter_feed_mode: 'auto', include_pending_legs: true, costing_method: 'wac' })

    const listed = await d.t.request('GET', '/api/mesas', { key: d.c.key })
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((m: any) => m.id)).toEqual([r.body.id, full.body.id])
    const one = await d.t.request('GET', `/api/mesas/${r.body.id}`, { key: d.c.key })
    expect(one.body).toEqual(r.body)
  })

  test('every create validation answers its own status and code', async () => {
    const d = await desk()
    const other = await desk()
    const base = { name: 'M', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [d.ars] }
    const post = (body: unknown) => d.t.request('POST', '/api/mesas', { key: d.c.key, body })

    const cases: [unknown, number, string][] = [
      [{ ...base, quote_currency: 'ARS' }, 422, 'CURRENCIES_MUST_DIFFER'],
      [{ ...base, quote_currency: 'ars' }, 422, 'CURRENCIES_MUST_DIFFER'],
      [{ ...base, account_ids: [d.extArs] }, 422, 'ACCOUNT_NOT_INTERNAL'],
      [{ ...base, account_ids: [d.eur] }, 422, 'ACCOUNT_CURRENCY_MISMATCH'],
      [{ ...base, account_ids: [2147483000] }, 422, 'UNKNOWN_ACCOUNT'],
      [{ ...base, account_ids: [other.ars] }, 422, 'UNKNOWN_ACCOUNT'],
      [{ ...base, costing_method: undefined }, 400, 'VALIDATION_ERROR'],
      [{ ...base, costing_method: 'lifo' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, account_ids: [] }, 400, 'VALIDATION_ERROR'],
      [{ ...base, account_ids: [d.ars, d.ars] }, 400, 'VALIDATION_ERROR'],
      [{ ...base, name: undefined }, 400, 'VALIDATION_ERROR'],
      [{ ...base, quote_direction: 'up' }, 400, 'VALIDATION_ERROR'],
      [{ ...base, blotter_feed_mode: 'sometimes' }, 400, 'VALIDATION_ERROR'],
    ]
    for (const [body, status, code] of cases) {
      const r = await post(body)
      expect([JSON.stringify(body), r.status, r.body.code]).toEqual([JSON.stringify(body), status, code])
    }
    // Nothing above was created, so the account is still free.
    expect((await post(base)).status).toBe(201)
    const taken = await post({ ...base, name: 'M2', account_ids: [d.usd, d.ars] })
    expect(taken.status).toBe(409)
    expect(taken.body.code).toBe('ACCOUNT_IN_OTHER_MESA')
    expect((await d.t.request('GET', '/api/mesas', { key: d.c.key })).body.data).toHaveLength(1)
  })

  test('PATCH updates settings and accounts; DELETE is soft and frees the accounts', async () => {
    const d = await desk()
    const m = await mesa(d)
    const patched = await d.t.request('PATCH', `/api/mesas/${m.id}`, {
      key: d.c.key,
      body: { name: 'Mesa Dólar', costing_method: 'wac', quote_direction: 'local', include_pending_legs: true, account_ids: [d.usd] },
    })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ id: m.id, name: 'Mesa Dólar', costing_method: 'wac', quote_direction: 'local', include_pending_legs: true, account_ids: [d.usd] })
    expect((await d.t.request('GET', `/api/mesas/${m.id}`, { key: d.c.key })).body).toEqual(patched.body)

    // The peso account it let go can join another mesa; the dollar account it kept cannot.
    const second = await mesa(d, { name: 'Otra', account_ids: [d.ars] })
    const steal = await d.t.request('PATCH', `/api/mesas/${second.id}`, { key: d.c.key, body: { account_ids: [d.ars, d.usd] } })
    expect(steal.status).toBe(409)
    expect(steal.body.code).toBe('ACCOUNT_IN_OTHER_MESA')
    const badPatches: [unknown, number, string][] = [
      [{ quote_currency: 'ARS' }, 422, 'CURRENCIES_MUST_DIFFER'],
      [{ local_currency: 'EUR' }, 422, 'ACCOUNT_CURRENCY_MISMATCH'],
      [{ costing_method: 'avg' }, 400, 'VALIDATION_ERROR'],
      [{ account_ids: [d.eur] }, 422, 'ACCOUNT_CURRENCY_MISMATCH'],
      [{ account_ids: [d.extUsd] }, 422, 'ACCOUNT_NOT_INTERNAL'],
    ]
    for (const [body, status, code] of badPatches) {
      const r = await d.t.request('PATCH', `/api/mesas/${second.id}`, { key: d.c.key, body })
      expect([r.status, r.body.code]).toEqual([status, code])
    }
    // Currencies can change while the blotter is empty, not after.
    const eurDesk = await mesa(d, { name: 'EUR', quote_currency: 'EUR', account_ids: [d.eur] })
    const renamed = await d.t.request('PATCH', `/api/mesas/${eurDesk.id}`, { key: d.c.key, body: { local_currency: 'USD', account_ids: [d.eur, d.usd2] } })
    expect(renamed.status).toBe(200)
    expect(renamed.body).toMatchObject({ local_currency: 'USD', quote_currency: 'EUR', account_ids: [d.eur, d.usd2].sort((a, b) => a - b) })
    await d.t.request('POST', `/api/mesas/${eurDesk.id}/lines`, { key: d.c.key, body: { side: 'buy', local_amount: 11, quote_amount: 10 } })
    const locked = await d.t.request('PATCH', `/api/mesas/${eurDesk.id}`, { key: d.c.key, body: { local_currency: 'ARS', account_ids: [d.eur] } })
    expect([locked.status, locked.body.code]).toEqual([409, 'CONFLICT'])

    const del = await d.t.request('DELETE', `/api/mesas/${m.id}`, { key: d.c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    for (const [method, path] of [
      ['GET', `/api/mesas/${m.id}`],
      ['PATCH', `/api/mesas/${m.id}`],
      ['DELETE', `/api/mesas/${m.id}`],
      ['GET', `/api/mesas/${m.id}/lines`],
      ['GET', `/api/mesas/${m.id}/position`],
    ]) {
      const r = await d.t.request(method, path, { key: d.c.key, body: method === 'PATCH' ? { name: 'z' } : undefined })
      expect([path, r.status, r.body.code]).toEqual([path, 404, 'NOT_FOUND'])
    }
    expect((await d.t.request('GET', '/api/mesas', { key: d.c.key })).body.data.map((x: any) => x.id)).toEqual([second.id, eurDesk.id])
    const reuse = await d.t.request('PATCH', `/api/mesas/${second.id}`, { key: d.c.key, body: { account_ids: [d.ars, d.usd] } })
    expect(reuse.status).toBe(200)
    expect(reuse.body.account_ids).toEqual([d.ars, d.usd].sort((a, b) => a - b))
  })

  test('another company sees 404 on every route of a mesa; bad ids are 400', async () => {
    const d = await desk()
    const other = await desk()
    const m = await mesa(d)
    const fab = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { side: 'buy', local_amount: 1000, quote_amount: 1 } })
    const op = await operation(other, buyLegs(other, '10', '10000'))
    const routes: [string, string, unknown?][] = [
      ['GET', `/api/mesas/${m.id}`],
      ['PATCH', `/api/mesas/${m.id}`, { name: 'mine' }],
      ['DELETE', `/api/mesas/${m.id}`],
      ['GET', `/api/mesas/${m.id}/infer?operation_id=${op}`],
      ['POST', `/api/mesas/${m.id}/infer`, { operation_id: op }],
      ['GET', `/api/mesas/${m.id}/lines`],
      ['POST', `/api/mesas/${m.id}/lines`, { side: 'buy', local_amount: 1, quote_amount: 1 }],
      ['DELETE', `/api/mesas/${m.id}/lines/${fab.body.id}`],
      ['GET', `/api/mesas/${m.id}/suggestions`],
      ['GET', `/api/mesas/${m.id}/position`],
    ]
    for (const [method, path, body] of routes) {
      const r = await other.t.request(method, path, { key: other.c.key, body })
      expect([method, path, r.status, r.body.code]).toEqual([method, path, 404, 'NOT_FOUND'])
    }
    expect(await lines(d, m.id)).toHaveLength(1)
    expect((await d.t.request('GET', `/api/mesas/${m.id}`, { key: d.c.key })).body.name).toBe('Mesa USD')
    for (const path of ['/api/mesas/abc', '/api/mesas/0', `/api/mesas/${m.id}/lines/x`, '/api/mesas/99999999999/position']) {
      const r = await d.t.request(path.includes('/lines/') ? 'DELETE' : 'GET', path, { key: d.c.key })
      expect([path, r.status, r.body.code]).toEqual([path, 400, 'INVALID_ID'])
    }
  })

  test('Idempotency-Key replays the create instead of failing on the taken account', async () => {
    const d = await desk()
    const body = { name: 'M', local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [d.ars] }
    const headers = { 'idempotency-key': 'mesa-1' }
    const first = await d.t.request('POST', '/api/mesas', { key: d.c.key, body, headers })
    const again = await d.t.request('POST', '/api/mesas', { key: d.c.key, body, headers })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.body.id).toBe(first.body.id)
    const changed = await d.t.request('POST', '/api/mesas', { key: d.c.key, body: { ...body, name: 'N' }, headers })
    expect(changed.status).toBe(409)
    expect(changed.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
  })

  postgresTest('two concurrent creates cannot both take one account: one 201, one 409', async () => {
    const d = await desk()
    for (let round = 0; round < 5; round++) {
      const [acc] = await client(d.t, d.c, 0, ['USD'])
      const make = (name: string) =>
        d.t.request('POST', '/api/mesas', {
          key: d.c.key,
          body: { name, local_currency: 'ARS', quote_currency: 'USD', costing_method: 'fifo', account_ids: [acc] },
        })
      const results = await Promise.all([make('A'), make('B'), make('C')])
      const statuses = results.map((r) => r.status).sort()
      expect(statuses).toEqual([201, 409, 409])
      for (const r of results.filter((x) => x.status === 409)) expect(r.body.code).toBe('ACCOUNT_IN_OTHER_MESA')
      const [{ live }] = await d.t.ctx.database.rows<{ live: number }>(
        sql`select count(*)::int as live from mesa_accounts where account_id = ${acc} and released_at is null`,
      )
      expect(live).toBe(1)
    }
  })
})

describe('mesas: infer', () => {
  test('GET and POST, from the query or the body, give one answer; commission legs are left out', async () => {
    const d = await desk()
    const m = await mesa(d)
    const op = await operation(d, [
      ...buyLegs(d, '100', '123456.78'),
      { account_id: d.ars, amount: '-500', transaction_type_id: d.commissionTypeId },
    ])
    const viaGet = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${op}`, { key: d.c.key })
    expect(viaGet.status).toBe(200)
    expect(viaGet.body.operationId).toBe(op)
    expect(viaGet.body.suggestion).toEqual({ side: 'buy', localAmount: 123456.78, quoteAmount: 100, fx: 1234.5678, fallback: false })
    expect(viaGet.body.legs.map((l: any) => [l.account_id, l.amount]).sort()).toEqual(
      [
        [d.ars, -123456.78],
        [d.usd, 100],
      ].sort(),
    )
    const viaPostQuery = await d.t.request('POST', `/api/mesas/${m.id}/infer?operation_id=${op}`, { key: d.c.key })
    const viaPostBody = await d.t.request('POST', `/api/mesas/${m.id}/infer`, { key: d.c.key, body: { operation_id: op } })
    expect(viaPostQuery.status).toBe(200)
    expect(viaPostBody.status).toBe(200)
    expect(viaPostQuery.body).toEqual(viaGet.body)
    expect(viaPostBody.body).toEqual(viaGet.body)
    // Inference writes nothing.
    expect(await lines(d, m.id)).toEqual([])
  })

  test('side follows quote_direction; fx is exact; several legs net per currency with fallback', async () => {
    const d = await desk()
    const m = await mesa(d)
    const sell = await operation(d, sellLegs(d, '0.3', '100.1'))
    const r = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${sell}`, { key: d.c.key })
    expect(r.body.suggestion).toEqual({ side: 'sell', localAmount: 100.1, quoteAmount: 0.3, fx: 333.6666666666667, fallback: false })

    await d.t.request('PATCH', `/api/mesas/${m.id}`, { key: d.c.key, body: { quote_direction: 'local' } })
    const flipped = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${sell}`, { key: d.c.key })
    expect(flipped.body.suggestion.side).toBe('buy')

    const split = await operation(d, [
      { account_id: d.usd, amount: '60' },
      { account_id: d.usd, amount: '40' },
      { account_id: d.ars, amount: '-100000' },
      { account_id: d.extUsd, amount: '-100' },
      { account_id: d.extArs, amount: '100000' },
    ])
    const netted = await d.t.request('POST', `/api/mesas/${m.id}/infer`, { key: d.c.key, body: { operation_id: split } })
    expect(netted.body.suggestion).toEqual({ side: 'sell', localAmount: 100000, quoteAmount: 100, fx: 1000, fallback: true })
    expect(netted.body.legs).toHaveLength(3)
  })

  test('status paths: 400 without operation_id, 404 unknown or foreign operation, 422 without trade legs', async () => {
    const d = await desk()
    const other = await desk()
    const m = await mesa(d)
    const missing = await d.t.request('GET', `/api/mesas/${m.id}/infer`, { key: d.c.key })
    expect([missing.status, missing.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const missingPost = await d.t.request('POST', `/api/mesas/${m.id}/infer`, { key: d.c.key, body: {} })
    expect([missingPost.status, missingPost.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const garbage = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=abc`, { key: d.c.key })
    expect([garbage.status, garbage.body.code]).toEqual([400, 'VALIDATION_ERROR'])
    const unknown = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=2147483000`, { key: d.c.key })
    expect([unknown.status, unknown.body.code]).toEqual([404, 'NOT_FOUND'])
    const foreignOp = await operation(other, buyLegs(other, '1', '1000'))
    const foreign = await d.t.request('POST', `/api/mesas/${m.id}/infer`, { key: d.c.key, body: { operation_id: foreignOp } })
    expect([foreign.status, foreign.body.code]).toEqual([404, 'NOT_FOUND'])

    // Only the dollar side touches the mesa.
    const oneSided = await operation(d, [
      { account_id: d.usd, amount: '10' },
      { account_id: d.extUsd, amount: '-10' },
    ])
    const noLegs = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${oneSided}`, { key: d.c.key })
    expect([noLegs.status, noLegs.body.code]).toEqual([422, 'NO_TRADE_LEGS'])
    // Pending legs do not count until the mesa says so.
    const pending = await operation(d, buyLegs(d, '10', '10000'), 'pending')
    const notYet = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${pending}`, { key: d.c.key })
    expect([notYet.status, notYet.body.code]).toEqual([422, 'NO_TRADE_LEGS'])
    await d.t.request('PATCH', `/api/mesas/${m.id}`, { key: d.c.key, body: { include_pending_legs: true } })
    const counted = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${pending}`, { key: d.c.key })
    expect(counted.status).toBe(200)
    expect(counted.body.legs.every((l: any) => l.status === 'pending')).toBe(true)
    // A cancelled operation never counts.
    await d.t.request('POST', `/api/operations/${pending}/cancel`, { key: d.c.key })
    const cancelled = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${pending}`, { key: d.c.key })
    expect([cancelled.status, cancelled.body.code]).toEqual([422, 'NO_TRADE_LEGS'])
  })

  test('an employee limited to clients cannot infer from operations outside their scope', async () => {
    const d = await desk()
    const m = await mesa(d)
    const op = await operation(d, buyLegs(d, '1', '1000'))
    const unrelated = await clientRecord(d.t, d.c, 1, ['ARS'])
    const emp = await d.c.employee(['mesas.view'], [unrelated.id])
    const r = await d.t.request('GET', `/api/mesas/${m.id}/infer?operation_id=${op}`, { key: emp.key })
    expect([r.status, r.body.code]).toEqual([404, 'NOT_FOUND'])
    expect((await d.t.request('GET', `/api/mesas/${m.id}/suggestions`, { key: emp.key })).body).toEqual({ data: [] })
  })
})

describe('mesas: blotter lines and suggestions', () => {
  test('confirm a suggestion, fabricate a line, delete lines without touching operations or balances', async () => {
    const d = await desk()
    const m = await mesa(d)
    const op = await operation(d, buyLegs(d, '100', '100000'))
    const balances = async () => (await d.t.request('GET', '/api/balances', { key: d.c.key })).body
    const opBefore = (await d.t.request('GET', `/api/operations/${op}`, { key: d.c.key })).body

    const confirmed = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: op } })
    expect(confirmed.status).toBe(201)
    expect(confirmed.body).toMatchObject({
      mesa_id: m.id,
      operation_id: op,
      side: 'buy',
      local_amount: 100000,
      quote_amount: 100,
      fx: 1000,
      source: 'manual',
      match_kind: 'exact',
      created_by: null,
    })
    expect(confirmed.body.traded_at).toBe(opBefore.date)
    const twice = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: op } })
    expect(twice.status).toBe(409)

    const fabricated = await d.t.request('POST', `/api/mesas/${m.id}/lines`, {
      key: d.c.key,
      body: { side: 'sell', local_amount: '50000.5', quote_amount: 40, traded_at: '2030-01-02T03:04:05.000Z' },
    })
    expect(fabricated.status).toBe(201)
    expect(fabricated.body).toMatchObject({
      operation_id: null,
      side: 'sell',
      local_amount: 50000.5,
      quote_amount: 40,
      fx: 1250.0125,
      source: 'fabricated',
      match_kind: null,
      traded_at: '2030-01-02T03:04:05.000Z',
    })
    expect((await lines(d, m.id)).map((l) => l.id)).toEqual([confirmed.body.id, fabricated.body.id])

    for (const body of [
      { side: 'buy', local_amount: -1, quote_amount: 1 },
      { side: 'buy', local_amount: 1, quote_amount: 0 },
      { side: 'buy', local_amount: 1, quote_amount: '0.0000001' },
      { side: 'hold', local_amount: 1, quote_amount: 1 },
      { side: 'buy', local_amount: 'ten', quote_amount: 1 },
      { side: 'buy', local_amount: 1 },
      { operation_id: 'x' },
      { side: 'buy', local_amount: 1, quote_amount: 1, traded_at: 'yesterday' },
    ]) {
      const r = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body })
      expect([JSON.stringify(body), r.status, r.body.code]).toEqual([JSON.stringify(body), 400, 'VALIDATION_ERROR'])
    }
    const unknownOp = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: 2147483000 } })
    expect([unknownOp.status, unknownOp.body.code]).toEqual([404, 'NOT_FOUND'])
    const oneSided = await operation(d, [
      { account_id: d.usd, amount: '5' },
      { account_id: d.extUsd, amount: '-5' },
    ])
    const noLegs = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: oneSided } })
    expect([noLegs.status, noLegs.body.code]).toEqual([422, 'NO_TRADE_LEGS'])

    const opBeforeDelete = (await d.t.request('GET', `/api/operations/${op}`, { key: d.c.key })).body
    const balancesBefore = await balances()
    const del = await d.t.request('DELETE', `/api/mesas/${m.id}/lines/${confirmed.body.id}`, { key: d.c.key })
    expect(del.status).toBe(200)
    expect(del.body).toEqual({ deleted: true })
    const delFab = await d.t.request('DELETE', `/api/mesas/${m.id}/lines/${fabricated.body.id}`, { key: d.c.key })
    expect(delFab.body).toEqual({ deleted: true })
    const gone = await d.t.request('DELETE', `/api/mesas/${m.id}/lines/${fabricated.body.id}`, { key: d.c.key })
    expect([gone.status, gone.body.code]).toEqual([404, 'NOT_FOUND'])
    expect(await lines(d, m.id)).toEqual([])
    expect((await d.t.request('GET', `/api/operations/${op}`, { key: d.c.key })).body).toEqual(opBeforeDelete)
    expect(await balances()).toEqual(balancesBefore)
  })

  test('a line of one mesa cannot be deleted through another', async () => {
    const d = await desk()
    const a = await mesa(d)
    const b = await mesa(d, { account_ids: [d.usd2] })
    const line = await d.t.request('POST', `/api/mesas/${a.id}/lines`, { key: d.c.key, body: { side: 'buy', local_amount: 1, quote_amount: 1 } })
    const r = await d.t.request('DELETE', `/api/mesas/${b.id}/lines/${line.body.id}`, { key: d.c.key })
    expect([r.status, r.body.code]).toEqual([404, 'NOT_FOUND'])
    expect(await lines(d, a.id)).toHaveLength(1)
  })

  test('suggestions grade exact, fx_close and partial and leave out operations that have a line', async () => {
    const d = await desk()
    const m = await mesa(d)
    // Recent lines average fx 1000.
    for (const fx of ['990', '1010'])
      await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { side: 'buy', local_amount: fx, quote_amount: 1 } })
    const exact = await operation(d, buyLegs(d, '10', '10500'))
    const splitLegs = (ars: string): Leg[] => [
      { account_id: d.usd, amount: '4' },
      { account_id: d.usd, amount: '6' },
      { account_id: d.ars, amount: `-${ars}` },
      { account_id: d.extUsd, amount: '-10' },
      { account_id: d.extArs, amount: ars },
    ]
    const close = await operation(d, splitLegs('10150'))
    const far = await operation(d, splitLegs('10300'))
    const confirmed = await operation(d, buyLegs(d, '1', '1000'))
    expect((await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: confirmed } })).status).toBe(201)
    await operation(d, buyLegs(d, '2', '2000'), 'pending')
    await operation(d, [
      { account_id: d.usd, amount: '3' },
      { account_id: d.extUsd, amount: '-3' },
    ])

    const r = await d.t.request('GET', `/api/mesas/${m.id}/suggestions`, { key: d.c.key })
    expect(r.status).toBe(200)
    expect(r.body.data).toEqual([
      { operation_id: exact, match_kind: 'exact', suggestion: { side: 'buy', localAmount: 10500, quoteAmount: 10, fx: 1050, fallback: false } },
      { operation_id: close, match_kind: 'fx_close', suggestion: { side: 'buy', localAmount: 10150, quoteAmount: 10, fx: 1015, fallback: true } },
      { operation_id: far, match_kind: 'partial', suggestion: { side: 'buy', localAmount: 10300, quoteAmount: 10, fx: 1030, fallback: true } },
    ])
    const confirmedClose = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body: { operation_id: close } })
    expect(confirmedClose.body.match_kind).toBe('fx_close')
  })
})

describe('mesas: auto feed', () => {
  test('completed legs only: a line appears on approval and goes away on cancel', async () => {
    const d = await desk()
    const auto = await mesa(d, { blotter_feed_mode: 'auto' })
    const manual = await mesa(d, { account_ids: [d.ars2, d.usd2] })
    const op = await operation(d, buyLegs(d, '100', '100000'), 'pending')
    const manualOp = await operation(
      d,
      [
        { account_id: d.usd2, amount: '1' },
        { account_id: d.ars2, amount: '-1000' },
      ],
      'completed',
    )
    expect(await lines(d, auto.id)).toEqual([])

    expect((await d.t.request('POST', `/api/operations/${op}/approve`, { key: d.c.key })).status).toBe(200)
    const [line] = await lines(d, auto.id)
    expect(line).toMatchObject({ operation_id: op, source: 'auto', match_kind: 'exact', side: 'buy', local_amount: 100000, quote_amount: 100, fx: 1000, created_by: null })
    expect((await d.t.request('GET', `/api/mesas/${auto.id}/suggestions`, { key: d.c.key })).body.data).toEqual([])
    // A manual mesa only suggests.
    expect(await lines(d, manual.id)).toEqual([])
    expect((await d.t.request('GET', `/api/mesas/${manual.id}/suggestions`, { key: d.c.key })).body.data.map((s: any) => s.operation_id)).toEqual([manualOp])

    expect((await d.t.request('POST', `/api/operations/${op}/revert`, { key: d.c.key })).status).toBe(200)
    expect(await lines(d, auto.id)).toEqual([])
    expect((await d.t.request('POST', `/api/operations/${op}/approve`, { key: d.c.key })).status).toBe(200)
    expect(await lines(d, auto.id)).toHaveLength(1)
    expect((await d.t.request('POST', `/api/operations/${op}/cancel`, { key: d.c.key })).status).toBe(200)
    expect(await lines(d, auto.id)).toEqual([])
  })

  test('with include_pending_legs the line appears at once, approval keeps the same line, cancel drops it', async () => {
    const d = await desk()
    const auto = await mesa(d, { blotter_feed_mode: 'auto', include_pending_legs: true })
    const op = await operation(d, buyLegs(d, '100', '100000'), 'pending')
    const before = await lines(d, auto.id)
    expect(before).toHaveLength(1)
    expect(before[0]).toMatchObject({ operation_id: op, source: 'auto', match_kind: 'exact' })
    expect((await d.t.request('POST', `/api/operations/${op}/approve`, { key: d.c.key })).status).toBe(200)
    const after = await lines(d, auto.id)
    expect(after).toEqual(before)
    expect((await d.t.request('POST', `/api/operations/${op}/cancel`, { key: d.c.key })).status).toBe(200)
    expect(await lines(d, auto.id)).toEqual([])
  })

  test('the feed takes fx_close but not partial matches, and a manual line survives a cancel', async () => {
    const d = await desk()
    const auto = await mesa(d, { blotter_feed_mode: 'auto' })
    await operation(d, buyLegs(d, '1', '1000'))
    const split = (ars: string): Leg[] => [
      { account_id: d.usd, amount: '4' },
      { account_id: d.usd, amount: '6' },
      { account_id: d.ars, amount: `-${ars}` },
    ]
    const close = await operation(d, split('10100'))
    const far = await operation(d, split('20000'))
    const fed = await lines(d, auto.id)
    expect(fed.map((l) => [l.operation_id, l.match_kind])).toEqual([
      [fed[0].operation_id, 'exact'],
      [close, 'fx_close'],
    ])
    const suggested = (await d.t.request('GET', `/api/mesas/${auto.id}/suggestions`, { key: d.c.key })).body.data
    expect(suggested.map((s: any) => [s.operation_id, s.match_kind])).toEqual([[far, 'partial']])
    const manual = await d.t.request('POST', `/api/mesas/${auto.id}/lines`, { key: d.c.key, body: { operation_id: far } })
    expect(manual.body.source).toBe('manual')
    await d.t.request('POST', `/api/operations/${far}/cancel`, { key: d.c.key })
    expect((await lines(d, auto.id)).map((l) => l.id)).toContain(manual.body.id)
  })

  test('switching a mesa to auto feeds what is already on its accounts', async () => {
    const d = await desk()
    const m = await mesa(d)
    const op = await operation(d, sellLegs(d, '5', '6000'))
    expect(await lines(d, m.id)).toEqual([])
    const r = await d.t.request('PATCH', `/api/mesas/${m.id}`, { key: d.c.key, body: { blotter_feed_mode: 'auto' } })
    expect(r.body.blotter_feed_mode).toBe('auto')
    expect((await lines(d, m.id)).map((l) => [l.operation_id, l.side, l.source])).toEqual([[op, 'sell', 'auto']])
  })
})

describe('mesas: position', () => {
  const trades = [
    { side: 'buy', local_amount: 100000, quote_amount: 100, traded_at: '2030-01-01T10:00:00.000Z' },
    { side: 'buy', local_amount: '110000', quote_amount: 100, traded_at: '2030-01-01T11:00:00.000Z' },
    { side: 'sell', local_amount: 180000, quote_amount: '150', traded_at: '2030-01-01T12:00:00.000Z' },
  ]

  async function withLines(method: 'fifo' | 'wac') {
    const d = await desk()
    const m = await mesa(d, { costing_method: method })
    // Posted out of order: the position replays by traded_at.
    for (const body of [trades[2], trades[0], trades[1]]) {
      const r = await d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body })
      expect(r.status).toBe(201)
    }
    return { d, m }
  }

  test('fifo: buy 100@1000, buy 100@1100, sell 150@1200 → realized 25000, 50 left at 1100', async () => {
    const { d, m } = await withLines('fifo')
    const r = await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })
    expect(r.status).toBe(200)
    expect(r.body).toMatchObject({ quote_position: 50, average_cost: 1100, realized_pnl: 25000 })
    expect(r.body.lots.map((l: any) => [l.quantity, l.price, l.cost])).toEqual([[50, 1100, 55000]])
  })

  test('wac: the same trades → average 1050, realized 22500, 50 left at 1050; switching method recomputes', async () => {
    const { d, m } = await withLines('wac')
    const r = await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })
    expect(r.body).toMatchObject({ costing_method: 'wac', quote_position: 50, average_cost: 1050, realized_pnl: 22500 })
    expect(r.body.lots).toEqual([{ line_id: null, quantity: 50, price: 1050, cost: 52500 }])
    await d.t.request('PATCH', `/api/mesas/${m.id}`, { key: d.c.key, body: { costing_method: 'fifo' } })
    expect((await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })).body.realized_pnl).toBe(25000)
  })

  test('an empty blotter is flat; selling past zero goes short; quote_direction local reads the words the other way', async () => {
    const d = await desk()
    const m = await mesa(d)
    expect((await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })).body).toEqual({
      costing_method: 'fifo',
      quote_position: 0,
      average_cost: null,
      realized_pnl: 0,
      lots: [],
    })
    const post = (body: unknown) => d.t.request('POST', `/api/mesas/${m.id}/lines`, { key: d.c.key, body })
    await post({ side: 'buy', local_amount: 1000, quote_amount: 1, traded_at: '2030-01-01T00:00:00Z' })
    await post({ side: 'sell', local_amount: 3300, quote_amount: 3, traded_at: '2030-01-02T00:00:00Z' })
    const short = (await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })).body
    expect(short).toMatchObject({ quote_position: -2, average_cost: 1100, realized_pnl: 100 })
    await post({ side: 'buy', local_amount: 2000, quote_amount: 2, traded_at: '2030-01-03T00:00:00Z' })
    const covered = (await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })).body
    expect(covered).toMatchObject({ quote_position: 0, average_cost: null, realized_pnl: 300, lots: [] })

    await d.t.request('PATCH', `/api/mesas/${m.id}`, { key: d.c.key, body: { quote_direction: 'local' } })
    const mirrored = (await d.t.request('GET', `/api/mesas/${m.id}/position`, { key: d.c.key })).body
    // Every line now moves the quote currency the other way: long 1 @1000 becomes short 1 received 1000, and so on.
    expect(mirrored).toMatchObject({ quote_position: 0, realized_pnl: -300 })
  })
})
