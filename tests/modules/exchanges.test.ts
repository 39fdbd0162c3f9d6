import { beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { testApp, type TestApp } from '../helpers'
import { balanceOf, branch, calledTicket } from './exchanges.fixtures'

let t: TestApp

beforeAll(async () => {
  t = await testApp()
}, 120_000)

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const STRINGS = { accept: 'application/json; money=string' }

describe('POST /api/exchanges', () => {
  test('a purchase at the board rate: one completed operation on the caja, the exchange, a receipt numbered 00001-00000001', async () => {
    const b = await branch(t)
    const ticket = await calledTicket(t, b)
    const r = await t.request('POST', '/api/exchanges', {
      key: b.c.key,
      body: { side: 'buy', currency: 'USD', amount: 100, caja_id: b.caja.id, ticket_id: ticket, customer: { name: 'Juana Núñez', document: { type: 'DNI', number: '30.123.456' } } },
    })
    expect(r.status).toBe(201)
    expect(Object.keys(r.body).sort()).toEqual(['exchange', 'operation', 'receipt'])
    const exchange = { side: 'buy', currency: 'USD', amount: 100, rate: 1165.5, rate_source: 'board', local_amount: 116550, commission: 0, ticket_id: ticket }
    expect(r.body.exchange).toEqual(exchange)
    const op = r.body.operation
    expect(op.status).toBe('completed')
    expect(op.exchange).toEqual(exchange)
    expect(op.receipt_number).toBe('00001-00000001')
    expect(op.description).toBe('Compra de 100,00 USD a 1.165,50')
    expect(op.transactions.map((x: { account_id: number; currency: string; amount: number; is_commission: boolean }) => [x.account_id, x.currency, x.amount, x.is_commission])).toEqual([
      [b.account('USD'), 'USD', 100, false],
      [b.account('ARS'), 'ARS', -116550, false],
    ])
    const customer = await t.request('GET', `/api/clients/${op.client_id}`, { key: b.c.key })
    expect(customer.body).toMatchObject({ name: 'Juana Núñez', type: 1, document: { type: 'DNI', number: '30123456', country: 'AR' }, accounts: [] })
    expect(r.body.receipt).toEqual({
      number: '00001-00000001',
      point: 1,
      issued_at: expect.stringMatching(ISO),
      status: 'issued',
      company: { legal_name: null, tax_id: null, address: null, license: null },
      customer: { name: 'Juana Núñez', document: { type: 'DNI', number: '30123456', country: 'AR' } },
      side: 'buy',
      currency: 'USD',
      amount: 100,
      rate: 1165.5,
      local_amount: 116550,
      commission: 0,
      total: 116550,
    })
    expect(await balanceOf(t, b, 'USD')).toBe('10100')
    expect(await balanceOf(t, b, 'ARS')).toBe('9883450')
    // GET shows what the create answered.
    const got = await t.request('GET', `/api/operations/${op.id}`, { key: b.c.key })
    expect(got.body).toEqual(op)
    const receipt = await t.request('GET', `/api/operations/${op.id}/receipt`, { key: b.c.key })
    expect(receipt.status).toBe(200)
    expect(receipt.body).toEqual(r.body.receipt)
  })
})

/** The rows an exchange writes, for one company: nothing may change when one is refused. */
async function written(companyId: number) {
  const [row] = await t.ctx.database.rows<Record<string, number>>(sql`select
    (select count(*)::int from operations where company_id = ${companyId}) as operations,
    (select count(*)::int from transactions where company_id = ${companyId}) as transactions,
    (select count(*)::int from exchanges where company_id = ${companyId}) as exchanges,
    (select count(*)::int from receipts where company_id = ${companyId}) as receipts,
    (select count(*)::int from clients where company_id = ${companyId}) as clients,
    (select coalesce(sum(last_seq), 0)::int from receipt_counters where company_id = ${companyId}) as numbers,
    (select count(*)::int from events where company_id = ${companyId}) as events`)
  return row
}

const post = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => t.request('POST', '/api/exchanges', { key, body, headers })

describe('POST /api/exchanges: the deal', () => {
  test('a sale with a commission: −amount and +amount×rate, +commission on a commission transaction type; total = local + commission', async () => {
    const b = await branch(t)
    const r = await post(b.c.key, { side: 'sell', currency: 'eur', amount: '250.5', caja_id: b.caja.id, commission: { amount: '1500.005' } })
    expect(r.status).toBe(201)
    expect(r.body.exchange).toEqual({ side: 'sell', currency: 'EUR', amount: 250.5, rate: 1290.75, rate_source: 'board', local_amount: 323332.88, commission: 1500.01, ticket_id: null })
    expect(r.body.receipt).toMatchObject({ side: 'sell', local_amount: 323332.88, commission: 1500.01, total: 324832.89, customer: { name: null, document: null } })
    expect(r.body.operation.client_id).toBeNull()
    const types = (await t.request('GET', '/api/transaction-types', { key: b.c.key })).body.data
    const commissionType = types.find((x: { is_commission: boolean }) => x.is_commission).id
    expect(r.body.operation.transactions.map((x: { currency: string; amount: number; transaction_type_id: number | null; is_commission: boolean }) => [x.currency, x.amount, x.transaction_type_id, x.is_commission])).toEqual([
      ['EUR', -250.5, null, false],
      ['ARS', 323332.88, null, false],
      ['ARS', 1500.01, commissionType, true],
    ])
    expect(await balanceOf(t, b, 'EUR')).toBe('9749.5')
    expect(await balanceOf(t, b, 'ARS')).toBe('10324832.89')
    expect(r.body.warnings).toBeUndefined()
  })

  test('a purchase with a commission: the customer receives local − commission', async () => {
    const b = await branch(t)
    const r = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 10, caja_id: b.caja.id, commission: { amount: 100 } })
    expect(r.body.receipt).toMatchObject({ local_amount: 11655, commission: 100, total: 11555 })
    expect(await balanceOf(t, b, 'ARS')).toBe('9988445')
  })

  test('amount × rate is exact, then rounded half away from zero to cents (…5 goes up)', async () => {
    const b = await branch(t, { rates: [{ currency: 'USD', buy: '0.005', sell: '1.000001' }] })
    const up = await post(b.c.key, { side: 'buy', currency: 'USD', amount: '1', caja_id: b.caja.id })
    expect(up.body.exchange.local_amount).toBe(0.01)
    const below = await post(b.c.key, { side: 'buy', currency: 'USD', amount: '0.999999', caja_id: b.caja.id })
    expect(below.status).toBe(400)
    expect(below.body.details).toEqual([{ field: 'amount', message: 'amount × rate must be at least 0.01' }])
    const sell = await post(b.c.key, { side: 'sell', currency: 'USD', amount: '1234567890123.123457', caja_id: b.caja.id }, STRINGS)
    expect(sell.status).toBe(201)
    // 1234567890123.123457 × 1.000001 = 1234569124691.013580123457 → 1234569124691.01
    expect(sell.body.exchange).toMatchObject({ amount: '1234567890123.123457', rate: '1.000001', local_amount: '1234569124691.01' })
    expect(sell.body.warnings).toEqual(['CAJA_BELOW_ZERO'])
  })

  test('an employee without operations.approve makes it pending; CAJA_BELOW_ZERO is judged as if it counted', async () => {
    const b = await branch(t)
    const cashier = await b.c.employee(['operations.create', 'operations.view'])
    const r = await post(cashier.key, { side: 'sell', currency: 'USD', amount: '10000.01', caja_id: b.caja.id })
    expect(r.status).toBe(201)
    expect(r.body.operation.status).toBe('pending')
    expect(r.body.operation.created_by).toBe(cashier.id)
    expect(r.body.warnings).toEqual(['CAJA_BELOW_ZERO'])
    expect(await balanceOf(t, b, 'USD')).toBe('10000')
    const fits = await post(cashier.key, { side: 'sell', currency: 'USD', amount: '10000', caja_id: b.caja.id })
    expect(fits.body.warnings).toBeUndefined()
    // Approved later, it moves the balances as any operation does.
    expect((await t.request('POST', `/api/operations/${r.body.operation.id}/approve`, { key: b.c.key })).status).toBe(200)
    expect(await balanceOf(t, b, 'USD')).toBe('-0.01')
  })

  test('a rate other than the board\'s needs exchanges.rate and is recorded as manual; the board\'s own is board', async () => {
    const b = await branch(t)
    const cashier = await b.c.employee(['operations.create', 'operations.approve'])
    const refused = await post(cashier.key, { side: 'buy', currency: 'USD', amount: 1, rate: '1170', caja_id: b.caja.id })
    expect(refused.status).toBe(403)
    expect(refused.body.code).toBe('FORBIDDEN')
    expect(refused.body.error).toContain('exchanges.rate')
    const same = await post(cashier.key, { side: 'buy', currency: 'USD', amount: 1, rate: '1165.500000', caja_id: b.caja.id })
    expect(same.body.exchange).toMatchObject({ rate: 1165.5, rate_source: 'board' })
    const senior = await b.c.employee(['operations.create', 'exchanges.rate'])
    const manual = await post(senior.key, { side: 'buy', currency: 'USD', amount: 2, rate: 1170.25, caja_id: b.caja.id })
    expect(manual.status).toBe(201)
    expect(manual.body.exchange).toMatchObject({ rate: 1170.25, rate_source: 'manual', local_amount: 2340.5 })
    expect(manual.body.operation.status).toBe('pending')
    // The board of the moment: a new board rate applies to the next exchange.
    await t.request('PUT', '/api/ventanilla/rates', { key: b.c.key, body: { rates: [{ currency: 'USD', buy: '1170.25', sell: '1190' }] } })
    const now = await post(cashier.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect(now.body.exchange).toMatchObject({ rate: 1170.25, rate_source: 'board' })
  })

  test('the customer: by client_id, by document (reused, with or without its dots and dashes), new without one, or none', async () => {
    const b = await branch(t)
    const first = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, customer: { name: 'Ana Pérez', document: { type: 'PASAPORTE', number: 'aab 123-456', country: 'uy' } } })
    expect(first.status).toBe(201)
    const anaId = first.body.operation.client_id
    expect(first.body.receipt.customer).toEqual({ name: 'Ana Pérez', document: { type: 'PASAPORTE', number: 'aab123456', country: 'UY' } })
    const again = await post(b.c.key, { side: 'sell', currency: 'USD', amount: 1, caja_id: b.caja.id, customer: { name: 'ANA P', document: { type: 'PASAPORTE', number: 'aab.123.456' } } })
    expect(again.body.operation.client_id).toBe(anaId)
    expect(again.body.receipt.customer.name).toBe('Ana Pérez')
    const byId = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, client_id: anaId })
    expect(byId.body.operation.client_id).toBe(anaId)
    expect(byId.body.receipt.customer.document.number).toBe('aab123456')
    const before = await written(b.c.id)
    const nameOnly = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, customer: { name: 'Sin Documento' } })
    expect(nameOnly.status).toBe(201)
    expect((await written(b.c.id)).clients).toBe(before.clients + 1)
    expect(nameOnly.body.receipt.customer).toEqual({ name: 'Sin Documento', document: null })
    // Same type and number in another type is another document.
    const dni = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, customer: { name: 'Otro', document: { type: 'DNI', number: 'aab123456' } } })
    expect(dni.body.operation.client_id).not.toBe(anaId)
    // A walk-in customer shows in the clients list, found by document.
    const found = await t.request('GET', '/api/clients?document=aab-123.456', { key: b.c.key })
    expect(found.body.data.map((c: { id: number }) => c.id).sort()).toEqual([anaId, dni.body.operation.client_id].sort())
  })

  test('the ticket served is linked; a waiting one is 409 INVALID_TICKET_STATUS; a finished one is fine', async () => {
    const b = await branch(t)
    const waiting = await t.request('POST', '/api/ventanilla/tickets', { key: b.c.key, body: { service_id: b.serviceId } })
    const before = await written(b.c.id)
    const refused = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, ticket_id: waiting.body.id })
    expect(refused.status).toBe(409)
    expect(refused.body.code).toBe('INVALID_TICKET_STATUS')
    expect(await written(b.c.id)).toEqual(before)
    const ticket = await calledTicket(t, b)
    const one = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, ticket_id: ticket })
    expect(one.body.exchange.ticket_id).toBe(ticket)
    await t.request('POST', `/api/ventanilla/tickets/${ticket}/finish`, { key: b.c.key })
    const two = await post(b.c.key, { side: 'buy', currency: 'EUR', amount: 1, caja_id: b.caja.id, ticket_id: ticket })
    expect(two.status).toBe(201)
    const listed = await t.request('GET', `/api/exchanges?ticket_id=${ticket}`, { key: b.c.key })
    expect(listed.body.data.map((e: { operation_id: number }) => e.operation_id)).toEqual([two.body.operation.id, one.body.operation.id])
  })
})

describe('POST /api/exchanges: refusals write nothing', () => {
  test('every bad input: its status, code and field, and not a row written', async () => {
    const b = await branch(t)
    const other = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Externo', type: 1 } })
    const small = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Caja chica', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] } })
    const waiting = await t.request('POST', '/api/ventanilla/tickets', { key: b.c.key, body: { service_id: b.serviceId } })
    await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    const base = { side: 'buy', currency: 'USD', amount: '100', caja_id: b.caja.id }
    const cases: [Record<string, unknown>, number, string, string][] = [
      [{ currency: 'XYZ' }, 422, 'INVALID_PARAMETERS', 'currency'],
      [{ currency: 'JPY' }, 422, 'INVALID_PARAMETERS', 'currency'],
      [{ currency: 'ARS' }, 422, 'INVALID_PARAMETERS', 'currency'],
      [{ amount: 0 }, 400, 'VALIDATION_ERROR', 'amount'],
      [{ amount: '-5' }, 400, 'VALIDATION_ERROR', 'amount'],
      [{ amount: '0.0000001' }, 400, 'VALIDATION_ERROR', 'amount'],
      [{ amount: 'cien' }, 400, 'VALIDATION_ERROR', 'amount'],
      [{ amount: '10000000000000000000000' }, 400, 'VALIDATION_ERROR', 'amount'],
      [{ rate: '1165.1234567' }, 400, 'VALIDATION_ERROR', 'rate'],
      [{ rate: 0 }, 400, 'VALIDATION_ERROR', 'rate'],
      [{ rate: '-1165' }, 400, 'VALIDATION_ERROR', 'rate'],
      [{ side: 'swap' }, 400, 'VALIDATION_ERROR', 'side'],
      [{ currency: 'EUR', caja_id: small.body.id }, 422, 'ACCOUNT_CURRENCY_MISMATCH', 'caja_id'],
      [{ caja_id: other.body.id }, 422, 'ACCOUNT_NOT_INTERNAL', 'caja_id'],
      [{ caja_id: 2147483000 }, 422, 'UNKNOWN_CLIENT', 'caja_id'],
      [{ client_id: 2147483000 }, 422, 'UNKNOWN_CLIENT', 'client_id'],
      [{ client_id: small.body.id }, 422, 'INVALID_PARAMETERS', 'client_id'],
      [{ client_id: other.body.id, customer: { name: 'X' } }, 400, 'VALIDATION_ERROR', 'customer'],
      [{ customer: { name: '   ' } }, 400, 'VALIDATION_ERROR', 'customer.name'],
      [{ customer: { name: 'X', document: { type: 'DNI', number: '..--' } } }, 400, 'VALIDATION_ERROR', 'customer.document.number'],
      [{ customer: { name: 'X', document: { type: 'DNI', number: '123', country: 'XX' } } }, 400, 'VALIDATION_ERROR', 'customer.document.country'],
      // The framework names the nullable object a union failed in, not the field inside it.
      [{ customer: { name: 'X', document: { type: 'LIBRETA', number: '123' } } }, 400, 'VALIDATION_ERROR', 'customer'],
      [{ ticket_id: waiting.body.id }, 409, 'INVALID_TICKET_STATUS', ''],
      [{ ticket_id: 2147483000 }, 422, 'UNKNOWN_TICKET', 'ticket_id'],
      [{ commission: { amount: 0 } }, 400, 'VALIDATION_ERROR', 'commission.amount'],
      [{ commission: { amount: '0.004' } }, 400, 'VALIDATION_ERROR', 'commission.amount'],
      [{ commission: { amount: '116550' } }, 422, 'INVALID_PARAMETERS', 'commission.amount'],
    ]
    const before = await written(b.c.id)
    for (const [change, status, code, field] of cases) {
      const r = await post(b.c.key, { ...base, ...change })
      expect([JSON.stringify(change), r.status, r.body.code]).toEqual([JSON.stringify(change), status, code])
      expect(typeof r.body.error).toBe('string')
      if (field) expect([JSON.stringify(change), r.body.details?.map((d: { field: string }) => d.field)]).toEqual([JSON.stringify(change), expect.arrayContaining([field])])
    }
    expect(await written(b.c.id)).toEqual(before)
  })

  test('a company without the side\'s operation type or a commission type: 422 OPERATION_TYPE_NOT_FOUND', async () => {
    const b = await branch(t, { commissionType: false })
    const before = await written(b.c.id)
    const noCommission = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, commission: { amount: 1 } })
    expect([noCommission.status, noCommission.body.code]).toEqual([422, 'OPERATION_TYPE_NOT_FOUND'])
    const types = (await t.request('GET', '/api/operation-types', { key: b.c.key })).body.data
    // A type of another kind with the name does not count.
    const other = await t.newCompany({ ventanilla: true })
    await t.request('POST', '/api/operation-types', { key: other.key, body: { name: 'Compra de divisas', kind: 'other' } })
    await t.request('PUT', '/api/ventanilla/rates', { key: other.key, body: { rates: [{ currency: 'USD', buy: '1', sell: '2' }] } })
    const otherCaja = await t.request('POST', '/api/clients', { key: other.key, body: { name: 'Caja', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] } })
    const wrongKind = await post(other.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: otherCaja.body.id })
    expect([wrongKind.status, wrongKind.body.code]).toEqual([422, 'OPERATION_TYPE_NOT_FOUND'])
    expect(types.length).toBe(3)
    expect(await written(b.c.id)).toEqual(before)
  })

  test('permissions: operations.create is needed; 401 without a key', async () => {
    const b = await branch(t)
    const viewer = await b.c.employee(['operations.view', 'exchanges.rate'])
    const r = await post(viewer.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect([r.status, r.body.code]).toEqual([403, 'FORBIDDEN'])
    expect((await t.request('POST', '/api/exchanges', { body: { side: 'buy' } })).status).toBe(401)
    expect((await t.request('GET', '/api/exchanges', { key: (await b.c.employee(['operations.create'])).key })).status).toBe(403)
  })
})

describe('exchanges: isolation and scope', () => {
  test("another company's caja, client and ticket are unknown (422); its operations and receipts are 404", async () => {
    const a = await branch(t)
    const b = await branch(t)
    const aTicket = await calledTicket(t, a)
    const aClient = await t.request('POST', '/api/clients', { key: a.c.key, body: { name: 'Cliente de A', type: 1 } })
    const made = await post(a.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: a.caja.id })
    const before = await written(b.c.id)
    const base = { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id }
    const caja = await post(b.c.key, { ...base, caja_id: a.caja.id })
    expect([caja.status, caja.body.code]).toEqual([422, 'UNKNOWN_CLIENT'])
    const client = await post(b.c.key, { ...base, client_id: aClient.body.id })
    expect([client.status, client.body.code]).toEqual([422, 'UNKNOWN_CLIENT'])
    const ticket = await post(b.c.key, { ...base, ticket_id: aTicket })
    expect([ticket.status, ticket.body.code]).toEqual([422, 'UNKNOWN_TICKET'])
    expect(await written(b.c.id)).toEqual(before)
    const id = made.body.operation.id
    expect((await t.request('GET', `/api/operations/${id}/receipt`, { key: b.c.key })).status).toBe(404)
    expect((await t.request('GET', `/api/operations/${id}/receipt?format=pdf`, { key: b.c.key })).status).toBe(404)
    expect((await t.request('GET', `/api/operations/${id}`, { key: b.c.key })).status).toBe(404)
    expect((await t.request('GET', '/api/exchanges', { key: b.c.key })).body.data).toEqual([])
    // A customer's document is per company: the same one in B is a client of B.
    const doc = { type: 'DNI', number: '20111222' }
    const inA = await post(a.c.key, { ...base, caja_id: a.caja.id, customer: { name: 'Uno', document: doc } })
    const inB = await post(b.c.key, { ...base, customer: { name: 'Uno', document: doc } })
    expect(inB.status).toBe(201)
    expect(inB.body.operation.client_id).not.toBe(inA.body.operation.client_id)
  })

  test('a client-scoped employee lists and reads only the exchanges of their clients', async () => {
    const b = await branch(t)
    const mine = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Mío', type: 1 } })
    const theirs = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Ajeno', type: 1 } })
    const one = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, client_id: mine.body.id })
    const two = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 2, caja_id: b.caja.id, client_id: theirs.body.id })
    const scoped = await b.c.employee(['operations.view', 'operations.create'], [mine.body.id])
    const list = await t.request('GET', '/api/exchanges', { key: scoped.key })
    expect(list.body.data.map((e: { operation_id: number }) => e.operation_id)).toEqual([one.body.operation.id])
    expect(list.body.pagination.total).toBe(1)
    expect((await t.request('GET', `/api/operations/${two.body.operation.id}/receipt`, { key: scoped.key })).status).toBe(404)
    expect((await t.request('GET', `/api/operations/${one.body.operation.id}/receipt`, { key: scoped.key })).status).toBe(200)
    // Creating one they could not see afterwards is refused.
    const outside = await post(scoped.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id, client_id: theirs.body.id })
    expect(outside.status).toBe(403)
  })
})

describe('exchanges: idempotency, receipts and their numbers', () => {
  test('the same Idempotency-Key and body answer the first exchange again: one operation, one receipt number', async () => {
    const b = await branch(t)
    const body = { side: 'buy', currency: 'USD', amount: 5, caja_id: b.caja.id, customer: { name: 'Repetido', document: { type: 'DNI', number: '1' } } }
    const first = await post(b.c.key, body, { 'idempotency-key': 'venta-1' })
    const before = await written(b.c.id)
    const again = await post(b.c.key, body, { 'idempotency-key': 'venta-1' })
    expect(again.status).toBe(201)
    expect(again.body).toEqual(first.body)
    expect(await written(b.c.id)).toEqual(before)
    const reused = await post(b.c.key, { ...body, amount: 6 }, { 'idempotency-key': 'venta-1' })
    expect([reused.status, reused.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED'])
    const next = await post(b.c.key, body, { 'idempotency-key': 'venta-2' })
    expect(next.body.receipt.number).toBe('00001-00000002')
  })

  test('cancelling voids the receipt and keeps its number; revert keeps it issued; numbers go on', async () => {
    const b = await branch(t)
    const one = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    const id = one.body.operation.id
    expect((await t.request('POST', `/api/operations/${id}/revert`, { key: b.c.key })).status).toBe(200)
    expect((await t.request('GET', `/api/operations/${id}/receipt`, { key: b.c.key })).body.status).toBe('issued')
    expect((await t.request('POST', `/api/operations/${id}/cancel`, { key: b.c.key })).status).toBe(200)
    const voided = await t.request('GET', `/api/operations/${id}/receipt`, { key: b.c.key })
    expect(voided.body).toEqual({ ...one.body.receipt, status: 'void' })
    expect((await t.request('GET', `/api/operations/${id}`, { key: b.c.key })).body).toMatchObject({ status: 'cancelled', receipt_number: '00001-00000001' })
    const two = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect(two.body.receipt.number).toBe('00001-00000002')
    const listed = await t.request('GET', '/api/exchanges', { key: b.c.key })
    expect(listed.body.data.map((e: { receipt_number: string; status: string }) => [e.receipt_number, e.status])).toEqual([
      ['00001-00000002', 'completed'],
      ['00001-00000001', 'cancelled'],
    ])
  })

  test('each receipt point has its own sequence; the receipt keeps the company data it was issued with', async () => {
    const b = await branch(t)
    await t.request('PATCH', '/api/company', { key: b.c.key, body: { legal_name: 'Cambios Ñandú S.A.', tax_id: '30-71234567-9', address: 'San Martín 100', license: 'BCRA 123' } })
    const one = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect(one.body.receipt.company).toEqual({ legal_name: 'Cambios Ñandú S.A.', tax_id: '30-71234567-9', address: 'San Martín 100', license: 'BCRA 123' })
    await t.request('PATCH', '/api/company', { key: b.c.key, body: { receipt_point: 12, legal_name: 'Otra Razón S.A.' } })
    const two = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect([two.body.receipt.number, two.body.receipt.point]).toEqual(['00012-00000001', 12])
    await t.request('PATCH', '/api/company', { key: b.c.key, body: { receipt_point: 1 } })
    const three = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 1, caja_id: b.caja.id })
    expect(three.body.receipt.number).toBe('00001-00000002')
    expect((await t.request('GET', `/api/operations/${one.body.operation.id}/receipt`, { key: b.c.key })).body.company.legal_name).toBe('Cambios Ñandú S.A.')
  })

  test('an operation that is not an exchange has no receipt (404) and no exchange fields', async () => {
    const b = await branch(t)
    const types = (await t.request('GET', '/api/operation-types', { key: b.c.key })).body.data
    const op = await t.request('POST', '/api/operations', {
      key: b.c.key,
      body: { operation_type_id: types[2].id, transactions: [{ account_id: b.account('ARS'), amount: 1 }] },
    })
    expect((await t.request('GET', `/api/operations/${op.body.id}/receipt`, { key: b.c.key })).status).toBe(404)
    const got = await t.request('GET', `/api/operations/${op.body.id}`, { key: b.c.key })
    expect('exchange' in got.body || 'receipt_number' in got.body).toBe(false)
  })

  test('events: operation.created and .cancelled carry the exchange and its receipt number, as GET shows it', async () => {
    const b = await branch(t)
    const made = await post(b.c.key, { side: 'buy', currency: 'USD', amount: 3, caja_id: b.caja.id, customer: { name: 'Evento', document: { type: 'CUIT', number: '20-12345678-3' } } })
    await t.request('POST', `/api/operations/${made.body.operation.id}/cancel`, { key: b.c.key })
    const feed = await t.request('GET', '/api/events?type=operation.created,operation.cancelled,client.created', { key: b.c.key })
    const byType = Object.fromEntries(feed.body.data.filter((e: { data: { object: { id: number } } }) => e.data.object.id === made.body.operation.id || e.data.object.id === made.body.operation.client_id).map((e: { type: string; data: { object: unknown } }) => [e.type, e.data.object]))
    expect(byType['operation.created']).toEqual(made.body.operation)
    const now = await t.request('GET', `/api/operations/${made.body.operation.id}`, { key: b.c.key })
    expect(byType['operation.cancelled']).toEqual(now.body)
    expect(byType['client.created']).toMatchObject({ name: 'Evento', document: { type: 'CUIT', number: '20123456783', country: 'AR' } })
  })
})

describe('GET /api/exchanges', () => {
  test('newest first, paged, filtered by caja, customer and dates', async () => {
    const b = await branch(t)
    const cajaB = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Caja 2', type: 0, accounts: [{ currency_name: 'ARS' }, { currency_name: 'USD' }] } })
    const customer = await t.request('POST', '/api/clients', { key: b.c.key, body: { name: 'Habitual', type: 1 } })
    const made = []
    for (let i = 1; i <= 5; i++)
      made.push((await post(b.c.key, { side: i % 2 ? 'buy' : 'sell', currency: 'USD', amount: i, caja_id: i > 3 ? cajaB.body.id : b.caja.id, ...(i === 2 && { client_id: customer.body.id }) })).body)
    const page = await t.request('GET', '/api/exchanges?page=1&pageSize=2', { key: b.c.key })
    expect(page.body.pagination).toEqual({ page: 1, pageSize: 2, total: 5, totalPages: 3 })
    expect(page.body.data.map((e: { operation_id: number }) => e.operation_id)).toEqual([made[4].operation.id, made[3].operation.id])
    expect(page.body.data[0]).toEqual({
      operation_id: made[4].operation.id,
      status: 'completed',
      ...made[4].exchange,
      client_id: null,
      caja_id: cajaB.body.id,
      receipt_number: '00001-00000005',
      created_at: expect.stringMatching(ISO),
      created_by: null,
    })
    const byCaja = await t.request('GET', `/api/exchanges?caja_id=${cajaB.body.id}`, { key: b.c.key })
    expect(byCaja.body.data.map((e: { amount: number }) => e.amount)).toEqual([5, 4])
    const byClient = await t.request('GET', `/api/exchanges?client_id=${customer.body.id}`, { key: b.c.key })
    expect(byClient.body.data.map((e: { amount: number }) => e.amount)).toEqual([2])
    const today = new Date().toISOString().slice(0, 10)
    expect((await t.request('GET', `/api/exchanges?from=2000-01-01&to=2000-01-02`, { key: b.c.key })).body.data).toEqual([])
    expect((await t.request('GET', `/api/exchanges?from=${new Date(Date.now() - 86_400_000).toISOString()}`, { key: b.c.key })).body.pagination.total).toBe(5)
    expect(today).toMatch(/^\d{4}/)
    expect((await t.request('GET', '/api/exchanges?pageSize=201', { key: b.c.key })).status).toBe(400)
    expect((await t.request('GET', '/api/exchanges?caja_id=abc', { key: b.c.key })).status).toBe(400)
  })
})
