import { beforeAll, describe, expect, test } from 'bun:test'
import { postgresTest, testApp, type Company, type TestApp } from '../helpers'

// The first use builds the shared app and migrates its database, which can take a while on PGlite.
beforeAll(async () => {
  await testApp()
}, 120_000)

async function client(t: TestApp, c: Company, name: string, type: 0 | 1, currencies: string[]) {
  const res = await t.request('POST', '/api/clients', { key: c.key, body: { name, type, accounts: currencies.map((currency_name) => ({ currency_name })) } })
  expect(res.status).toBe(201)
  return res.body as { id: number; accounts: { id: number; currency_name: string }[] }
}

describe('cost centers', () => {
  test('create picks the caja account in the default currency when none is given', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const external = await client(t, c, 'Proveedor', 1, ['ARS'])
    const caja = await client(t, c, 'Caja central', 0, ['USD', 'ARS'])
    const ars = caja.accounts.find((a) => a.currency_name === 'ARS')!
    const res = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Sueldos', client_id: external.id, default_currency: 'ARS' } })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({
      company_id: c.id,
      client_id: external.id,
      name: 'Sueldos',
      default_currency: 'ARS',
      default_internal_account_id: ars.id,
      net_balance_by_default: false,
      budgets: [],
    })
    expect(res.body.created_at).toMatch(/Z$/)
  })

  test('the cost center\'s own caja wins over older cajas', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    await client(t, c, 'Caja vieja', 0, ['USD'])
    const own = await client(t, c, 'Caja propia', 0, ['USD'])
    const res = await t.request('POST', '/api/cost-centers', {
      key: c.key,
      body: { name: 'Mantenimiento', client_id: own.id, default_currency: 'USD', net_balance_by_default: true },
    })
    expect(res.status).toBe(201)
    expect(res.body.default_internal_account_id).toBe(own.accounts[0].id)
    expect(res.body.net_balance_by_default).toBe(true)
  })

  test('no caja in the currency leaves the default caja null', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const ext = await client(t, c, 'Proveedor', 1, ['EUR'])
    const res = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Viajes', client_id: ext.id, default_currency: 'EUR' } })
    expect(res.status).toBe(201)
    expect(res.body.default_internal_account_id).toBeNull()
  })

  test('references are checked: unknown client, unknown account, account not of a caja', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const foreign = await client(t, other, 'Ajeno', 0, ['USD'])
    const ext = await client(t, c, 'Proveedor', 1, ['USD'])
    const unknownClient = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'X', client_id: foreign.id, default_currency: 'USD' } })
    expect(unknownClient.status).toBe(422)
    expect(unknownClient.body.code).toBe('UNKNOWN_CLIENT')
    const unknownAccount = await t.request('POST', '/api/cost-centers', {
      key: c.key,
      body: { name: 'X', client_id: ext.id, default_currency: 'USD', default_internal_account_id: foreign.accounts[0].id },
    })
    expect(unknownAccount.status).toBe(422)
    expect(unknownAccount.body.code).toBe('UNKNOWN_ACCOUNT')
    const notInternal = await t.request('POST', '/api/cost-centers', {
      key: c.key,
      body: { name: 'X', client_id: ext.id, default_currency: 'USD', default_internal_account_id: ext.accounts[0].id },
    })
    expect(notInternal.status).toBe(422)
    expect(notInternal.body.code).toBe('ACCOUNT_NOT_INTERNAL')
    const bad = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'X', client_id: ext.id } })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe('VALIDATION_ERROR')
  })

  test('budgets: 201 for a new slot, 200 when the same slot is posted again; listed with amounts as numbers', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const caja = await client(t, c, 'Caja', 0, ['ARS'])
    const cc = (await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Alquiler', client_id: caja.id, default_currency: 'ARS' } })).body
    const first = await t.request('POST', `/api/cost-centers/${cc.id}/budgets`, {
      key: c.key,
      body: { currency: 'ARS', year: 2025, period: 3, amount: '1500000.10', kind: 'expense' },
    })
    expect(first.status).toBe(201)
    expect(first.body).toMatchObject({ cost_center_id: cc.id, currency: 'ARS', year: 2025, period: 3, amount: 1500000.1, kind: 'expense' })
    const again = await t.request('POST', `/api/cost-centers/${cc.id}/budgets`, {
      key: c.key,
      body: { currency: 'ARS', year: 2025, period: 3, amount: 0.1 + 0.2, kind: 'expense' },
    })
    expect(again.status).toBe(200)
    expect(again.body.id).toBe(first.body.id)
    expect(again.body.amount).toBe(0.3)
    const income = await t.request('POST', `/api/cost-centers/${cc.id}/budgets`, {
      key: c.key,
      body: { currency: 'ARS', year: 2025, period: 3, amount: 10, kind: 'income' },
    })
    expect(income.status).toBe(201)
    expect(income.body.id).not.toBe(first.body.id)
    const list = await t.request('GET', '/api/cost-centers', { key: c.key })
    expect(list.status).toBe(200)
    expect(list.body.data).toHaveLength(1)
    expect(list.body.data[0].budgets).toEqual([
      { id: first.body.id, cost_center_id: cc.id, currency: 'ARS', year: 2025, period: 3, amount: 0.3, kind: 'expense' },
      { id: income.body.id, cost_center_id: cc.id, currency: 'ARS', year: 2025, period: 3, amount: 10, kind: 'income' },
    ])
  })

  test('budget validation, tenancy and idempotent replays keep the first status', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const other = await t.newCompany()
    const caja = await client(t, c, 'Caja', 0, ['USD'])
    const cc = (await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Marketing', client_id: caja.id, default_currency: 'USD' } })).body
    const path = `/api/cost-centers/${cc.id}/budgets`
    for (const body of [
      { currency: 'USD', year: 2025, period: 13, amount: 1, kind: 'expense' },
      { currency: 'USD', year: 2025, period: 0, amount: 1, kind: 'expense' },
      { currency: 'USD', year: 2025, period: 1, amount: 1, kind: 'gift' },
      { currency: 'USD', year: 2025, period: 1, amount: -5, kind: 'expense' },
      { currency: 'USD', year: 2025, period: 1, amount: 'abc', kind: 'expense' },
    ]) {
      const res = await t.request('POST', path, { key: c.key, body })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe('VALIDATION_ERROR')
    }
    const foreign = await t.request('POST', path, { key: other.key, body: { currency: 'USD', year: 2025, period: 1, amount: 1, kind: 'expense' } })
    expect(foreign.status).toBe(404)
    expect(foreign.body.code).toBe('NOT_FOUND')
    expect((await t.request('POST', '/api/cost-centers/0/budgets', { key: c.key, body: {} })).body.code).toBe('INVALID_ID')
    expect((await t.request('GET', '/api/cost-centers', { key: other.key })).body).toEqual({ data: [] })

    const body = { currency: 'USD', year: 2026, period: 1, amount: 100, kind: 'expense' }
    const created = await t.request('POST', path, { key: c.key, body })
    expect(created.status).toBe(201)
    const update = { ...body, amount: 250 }
    const headers = { 'idempotency-key': `budget-${cc.id}` }
    const updated = await t.request('POST', path, { key: c.key, body: update, headers })
    expect(updated.status).toBe(200)
    const replay = await t.request('POST', path, { key: c.key, body: update, headers })
    expect(replay.status).toBe(200)
    expect(replay.body).toEqual(updated.body)
    const reused = await t.request('POST', path, { key: c.key, body: { ...update, amount: 1 }, headers })
    expect(reused.status).toBe(409)
    expect(reused.body.code).toBe('IDEMPOTENCY_KEY_REUSED')
  })

  test('permissions: view for the list, edit for writes; no key is 401', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const caja = await client(t, c, 'Caja', 0, ['USD'])
    const viewer = await c.employee(['cost_centers.view'])
    const editor = await c.employee(['cost_centers.edit'])
    const nobody = await c.employee(['clients.view'])
    const body = { name: 'Eventos', client_id: caja.id, default_currency: 'USD' }
    expect((await t.request('POST', '/api/cost-centers', { key: viewer.key, body })).status).toBe(403)
    const made = await t.request('POST', '/api/cost-centers', { key: editor.key, body })
    expect(made.status).toBe(201)
    const budget = { currency: 'USD', year: 2025, period: 5, amount: 1, kind: 'expense' }
    expect((await t.request('POST', `/api/cost-centers/${made.body.id}/budgets`, { key: viewer.key, body: budget })).body.code).toBe('FORBIDDEN')
    expect((await t.request('POST', `/api/cost-centers/${made.body.id}/budgets`, { key: editor.key, body: budget })).status).toBe(201)
    expect((await t.request('GET', '/api/cost-centers', { key: viewer.key })).body.data).toHaveLength(1)
    expect((await t.request('GET', '/api/cost-centers', { key: nobody.key })).status).toBe(403)
    expect((await t.request('GET', '/api/cost-centers', {})).status).toBe(401)
  })

  postgresTest('concurrent posts of one budget slot: one insert (201), one update (200), one row', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const caja = await client(t, c, 'Caja', 0, ['USD'])
    const cc = (await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Concurrente', client_id: caja.id, default_currency: 'USD' } })).body
    const post = (amount: number) =>
      t.request('POST', `/api/cost-centers/${cc.id}/budgets`, { key: c.key, body: { currency: 'USD', year: 2030, period: 7, amount, kind: 'expense' } })
    const results = await Promise.all([post(1), post(2)])
    expect(results.map((r) => r.status).sort()).toEqual([200, 201])
    expect(results[0].body.id).toBe(results[1].body.id)
    const list = await t.request('GET', '/api/cost-centers', { key: c.key })
    expect(list.body.data[0].budgets).toHaveLength(1)
  })
})
