import { afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type Company, type TestApp } from '../helpers'

/** Puts the app clock at `instant` (the database clock cannot be moved, so completion times are set by hand). */
const at = (t: TestApp, instant: string) => t.travel(new Date(instant).getTime() - Date.now())

afterEach(async () => (await testApp()).travel(0))

// The first use builds the shared app and migrates its database, which can take a while on PGlite.
beforeAll(async () => {
  await testApp()
}, 120_000)

async function ledger(t: TestApp, c: Company) {
  const type = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Varios', kind: 'other' } })
  const fee = await t.request('POST', '/api/transaction-types', { key: c.key, body: { name: 'Comisión', is_commission: true } })
  const caja = await t.request('POST', '/api/clients', {
    key: c.key,
    body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
  })
  const client = await t.request('POST', '/api/clients', {
    key: c.key,
    body: { name: 'Juan', type: 1, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
  })
  expect([type.status, fee.status, caja.status, client.status]).toEqual([201, 201, 201, 201])
  const ids = (body: any) => Object.fromEntries(body.accounts.map((a: any) => [a.currency_name, a.id as number]))
  return { typeId: type.body.id as number, feeId: fee.body.id as number, caja: ids(caja.body), client: ids(client.body), clientId: client.body.id as number }
}

async function operation(
  t: TestApp,
  c: Company,
  typeId: number,
  legs: { account: number; amount: number | string; type?: number }[],
  opts: { completedAt?: string; status?: 'pending' | 'completed'; costCenter?: number } = {},
) {
  const res = await t.request('POST', '/api/operations', {
    key: c.key,
    body: {
      operation_type_id: typeId,
      status: opts.status ?? 'completed',
      ...(opts.costCenter && { cost_center_id: opts.costCenter }),
      transactions: legs.map((l) => ({ account_id: l.account, amount: l.amount, ...(l.type && { transaction_type_id: l.type }) })),
    },
  })
  expect(res.status).toBe(201)
  if (opts.completedAt)
    await t.ctx.database.rows(sql`update transactions set completed_at = ${opts.completedAt}::timestamptz where operation_id = ${res.body.id}`)
  return res.body.id as number
}

const home = (t: TestApp, key: string) => t.request('GET', '/api/metrics/home', { key })

describe('home metrics', () => {
  test('auth: company key, employee needs metrics.view, no key 401', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const ok = await home(t, c.key)
    expect(ok.status).toBe(200)
    expect(ok.body).toMatchObject({ dayPnl: [], commissions: [], costCenters: [] })
    const without = await c.employee(['operations.view', 'mesas.view', 'cost_centers.view'])
    const denied = await home(t, without.key)
    expect(denied.status).toBe(403)
    expect(denied.body.code).toBe('FORBIDDEN')
    const viewer = await c.employee(['metrics.view'])
    expect((await home(t, viewer.key)).status).toBe(200)
    const none = await t.request('GET', '/api/metrics/home')
    expect(none.status).toBe(401)
    expect(none.body.code).toBe('UNAUTHORIZED')
  })

  test('commissions count by completion time within the local day, DST-safe', async () => {
    const t = await testApp()
    // New York springs forward on 2024-03-10: that local day is 23 hours, 05:00Z to 04:00Z.
    const c = await t.newCompany({ timezone: 'America/New_York' })
    const l = await ledger(t, c)
    const fee = (amount: number | string, completedAt?: string, status?: 'pending' | 'completed', account = l.caja.ARS) =>
      operation(t, c, l.typeId, [{ account, amount, type: l.feeId }], { completedAt, status })
    await fee('10.10', '2024-03-10T00:30:00-05:00') // first half hour of the day
    await fee('0.2', '2024-03-10T23:30:00-04:00') // 03:30Z on the 11th: still the 10th locally
    await fee(7, '2024-03-09T23:30:00-05:00') // the day before
    await fee(50, '2024-03-11T00:30:00-04:00') // the day after
    await fee(3, '2024-03-10T12:00:00-04:00', 'completed', l.caja.USD)
    await fee(1000, undefined, 'pending')
    // A plain (non-commission) leg completed today is not a commission.
    await operation(t, c, l.typeId, [{ account: l.caja.ARS, amount: 999 }], { completedAt: '2024-03-10T12:00:00-04:00' })

    at(t, '2024-03-10T12:00:00-04:00')
    const res = await home(t, c.key)
    expect(res.status).toBe(200)
    expect(res.body.date).toBe('2024-03-10')
    expect(res.body.commissions).toEqual([
      { currency: 'ARS', amount: 10.3 },
      { currency: 'USD', amount: 3 },
    ])

    // Late evening of the 10th, local: still the same day, although UTC is already on the 11th.
    at(t, '2024-03-10T23:45:00-04:00')
    const late = await home(t, c.key)
    expect(late.body.date).toBe('2024-03-10')
    expect(late.body.commissions).toEqual(res.body.commissions)

    at(t, '2024-03-11T09:00:00-04:00')
    const next = await home(t, c.key)
    expect(next.body.date).toBe('2024-03-11')
    expect(next.body.commissions).toEqual([{ currency: 'ARS', amount: 50 }])
  })

  test('a transaction at 23:30 local counts for that day, not the next (Buenos Aires, UTC−03:00)', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const l = await ledger(t, c)
    await operation(t, c, l.typeId, [{ account: l.caja.ARS, amount: 5, type: l.feeId }], { completedAt: '2024-06-14T23:30:00-03:00' })
    at(t, '2024-06-14T10:00:00-03:00')
    expect((await home(t, c.key)).body.commissions).toEqual([{ currency: 'ARS', amount: 5 }])
    at(t, '2024-06-15T10:00:00-03:00')
    const next = await home(t, c.key)
    expect(next.body.date).toBe('2024-06-15')
    expect(next.body.commissions).toEqual([])
  })

  test('day P&L per mesa equals the change of its realized P&L over the day', async () => {
    const t = await testApp()
    const c = await t.newCompany({ mesas: true })
    const l = await ledger(t, c)
    const mesa = async (name: string, method: 'fifo' | 'wac', accounts: number[]) => {
      const res = await t.request('POST', '/api/mesas', {
        key: c.key,
        body: { name, local_currency: 'ARS', quote_currency: 'USD', costing_method: method, account_ids: accounts },
      })
      expect(res.status).toBe(201)
      return res.body.id as number
    }
    const caja2 = await t.request('POST', '/api/clients', {
      key: c.key,
      body: { name: 'Caja 2', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] },
    })
    const fifo = await mesa('Mesa FIFO', 'fifo', [l.caja.ARS, l.caja.USD])
    const wac = await mesa('Mesa WAC', 'wac', caja2.body.accounts.map((a: any) => a.id))
    const line = async (id: number, side: 'buy' | 'sell', quote: number, fx: number, tradedAt: string) => {
      const res = await t.request('POST', `/api/mesas/${id}/lines`, {
        key: c.key,
        body: { side, quote_amount: quote, local_amount: quote * fx, traded_at: new Date(tradedAt).toISOString() },
      })
      expect(res.status).toBe(201)
    }
    const realized = async (id: number) => (await t.request('GET', `/api/mesas/${id}/position`, { key: c.key })).body.realized_pnl as number

    // Yesterday: two buys (no realized P&L) and a sell that realizes some.
    for (const id of [fifo, wac]) {
      await line(id, 'buy', 100, 1000, '2024-06-13T11:00:00-03:00')
      await line(id, 'buy', 100, 1100, '2024-06-13T12:00:00-03:00')
      await line(id, 'sell', 20, 1150, '2024-06-13T23:59:00-03:00')
    }
    const before = { fifo: await realized(fifo), wac: await realized(wac) }
    // Today, including the last half hour of the local day.
    for (const id of [fifo, wac]) {
      await line(id, 'sell', 130, 1200, '2024-06-14T00:00:00-03:00')
      await line(id, 'buy', 30, 1180, '2024-06-14T15:00:00-03:00')
      await line(id, 'sell', 20, 1250, '2024-06-14T23:30:00-03:00')
    }
    const after = { fifo: await realized(fifo), wac: await realized(wac) }
    // Tomorrow: must not leak into today.
    for (const id of [fifo, wac]) await line(id, 'sell', 10, 1300, '2024-06-15T00:30:00-03:00')

    // fifo: yesterday 20×150 = 3000; today 80×200 + 50×100 + 20×(1250−1100) = 24000.
    expect(before.fifo).toBe(3000)
    expect(after.fifo - before.fifo).toBe(24000)
    at(t, '2024-06-14T18:00:00-03:00')
    const res = await home(t, c.key)
    expect(res.status).toBe(200)
    expect(res.body.dayPnl).toEqual([
      { mesa_id: fifo, currency: 'ARS', realized: after.fifo - before.fifo },
      { mesa_id: wac, currency: 'ARS', realized: after.wac - before.wac },
    ])
    expect(after.wac - before.wac).not.toBe(0)

    // A deleted mesa is gone from the cards; with the module off there are none.
    expect((await t.request('DELETE', `/api/mesas/${wac}`, { key: c.key })).status).toBe(200)
    expect((await home(t, c.key)).body.dayPnl.map((d: any) => d.mesa_id)).toEqual([fifo])
    await t.request('PATCH', `/api/superadmin/companies/${c.id}`, { bearer: await t.superToken(), body: { modules: { mesas: false } } })
    expect((await home(t, c.key)).body.dayPnl).toEqual([])
  })

  test('cost centers: expense budget of the local month against the completed expenses charged to them', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const l = await ledger(t, c)
    const cc = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Sucursal', client_id: l.clientId, default_currency: 'ARS' } })
    expect(cc.status).toBe(201)
    const ccId = cc.body.id as number
    const idle = await t.request('POST', '/api/cost-centers', { key: c.key, body: { name: 'Ociosa', client_id: l.clientId, default_currency: 'USD' } })
    const budget = async (body: Record<string, unknown>) =>
      expect((await t.request('POST', `/api/cost-centers/${ccId}/budgets`, { key: c.key, body })).status).toBe(201)
    await budget({ currency: 'ARS', year: 2024, period: 6, amount: '50000.25', kind: 'expense' })
    await budget({ currency: 'ARS', year: 2024, period: 6, amount: 90000, kind: 'income' })
    await budget({ currency: 'ARS', year: 2024, period: 5, amount: 1, kind: 'expense' })
    await budget({ currency: 'ARS', year: 2023, period: 6, amount: 2, kind: 'expense' })
    await budget({ currency: 'USD', year: 2024, period: 6, amount: 300, kind: 'expense' })

    const charge = (legs: { account: number; amount: number | string }[], completedAt?: string, status?: 'pending' | 'completed') =>
      operation(t, c, l.typeId, legs, { costCenter: ccId, completedAt, status })
    await charge([{ account: l.caja.ARS, amount: '-1200.5' }], '2024-06-01T00:10:00-03:00')
    await charge([{ account: l.caja.ARS, amount: '-0.25' }, { account: l.client.ARS, amount: '0.25' }], '2024-06-30T23:30:00-03:00')
    await charge([{ account: l.caja.ARS, amount: -777 }], '2024-05-31T23:30:00-03:00') // last month, locally
    await charge([{ account: l.caja.ARS, amount: -888 }], '2024-07-01T00:30:00-03:00') // next month
    await charge([{ account: l.caja.ARS, amount: -999 }], undefined, 'pending')
    await charge([{ account: l.caja.USD, amount: -40 }], '2024-06-10T12:00:00-03:00')
    // An expense advanced by an external payer credits its account and debits no caja (the budget tool's external source).
    await charge([{ account: l.client.USD, amount: 5 }], '2024-06-12T12:00:00-03:00')
    // Incomes are not spending: charged to the payer's account, or paid into a caja.
    await charge([{ account: l.client.USD, amount: -7 }], '2024-06-12T12:00:00-03:00')
    await charge([{ account: l.caja.USD, amount: 9 }, { account: l.client.USD, amount: -9 }], '2024-06-12T12:00:00-03:00')
    // Not charged to the cost center.
    await operation(t, c, l.typeId, [{ account: l.caja.ARS, amount: -123 }], { completedAt: '2024-06-10T12:00:00-03:00' })

    at(t, '2024-06-30T23:45:00-03:00')
    const res = await home(t, c.key)
    expect(res.status).toBe(200)
    expect(res.body.date).toBe('2024-06-30')
    expect(res.body.costCenters).toEqual([
      { cost_center_id: ccId, name: 'Sucursal', currency: 'ARS', budget: 50000.25, spent: 1200.75 },
      { cost_center_id: ccId, name: 'Sucursal', currency: 'USD', budget: 300, spent: 45 },
      { cost_center_id: idle.body.id, name: 'Ociosa', currency: 'USD', budget: 0, spent: 0 },
    ])

    at(t, '2024-07-01T10:00:00-03:00')
    const july = await home(t, c.key)
    expect(july.body.costCenters[0]).toEqual({ cost_center_id: ccId, name: 'Sucursal', currency: 'ARS', budget: 0, spent: 888 })
  })

  test('cost centers: the budget tool\'s internal and external expenses are spent, its incomes are not', async () => {
    const t = await testApp()
    const c = await t.newCompany()
    const l = await ledger(t, c)
    const cc = await t.request('POST', '/api/cost-centers', {
      key: c.key,
      body: { name: 'Gastos', client_id: l.clientId, default_currency: 'ARS', default_internal_account_id: l.caja.ARS },
    })
    expect(cc.status).toBe(201)
    const budgetType = await t.request('POST', '/api/operation-types', { key: c.key, body: { name: 'Presupuesto', kind: 'budget' } })
    const tool = async (slug: string, config: Record<string, unknown>) => {
      const r = await t.request('POST', '/api/messaging/tools', {
        key: c.key,
        body: {
          name: slug,
          fixed_config: { toolKind: 'budget', operationTypeId: budgetType.body.id, costCenterId: cc.body.id, ...config },
          parameter_schema: { parameters: [{ key: 'amount', label: 'Monto', type: 'amount', required: true }] },
        },
      })
      expect(r.status).toBe(201)
      return r.body.id as number
    }
    const payer = { paymentSourceMode: 'external', payerClientId: l.clientId }
    const runs: [number, number][] = [
      [await tool('gasto-caja', {}), 100],
      [await tool('gasto-socio', payer), 1000],
      [await tool('ingreso-caja', { direction: 'income' }), 50],
      [await tool('ingreso-socio', { direction: 'income', ...payer }), 10000],
    ]
    for (const [id, amount] of runs) {
      const run = await t.request('POST', `/api/messaging/tools/${id}/run`, {
        key: c.key,
        body: { parameters: { amount }, requested_by: { contact_id: 1, phone: '+5491100000000' } },
      })
      expect(run.status).toBe(201)
      expect((await t.request('POST', `/api/operations/${run.body.operation.id}/approve`, { key: c.key })).status).toBe(200)
    }
    const res = await home(t, c.key)
    expect(res.body.costCenters).toEqual([{ cost_center_id: cc.body.id, name: 'Gastos', currency: 'ARS', budget: 0, spent: 1100 }])
  })

  test('cross-tenant: another company sees none of it', async () => {
    const t = await testApp()
    const a = await t.newCompany()
    const l = await ledger(t, a)
    await operation(t, a, l.typeId, [{ account: l.caja.ARS, amount: 5, type: l.feeId }])
    await t.request('POST', '/api/cost-centers', { key: a.key, body: { name: 'A', client_id: l.clientId, default_currency: 'ARS' } })
    expect((await home(t, a.key)).body.commissions).toEqual([{ currency: 'ARS', amount: 5 }])
    const b = await t.newCompany()
    const other = await home(t, b.key)
    expect(other.body.commissions).toEqual([])
    expect(other.body.costCenters).toEqual([])
  })
})
